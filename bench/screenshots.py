"""The README's screenshots, taken from the real window with the real bundled model under Xvfb.

    python -m bench.screenshots [--out docs] [--json]

A new MEMDESK_HOME (nothing on disk), a 1366×768 screen (the laptop the default layout is made
for), the app's own composition (``memdesk.app``: the model in its child process, the real
embedder, the knowledge graph's spaCy pipeline). The user's name is set and the welcome marked as
seen, and the agent's own background turns (login, timed heartbeats, consolidation) are off so
that each reply pictured is the reply to the message typed. Two messages are sent, each answered
before the next; then:

- ``screenshot.png``: the chat with the context budget and core memory;
- ``screenshot-knowledge.png``: the Knowledge panel on the entity the messages named most;
- ``screenshot-history.png``: Memory history with a change's word diff (the agent's own edit if
  it made one, else the user's edit of the human block, made here as a user would: type, Save);
  for these two the context budget panel is hidden (View menu), so the tabs have the height;
- ``screenshot-models.png``: File > Models.

Nothing is staged: what the model answered is what is pictured, and the printed JSON names the
model, the replies and which change the history shows, for the captions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import emit
from testing import xvfb

MESSAGES = (
    "Hi, I am Ada. I live in Lisbon and I love gardening.",
    "My sister Ann moved to Porto last spring; she teaches music there.",
)
SCREEN = (1366, 768)
MARKER = "BENCH-SCREENSHOTS "
SHOTS = {
    "chat": "screenshot.png",
    "knowledge": "screenshot-knowledge.png",
    "history": "screenshot-history.png",
    "models": "screenshot-models.png",
}
#: How long the knowledge graph may take to show the messages' entities after the last reply.
GRAPH_WAIT_S = 120.0
HUMAN_EDIT = "Ada lives in Lisbon and loves gardening."


def capture(
    out: Path,
    messages: tuple[str, ...] = MESSAGES,
    *,
    make_runtime: Callable | None = None,
    embedder=None,
    graph_wait_s: float = GRAPH_WAIT_S,
    give_up_s: float = 1800.0,
) -> dict:
    """Run the window in this process (a QApplication must exist or is made), drive it, save the
    pictures into ``out`` and return what they show. ``make_runtime``/``embedder``: the app's own
    unless given (tests pass the scripted runtime and the hashing embedder)."""
    from PySide6.QtCore import QObject, QTimer, Slot
    from PySide6.QtWidgets import QApplication

    from memdesk.app.runtimes import make_runtime as app_runtime
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.memory.history import BLOCK
    from memdesk.ui.window.main_window import MainWindow

    app = QApplication.instance() or QApplication([sys.argv[0]])
    out.mkdir(parents=True, exist_ok=True)
    paths = Paths.from_environment().ensure()
    services = open_services(paths, embedder=embedder) if embedder is not None else open_services(paths)
    store = services.settings_store
    for name, value in (
        ("user_name", "Ada"),
        ("welcome_done", True),
        ("login_after_minutes", 0),
        ("heartbeat_minutes", 0),
        ("consolidation", "off"),
    ):
        store.set(name, value)
    shared = services.embedder
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(paths, embedder=shared),
        make_runtime=make_runtime or app_runtime,
    )
    started = time.perf_counter()
    result: dict = {"messages": list(messages), "replies": [], "files": {}}

    class Driver(QObject):
        """Lives in the GUI thread: the worker's signals reach it queued, as the window's do."""

        def __init__(self) -> None:
            super().__init__(window)
            self.pending = list(messages)
            self.graph_since = 0.0
            window.model_ready.connect(self.on_ready)
            window.worker.turn_finished.connect(self.on_turn)
            window.hub.shown.connect(self.on_error)

        @Slot(str)
        def on_ready(self, model: str) -> None:
            result["model"] = model
            QTimer.singleShot(200, self.send)

        @Slot()
        def send(self) -> None:
            if window.state.busy or not window.chat.can_send:  # still opening the agent: as a user, try again
                QTimer.singleShot(200, self.send)
                return
            window.chat.compose.setPlainText(self.pending.pop(0))
            window.chat.on_send_clicked()

        @Slot(object)
        def on_turn(self, turn) -> None:
            if turn is None or turn.kind != "user_message":
                return
            result["replies"].extend(turn.replies)
            if self.pending:
                QTimer.singleShot(500, self.send)
            else:
                self.graph_since = time.perf_counter()
                QTimer.singleShot(500, self.wait_for_graph)

        def settle(self) -> None:
            """The panels read what they show off the GUI thread: wait until it is shown."""
            deadline = time.perf_counter() + 30
            while window.reads.busy and time.perf_counter() < deadline:
                app.processEvents()
                time.sleep(0.01)

        @Slot()
        def wait_for_graph(self) -> None:
            window.knowledge.refresh()
            self.settle()
            entities = window.knowledge.entity_table.rowCount()
            if (entities == 0 or window.state.busy) and time.perf_counter() - self.graph_since < graph_wait_s:
                QTimer.singleShot(1000, self.wait_for_graph)
                return
            result["entities"] = entities
            QTimer.singleShot(300, self.take)

        @Slot()
        def take(self) -> None:
            window.chat.compose.clear()
            window.docks["Core memory"].raise_()
            self.save("chat", window)
            # The tabs get the whole height, as View > Context budget (off) gives a user who reads them.
            window.docks["Context budget"].hide()
            window.docks["Knowledge"].raise_()
            if window.knowledge.entities:
                top = max(window.knowledge.entities, key=lambda e: e.mentions)
                window.knowledge.select_entity(top.id)
                result["knowledge_entity"] = top.name
            self.save("knowledge", window)
            self.show_a_change()
            self.save("history", window)
            window.docks["Context budget"].show()
            window.model_actions.on_models_triggered()
            dialog = window.model_actions.dialog
            dialog.page.refresh()
            app.processEvents()
            self.save("models", dialog)
            dialog.close()
            result["seconds"] = round(time.perf_counter() - started, 1)
            window.close()

        def show_a_change(self) -> None:
            history = services.memory.core.history
            agent_id = window.state.agent_id
            change = next(
                (c for c in history.for_agent(agent_id, kind=BLOCK) if c.source == "agent" and c.action == "update"),
                None,
            )
            if change is None:  # the agent changed no block: the user does, in the block editor
                editor = window.memory.editors["human"]
                editor.editor.setPlainText((editor.editor.toPlainText().rstrip() + "\n" + HUMAN_EDIT).strip())
                editor.save_button.click()
                change = history.latest_for_block(agent_id, "human")
            result["history_change"] = change.describe() if change else None
            window.docks["Memory history"].raise_()
            window.history.refresh()
            self.settle()
            if change is not None:
                window.history.select_change(change.id)

        def save(self, name: str, widget) -> None:
            self.settle()
            app.processEvents()
            path = out / SHOTS[name]
            widget.grab().save(str(path))
            result["files"][name] = str(path)

        @Slot(str)
        def on_error(self, text: str) -> None:
            result.setdefault("errors", []).append(text)

    Driver()
    QTimer.singleShot(
        int(give_up_s * 1000), window, lambda: (result.setdefault("errors", []).append("gave up"), window.close())
    )
    window.show()
    window.start()
    try:
        while window.isVisible():
            app.processEvents()
            time.sleep(0.01)
    finally:
        window.shutdown()
        services.close()
    return result


def _outer(out: Path) -> dict:
    home, env = xvfb.fresh_home("memdesk-screenshots-")
    try:
        report, tail = xvfb.run_inner(
            "bench.screenshots", ["--out", str(out.resolve())], screen=SCREEN, env=env, marker=MARKER, timeout=2400
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return report if report is not None else {"error": tail}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", default="docs", help="folder for the pictures (default: docs)")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        print(MARKER + json.dumps(capture(Path(args.out))), flush=True)
        return 0
    result = _outer(Path(args.out))
    emit(result, args.json, details="files")
    return 0 if "error" not in result and not result.get("errors") else 1


if __name__ == "__main__":
    sys.exit(main())
