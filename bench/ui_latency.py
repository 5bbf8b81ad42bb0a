"""How late the Qt event loop services a 10 ms timer while the real default model generates a long
reply and a ~5 MB document is ingested in the background. Prints one JSON object with --json."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="longest measurement")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="memdesk-bench-")
    os.environ["MEMDESK_HOME"] = home

    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.ui.window.main_window import MainWindow

    app = QApplication([])
    paths = Paths.from_environment().ensure()
    services = open_services(paths)
    services.settings_store.set("max_answer_tokens", 1024)
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(paths, embedder=services.embedder),
        make_runtime=make_runtime,
    )
    window.show()
    window.start()
    # ready arrives before the worker's busy flag clears (its model-loading job is still closing),
    # and a message sent while busy is ignored: wait for the send button, as a user would.
    while not (window.state.model_ready and window.chat.send_button.isEnabled()):
        app.processEvents()
        time.sleep(0.01)
    document = Path(home) / "big.txt"
    paragraph = "MemDesk keeps long-term memory for a local model. It stores passages, searches them and cites them. "
    document.write_text((paragraph * 10 + "\n\n") * (5_000_000 // (len(paragraph) * 10 + 2)))
    lateness: list[float] = []
    clock = QElapsedTimer()
    state = {"last": 0.0, "done": False, "streamed": 0}
    timer = QTimer()
    timer.setInterval(10)

    def tick() -> None:
        now = clock.nsecsElapsed() / 1e6
        lateness.append(max(0.0, now - state["last"] - 10.0))
        state["last"] = now

    timer.timeout.connect(tick)
    window.turn_done.connect(lambda: state.update(done=True))
    window.worker.streamed.connect(lambda _k, t: state.update(streamed=state["streamed"] + len(t)))
    window.documents.add_paths([str(document)])
    window.chat.compose.setPlainText(
        "Please write a long, detailed story about a lighthouse keeper, at least 800 words."
    )
    window.chat.on_send_clicked()
    assert not window.chat.compose.toPlainText(), "the message was not sent"
    clock.start()
    timer.start()
    deadline = time.monotonic() + args.seconds
    while not state["done"] and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    rows = window.documents.rows
    lateness.sort()
    result = {
        "samples": len(lateness),
        "p99_late_ms": round(lateness[int(len(lateness) * 0.99) - 1], 2) if lateness else None,
        "max_late_ms": round(lateness[-1], 2) if lateness else None,
        "streamed_chars": state["streamed"],
        "reply_finished": state["done"],
        "document_bytes": document.stat().st_size,
        "passages_embedded_during_run": sum(r.embedded for r in rows),
        "target": {"p99_late_ms": 30, "max_late_ms": 100},
    }
    window.close()
    services.close()
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
