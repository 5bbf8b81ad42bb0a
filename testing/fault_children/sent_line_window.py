"""The sent_line_kill_window child: the real window (offscreen, scripted runtime) while a login turn
or a timed heartbeat holds the model for HOLD seconds; a line arriving on stdin is typed into the
compose box and sent there. Prints ``@busy``, ``@read`` (Send pressed) and ``Got it.`` (answered).
``python -m testing.fault_children.sent_line_window KIND HOLD`` (KIND: login, heartbeat)"""

from __future__ import annotations

import sys
import threading
import time

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.ui.window.main_window import MainWindow


class _Lines(QObject):
    line = Signal(str)


def main(kind: str, hold: float) -> None:
    app = QApplication([])
    embedder = HashingEmbedder()
    services = open_services(Paths.from_environment(), embedder=embedder)
    services.settings_store.set("login_after_minutes", 60 if kind == "login" else 0)
    services.settings_store.set("graph_model_facts", False)  # the script's answers are the turns'

    def held(_messages):
        print("\n@busy", flush=True)
        time.sleep(hold)
        return say("Welcome back!" if kind == "login" else "Still here.")

    runtime = ScriptedRuntime([held, say("Got it.")], context_window=32768)
    window = MainWindow(
        services,
        open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
        make_runtime=lambda _settings: runtime,
        warm_embedder=False,
    )
    lines = _Lines()

    def type_and_send(text):
        if not (window.chat.can_send and window.chat.send_button.isEnabled()):
            QTimer.singleShot(20, lambda: type_and_send(text))  # the worker may still be opening the agent
            return
        window.chat.compose.setPlainText(text.rstrip("\n"))
        print("\n@read", flush=True)  # Send is pressed: the message is accepted from here on
        window.chat.on_send_clicked()

    lines.line.connect(type_and_send)
    threading.Thread(
        target=lambda: [lines.line.emit(line) for line in iter(sys.stdin.readline, "")], daemon=True
    ).start()

    def answered():
        if "Got it." in window.chat.transcript.toPlainText():
            print("\nGot it.", flush=True)
        else:
            QTimer.singleShot(50, answered)

    def ready(_model):
        if kind == "heartbeat":
            window.worker.heartbeat()  # as the idle timer does
        answered()

    window.model_ready.connect(ready)
    window.show()
    window.start()
    app.exec()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
