"""One conversation driven three ways, so each rule's test is written once: straight through the
Session, through the real window (offscreen) and through the terminal chat (its line loop on a
thread, fed scripted lines). Each driver opens the conversation, sends, stops (the window's Stop,
the terminal's Ctrl+C), retries and waits until nothing runs; the rules' tests check the store."""

from __future__ import annotations

import argparse
import ctypes
import queue
import threading
import time

from memdesk.app.services import open_services
from memdesk.app.sessions import build_session
from memdesk.core.agent import unanswered
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.session.listener import SessionListener

TIMEOUT_S = 30.0


def wait_until(condition, timeout: float = TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


class Streaming(SessionListener):
    """Notes whether text is being streamed (a turn is generating)."""

    def __init__(self) -> None:
        self.streamed = threading.Event()
        self.opened = threading.Event()
        self.private_started = threading.Event()

    def on_private_started(self, services) -> None:
        self.private_started.set()

    def on_streamed(self, kind: str, text: str) -> None:
        self.streamed.set()

    def on_agent_opened(self, agent_id: int) -> None:
        self.opened.set()


def started_session(services, listener, agent_id: int, *, make_runtime, open_session_services=None):
    """A Session built as the app builds it (no analyser, no embedder warm-up), started, its model
    loaded and ``agent_id`` being opened (``listener`` hears when); closed again if that fails.
    ``open_session_services``: the session's own connection (default: the same home and embedder)."""
    session = build_session(
        services,
        listener,
        make_runtime=make_runtime,
        open_session_services=open_session_services
        or (lambda: open_services(Paths.from_environment(), embedder=services.embedder, clock=services.clock)),
        analyser=None,
        warm_embedder=False,
    )
    try:
        session.start()
        session.load_model(services.settings)
        session.open_agent(agent_id)
    except BaseException:
        session.close()
        raise
    return session


class SessionDriver:
    name = "session"

    def __init__(self, services, make_runtime, agent_id: int) -> None:
        self.services, self.agent_id = services, agent_id
        self.listener = Streaming()
        self.session = started_session(services, self.listener, agent_id, make_runtime=make_runtime)

    def wait_open(self) -> None:
        assert self.listener.opened.wait(TIMEOUT_S)

    def send(self, text: str) -> None:
        self.session.send(text)

    def streaming(self) -> bool:
        return self.listener.streamed.is_set()

    def stop(self) -> None:
        self.session.stop_by_user()

    def retry(self) -> None:
        self.session.retry()

    def wait_idle(self) -> None:
        assert wait_until(self.session.may_run_on_its_own)

    def close(self) -> None:
        self.session.close()


class WindowDriver:
    name = "window"

    def __init__(self, services, make_runtime, agent_id: int, qtbot) -> None:
        from memdesk.ui.window.main_window import MainWindow

        self.services, self.agent_id, self.qtbot = services, agent_id, qtbot
        embedder = services.embedder
        self.window = MainWindow(
            services,
            open_worker_services=lambda: open_services(Paths.from_environment(), embedder=embedder),
            make_runtime=make_runtime,
            warm_embedder=False,
            graph_analyser=None,
        )
        self.window.show()
        self.window.start()

    def wait_open(self) -> None:
        self.qtbot.waitUntil(lambda: self.window.chat.send_button.isEnabled(), timeout=TIMEOUT_S * 1000)

    def send(self, text: str) -> None:
        chat = self.window.chat
        self.qtbot.waitUntil(lambda: chat.send_button.isEnabled(), timeout=TIMEOUT_S * 1000)
        chat.compose.setPlainText(text)
        chat.on_send_clicked()

    def streaming(self) -> bool:
        return "typing" in self.window.chat.transcript.toPlainText() or self.window.state.background

    def stop(self) -> None:
        self.window.chat.stop_button.click()

    def retry(self) -> None:
        from PySide6.QtCore import QUrl

        owed = unanswered.newest(self.services.db, self.services.memory.recall, self.agent_id)
        self.window.chat.transcript.anchorClicked.emit(QUrl(f"retry:{owed.id}"))

    def wait_idle(self) -> None:
        session = self.window.worker.session
        self.qtbot.waitUntil(
            lambda: session.may_run_on_its_own() and not self.window.state.busy, timeout=TIMEOUT_S * 1000
        )

    def close(self) -> None:
        if self.window is not None:
            self.window.close()
            self.window.deleteLater()
            self.window = None


class TerminalDriver:
    """``memdesk chat`` on a thread; lines go to its prompt, Ctrl+C is raised in that thread."""

    name = "terminal"

    def __init__(self, services, make_runtime, agent_id: int, monkeypatch) -> None:
        from memdesk.cli import chat_cmd

        self.services, self.agent_id = services, agent_id
        self._lines: queue.Queue[str] = queue.Queue()
        self._prompting = threading.Event()
        monkeypatch.setattr(chat_cmd, "open_services", lambda: open_services(embedder=HashingEmbedder()))
        monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: make_runtime(settings))
        monkeypatch.setattr(chat_cmd, "graph_analyser", None)
        monkeypatch.setattr("builtins.input", self._input)
        name = services.agents.get(agent_id).name
        args = argparse.Namespace(agent=name, verbose=False, no_login=False)
        self.thread = threading.Thread(target=chat_cmd.run, args=(args,), name="terminal-chat", daemon=True)
        self.thread.start()

    def _input(self, _prompt: str = "") -> str:
        self._prompting.set()
        line = self._lines.get()
        self._prompting.clear()
        return line

    def wait_open(self) -> None:
        assert self._prompting.wait(TIMEOUT_S)

    def send(self, text: str) -> None:
        assert self._prompting.wait(TIMEOUT_S)
        count = self._user_messages()
        self._lines.put(text)
        assert wait_until(lambda: self._user_messages() > count)  # saved once Enter is pressed

    def _user_messages(self) -> int:
        return sum(m.kind == "user_message" for m in self.services.memory.recall.all(self.agent_id))

    def streaming(self) -> bool:
        return bool(self.services.memory.recall.all(self.agent_id)) and not self._prompting.is_set()

    def stop(self) -> None:
        """Ctrl+C while the reply is generated."""
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(self.thread.ident), ctypes.py_object(KeyboardInterrupt)
        )

    def retry(self) -> None:
        assert self._prompting.wait(TIMEOUT_S)
        self._lines.put("/retry")
        # Taken by the prompt: a quick retry is over, and the prompt back, before "not prompting" is seen.
        assert wait_until(self._lines.empty)

    def wait_idle(self) -> None:
        assert wait_until(self._prompting.is_set)

    def close(self) -> None:
        if not self.thread.is_alive():
            return
        self._lines.put("/quit")
        self.thread.join(TIMEOUT_S)
        assert not self.thread.is_alive()
