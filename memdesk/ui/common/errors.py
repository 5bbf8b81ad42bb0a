"""One path for every error a user may see, from any thread, plus crash capture.

Expected failures (``MemDeskError``) show their ``user_message``; anything else is a bug: it is
logged with its traceback and the user sees a generic message pointing at the log.
"""

from __future__ import annotations

import faulthandler
import functools
import inspect
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QWidget

from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.log_privacy import traceback_without_messages
from memdesk.ui.common import palette
from memdesk.ui.common.text import plain_label

log = logging.getLogger("memdesk.ui")

CRASH_LOG = "crash.log"
PREVIOUS_CRASH_LOG = "crash-previous.log"


Method = TypeVar("Method", bound=Callable[..., Any])


def reports_errors(method: Method) -> Method:
    """For every slot (and every action a user triggers): a failure takes the one error path
    instead of escaping into Qt's event loop, where it reaches sys.excepthook, is written to the
    crash log and makes the next start say MemDesk did not close cleanly.

    The error goes to the owner's ErrorHub (``self.hub``), else its ``failed`` signal, else the
    hub of the nearest parent that has one. Put it under ``@Slot``. Signal arguments beyond what the
    method takes are dropped, as Qt does for a plain slot (PySide passes them all to a wrapper)."""
    parameters = list(inspect.signature(method).parameters.values())[1:]
    takes_all = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)

    @functools.wraps(method)
    def slot(self, *args, **kwargs):
        try:
            return method(self, *(args if takes_all else args[:positional]), **kwargs)
        except Exception as error:  # noqa: BLE001 - this is the error path
            report_error(self, error)
            return None

    slot.reports_errors = True  # type: ignore[attr-defined]
    return slot  # type: ignore[return-value]


def report_error(owner: Any, error: BaseException) -> None:
    """Send ``error`` where ``owner`` reports errors (see reports_errors)."""
    hub = getattr(owner, "hub", None)
    if isinstance(hub, ErrorHub):
        hub.report(error)
        return
    failed = getattr(owner, "failed", None)
    if failed is not None and hasattr(failed, "emit"):
        failed.emit(error)
        return
    parent = owner.parent() if isinstance(owner, QObject) else None
    while parent is not None:
        hub = getattr(parent, "hub", None)
        if isinstance(hub, ErrorHub):
            hub.report(error)
            return
        parent = parent.parent()
    log.error(
        "unexpected error in %s with no window to show it",
        type(owner).__name__,
        exc_info=(type(error), error, error.__traceback__),
    )


def user_text(error: BaseException) -> str:
    if isinstance(error, MemDeskError):
        return error.user_message
    return f"Something went wrong inside MemDesk ({type(error).__name__}). Details were written to the log."


class ErrorHub(QObject):
    """Collects errors from every thread. Create in the GUI thread.

    Signals:
        shown(str): a message for the message bar
    """

    shown = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.messages: list[str] = []  # what the user was shown (tests read it)

    @Slot(object)
    def report(self, error: BaseException) -> None:
        if not isinstance(error, MemDeskError):
            log.error("unexpected error", exc_info=(type(error), error, error.__traceback__))
        self.notify(user_text(error))

    @Slot(str)
    def notify(self, text: str) -> None:
        self.messages.append(text)
        self.shown.emit(text)


class MessageBar(QFrame):
    """A non-modal bar above the conversation showing the latest message; never blocks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.setStyleSheet(
            f"#messageBar {{ background: {palette.tint(palette.YELLOW)}; border: 1px solid {palette.YELLOW};"
            " border-radius: 4px; }"
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        self.label = plain_label()  # errors quote names from the store and imported files
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action = QPushButton()
        self.action.hide()
        self.close_button = QPushButton("✕")
        self.close_button.setFlat(True)
        self.close_button.setFixedWidth(28)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action)
        layout.addWidget(self.close_button)
        self._action_callback = None
        self.close_button.clicked.connect(self.on_close_clicked)
        self.action.clicked.connect(self.on_action_clicked)
        self.hide()

    @Slot(str)
    def show_message(self, text: str, action: str | None = None, callback=None) -> None:
        self.label.setText(text)
        self._action_callback = callback
        self.action.setVisible(bool(action))
        self.action.setText(action or "")
        self.show()

    @Slot()
    @reports_errors
    def on_close_clicked(self) -> None:
        self.hide()

    @Slot()
    @reports_errors
    def on_action_clicked(self) -> None:
        if self._action_callback is not None:
            self._action_callback()
        self.hide()


class CrashCapture:
    """sys.excepthook, threading.excepthook and faulthandler, all writing to ``logs/crash.log``.

    A crash log left by the previous run is moved aside so the window can offer it."""

    def __init__(self, logs: Path, hub: ErrorHub | None = None) -> None:
        self.logs = logs
        self.hub = hub
        self.previous: Path | None = None
        self._file: TextIO | None = None
        self._old_hooks: tuple[Any, Any] | None = None

    def install(self) -> CrashCapture:
        self.logs.mkdir(parents=True, exist_ok=True)
        current = self.logs / CRASH_LOG
        if current.exists() and current.stat().st_size > 0:
            self.previous = self.logs / PREVIOUS_CRASH_LOG
            current.replace(self.previous)
        # Left open for the whole run: faulthandler writes to it when the process crashes.
        self._file = crash_file = open(current, "w", encoding="utf-8")  # noqa: SIM115
        faulthandler.enable(crash_file)
        self._old_hooks = (sys.excepthook, threading.excepthook)
        sys.excepthook = self._excepthook
        threading.excepthook = self._thread_excepthook
        return self

    def uninstall(self) -> None:
        if self._old_hooks is not None:
            sys.excepthook, threading.excepthook = self._old_hooks
            self._old_hooks = None
        if self._file is not None:
            faulthandler.disable()
            self._file.close()
            path = Path(self._file.name)
            self._file = None
            if path.exists() and path.stat().st_size == 0:
                path.unlink()

    def _record(self, kind, error, trace, where: str) -> None:
        # The crash log outlives the conversation beside a store that may be encrypted: frames, no message.
        text = traceback_without_messages(error, trace) if isinstance(error, BaseException) else f"{kind}\n"
        log.error("uncaught exception in %s\n%s", where, text)
        if self._file is not None:
            self._file.write(f"--- uncaught exception in {where}\n{text}\n")
            self._file.flush()
        if self.hub is not None and isinstance(error, BaseException):
            # The hub's signal is queued to the GUI thread when this runs elsewhere.
            self.hub.notify(user_text(error))

    def _excepthook(self, kind, error, trace) -> None:
        self._record(kind, error, trace, "the main thread")

    def _thread_excepthook(self, args) -> None:
        self._record(
            args.exc_type, args.exc_value, args.exc_traceback, f"thread {args.thread.name if args.thread else '?'}"
        )
