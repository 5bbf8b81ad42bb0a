"""Run a runtime in a child process, so a native crash cannot take the app down.

llama.cpp is C++: a failed assert, an exception thrown through ctypes or an out-of-memory kill ends
the whole process, window and all. The GGUF pre-check removes the common cause (bad files), but
not all of them. Here the model lives in a child started with the 'spawn' method (a fresh
interpreter: no forked locks or Qt state), and the parent speaks a small message protocol over a
pipe. If the child dies, the call in progress raises ModelError, and the next call starts a new
child. The agent saves the user's message before calling the runtime, so nothing is lost.

Protocol, parent to child: ("call", method, args, kwargs, wants_events) and ("cancel",).
Child to parent: ("event", kind, text) while generating, then ("ok", value) or
("error", class name, message, hint). Cancel requests are read by the child between tokens.
"""

from __future__ import annotations

import importlib
import multiprocessing
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from desktop import errors
from desktop.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    ModelTurn,
    RuntimeInfo,
    StreamCallback,
    StreamEvent,
    TextRequest,
)
from desktop.errors import MemDeskError, ModelCrashedError, ModelError

_POLL_SECONDS = 0.02  # how often the parent looks at the cancel token while waiting


class _PipeCancel(CancelToken):
    """The child's view of the parent's cancel token: a ("cancel",) message on the pipe."""

    def __init__(self, conn: Connection) -> None:
        super().__init__()
        self._conn = conn

    @property
    def cancelled(self) -> bool:
        while not self._event.is_set() and self._conn.poll():
            if self._conn.recv()[0] == "cancel":
                self._event.set()
        return self._event.is_set()


def _child_main(conn: Connection, module: str, factory: str, args: tuple[Any, ...]) -> None:
    try:
        runtime = getattr(importlib.import_module(module), factory)(*args)
    except BaseException as error:  # reported to the parent, which raises it
        conn.send(_error_message(error))
        return
    conn.send(("ok", runtime.info))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            break
        if message[0] != "call":
            continue  # a cancel that arrived after its call finished
        _, method, call_args, kwargs, wants_events = message
        if wants_events:
            kwargs["on_event"] = lambda event: conn.send(("event", event.kind, event.text))
        if "cancel" in kwargs:
            kwargs["cancel"] = _PipeCancel(conn)
        try:
            conn.send(("ok", getattr(runtime, method)(*call_args, **kwargs)))
        except BaseException as error:
            conn.send(_error_message(error))
        if method == "close":
            break


def _error_message(error: BaseException) -> tuple[str, str, str, str | None]:
    if isinstance(error, MemDeskError):
        return ("error", type(error).__name__, error.message, error.hint)
    return ("error", "ModelError", f"The model process failed: {type(error).__name__}: {error}", None)


def _rebuild_error(name: str, message: str, hint: str | None) -> MemDeskError:
    kind = getattr(errors, name, ModelError)
    if not (isinstance(kind, type) and issubclass(kind, MemDeskError)):
        kind = ModelError
    return kind(message, hint=hint)


class IsolatedRuntime:
    """A Runtime proxy: ``module.factory(*args)`` is built and run in a child process."""

    def __init__(self, module: str, factory: str, *args: Any, start_timeout: float = 120.0) -> None:
        self._target = (module, factory, args)
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        self.restarts = -1  # children started after the first
        self._info = self._start()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _start(self) -> RuntimeInfo:
        parent, child = self._context.Pipe()
        module, factory, args = self._target
        process = self._context.Process(target=_child_main, args=(child, module, factory, args), daemon=True, name="memdesk-model")
        process.start()
        child.close()
        self._process, self._conn = process, parent
        self.restarts += 1
        if not parent.poll(self._start_timeout):
            self._stop()
            raise ModelError("The model process did not start in time")
        reply = self._receive(None, None)
        return reply

    def _stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._process is not None:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout=5)
        self._process = self._conn = None

    def _receive(self, on_event: StreamCallback | None, cancel: CancelToken | None) -> Any:
        assert self._conn is not None
        sent_cancel = False
        while True:
            try:
                if not self._conn.poll(_POLL_SECONDS):
                    if cancel is not None and cancel.cancelled and not sent_cancel:
                        self._conn.send(("cancel",))
                        sent_cancel = True
                    if not self._process.is_alive() and not self._conn.poll():
                        raise EOFError
                    continue
                message = self._conn.recv()
            except (EOFError, OSError) as error:
                if self._process is not None:
                    self._process.join(timeout=5)  # the pipe closes before the exit code is known
                code = self._process.exitcode if self._process is not None else None
                self._stop()
                raise ModelCrashedError(
                    f"The model process stopped unexpectedly (exit code {code})",
                    hint="Your message is saved; send again to retry. `memdesk doctor` (Help → Diagnostics) tells why.",
                    exit_code=code,
                ) from error
            if message[0] == "event":
                if on_event is not None:
                    on_event(StreamEvent(message[1], message[2]))
            elif message[0] == "ok":
                return message[1]
            else:
                raise _rebuild_error(*message[1:])

    def _call(self, method: str, *args: Any, on_event: StreamCallback | None = None, cancel: CancelToken | None = None, **kwargs: Any) -> Any:
        with self._lock:
            if self._conn is None:
                self._info = self._start()
            if cancel is not None:
                kwargs["cancel"] = None  # replaced in the child by a pipe-backed token
            assert self._conn is not None
            self._conn.send(("call", method, args, kwargs, on_event is not None))
            return self._receive(on_event, cancel)

    # --- Runtime interface ------------------------------------------------------------------------
    @property
    def info(self) -> RuntimeInfo:
        return self._info

    def count_tokens(self, text: str) -> int:
        return self._call("count_tokens", text)

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return self._call("count_prompt", list(messages))

    def generate_call(self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None) -> ModelTurn:
        return self._call("generate_call", request, on_event=on_event, cancel=cancel)

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        return self._call("generate_text", request, cancel=cancel)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.send(("call", "close", (), {}, False))
                    self._receive(None, None)
                except (MemDeskError, OSError):
                    pass
                self._stop()


def isolated_llama(settings: Any) -> IsolatedRuntime:
    """The llama.cpp runtime in its own process (``settings`` is a ``LlamaSettings``)."""
    return IsolatedRuntime("desktop.core.runtime.llamacpp", "LlamaCppRuntime", settings)
