"""Run a runtime in a child process, so a native crash cannot take the app down.

llama.cpp is C++: a failed assert, an exception thrown through ctypes or an out-of-memory kill ends
the whole process, window and all. The GGUF pre-check removes the common cause (bad files), but
not all of them. Here the model lives in a child started with the 'spawn' method (a fresh
interpreter: no forked locks or Qt state), and the parent speaks a small message protocol over a
pipe. The agent saves the user's message before calling the runtime, so nothing is lost.

Life of the child:

* it is spawned by the constructor, which does not wait: the model loads while the caller goes on
  (the window paints); ``info`` and every call wait for it to be ready (``wait_ready``);
* if it dies during a call, that call raises ModelError; if it died between calls (killed while
  idle), the next call notices and starts a new one; either way the next call works. A child
  still dying when a call is sent (until the kernel has torn it down it looks alive and its pipe
  takes the message) never acknowledges that call, so the call goes to a new child once;
* a start that fails (a bad file, a template error) raises its own error and leaves no child
  behind, so the next call tries again rather than writing to a dead pipe;
* a call abandoned by its caller (Ctrl+C, a callback that raised) is cancelled and its leftover
  messages are read before the next call, so no answer is ever taken for another's;
* ``close`` returns within its deadline even if the child hangs: it is killed.

Protocol, parent to child: ("call", method, args, kwargs, wants_events) and ("cancel",).
Child to parent: ("ok", info) once loaded, then for each call ("started",) as soon as it is read,
("event", kind, text) while
generating and ("ok", value) or ("error", class name, message, hint). Cancel requests are read by
the child between tokens.
"""

from __future__ import annotations

import importlib
import multiprocessing
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from memdesk.core.base import errors
from memdesk.core.base.errors import MemDeskError, ModelCrashedError, ModelError
from memdesk.core.base.process_guard import guard_process
from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    ModelTurn,
    RuntimeInfo,
    StreamCallback,
    StreamEvent,
    TextRequest,
)

_POLL_SECONDS = 0.02  # how often the parent looks at the cancel token while waiting
_DRAIN_SECONDS = 30.0  # an abandoned call must stop within this (one prompt batch, usually < 5 s)
CLOSE_SECONDS = 5.0


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
    guard_process()  # it holds the key of the KV states' file, and the prompt's memory
    try:
        _serve(conn, module, factory, args)
    except (EOFError, OSError):  # the parent closed the pipe (close() or its own exit): nobody to tell
        pass


def _serve(conn: Connection, module: str, factory: str, args: tuple[Any, ...]) -> None:
    try:
        runtime = getattr(importlib.import_module(module), factory)(*args)
    except BaseException as error:  # reported to the parent, which raises it
        conn.send(_error_message(error))
        return
    try:
        conn.send(("ok", runtime.info))
        while True:
            try:
                message = conn.recv()
            except EOFError:  # the parent is gone or closed the pipe
                break
            if message[0] != "call":
                continue  # a cancel that arrived after its call finished
            _, method, call_args, kwargs, wants_events = message
            conn.send(("started",))  # lets the parent tell "died before this call" from "died in it"
            if wants_events:
                kwargs["on_event"] = lambda event: conn.send(("event", event.kind, event.text))
            if "cancel" in kwargs:
                kwargs["cancel"] = _PipeCancel(conn)
            reply: tuple[Any, ...]
            try:
                reply = ("ok", getattr(runtime, method)(*call_args, **kwargs))
            except BaseException as error:
                reply = _error_message(error)
            conn.send(reply)
            if method == "close":
                return
    finally:
        runtime.close()  # idempotent: finishes a pending cache file when the pipe just closed


def _error_message(error: BaseException) -> tuple[str, str, str, str | None]:
    if isinstance(error, MemDeskError):
        return ("error", type(error).__name__, error.message, error.hint)
    return ("error", "ModelError", f"The model process failed: {type(error).__name__}: {error}", None)


def _rebuild_error(name: str, message: str, hint: str | None) -> MemDeskError:
    kind = getattr(errors, name, ModelError)
    if not (isinstance(kind, type) and issubclass(kind, MemDeskError)):
        kind = ModelError
    return kind(message, hint=hint)


class _Late(Exception):
    """The child did not answer before a deadline."""


class IsolatedRuntime:
    """A Runtime proxy: ``module.factory(*args)`` is built and run in a child process."""

    def __init__(self, module: str, factory: str, *args: Any, start_timeout: float = 120.0) -> None:
        self._target = (module, factory, args)
        self._start_timeout = start_timeout
        self._lock = threading.Lock()  # one call on the pipe at a time
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        self._ready = False  # the child has loaded the model and sent its info
        self._pending = False  # a call was sent and its answer not yet read
        self._started = False  # the child acknowledged the call in flight
        self._start_deadline = 0.0
        self._closed = False
        self._info: RuntimeInfo | None = None
        self.restarts = -1  # children started after the first
        self._spawn()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def wait_ready(self) -> RuntimeInfo:
        """Wait until the child has loaded the model (raising its error if it could not)."""
        with self._lock:
            return self._ensure_child()

    # --- the child's life -------------------------------------------------------------------------
    def _spawn(self) -> None:
        parent, child = self._context.Pipe()
        module, factory, args = self._target
        process = self._context.Process(
            target=_child_main, args=(child, module, factory, args), daemon=True, name="memdesk-model"
        )
        process.start()
        child.close()
        self._process, self._conn = process, parent
        self._ready = self._pending = False
        self._start_deadline = time.monotonic() + self._start_timeout
        self.restarts += 1

    def _ensure_child(self) -> RuntimeInfo:
        """Under the lock: a child that has loaded the model and has no call in flight."""
        if self._closed:
            raise ModelError("The model runtime is closed")
        if self._pending:
            self._drain()
        # Nothing arrives between calls, so a readable pipe there is the end-of-file of a child that died idle.
        if self._conn is not None and self._ready and (not self._process.is_alive() or self._conn.poll()):
            self._stop()
        if self._conn is None:
            self._spawn()
        if not self._ready:
            try:
                self._info = self._receive(None, None, deadline=self._start_deadline)
            except _Late:
                self._stop()
                raise ModelError("The model process did not start in time") from None
            except BaseException:
                self._stop()  # no dead pipe left behind: the next call starts a new child
                raise
            self._ready = True
        assert self._info is not None
        return self._info

    def _drain(self) -> None:
        """Stop a call whose caller gave up on it, and read the rest of its answer."""
        try:
            assert self._conn is not None
            self._conn.send(("cancel",))
            self._receive(None, None, deadline=time.monotonic() + _DRAIN_SECONDS)
        except MemDeskError:
            pass  # cancelled, or failed on its own: either way it is over
        except (_Late, OSError):
            self._stop()

    def _stop(self, deadline: float | None = None) -> None:
        conn, process = self._conn, self._process
        self._conn = self._process = None
        self._ready = self._pending = False
        if conn is not None:
            conn.close()  # the child reads end-of-file and exits
        if process is not None:
            process.join(timeout=5.0 if deadline is None else max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()  # works on a hung or stopped process too
                process.join(timeout=5.0)

    def _receive(
        self, on_event: StreamCallback | None, cancel: CancelToken | None, *, deadline: float | None = None
    ) -> Any:
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
                    if deadline is not None and time.monotonic() > deadline:
                        raise _Late
                    continue
                message = self._conn.recv()
            except (EOFError, OSError) as error:
                process = self._process
                self._stop()  # joins it, so its exit code is known
                code = process.exitcode if process is not None else None
                raise ModelCrashedError(
                    f"The model process stopped unexpectedly (exit code {code})",
                    hint="Your message is saved; send again to retry. `memdesk doctor` (Help → Diagnostics) tells why.",
                    exit_code=code,
                ) from error
            if message[0] == "started":
                self._started = True
            elif message[0] == "event":
                if on_event is not None:
                    on_event(StreamEvent(message[1], message[2]))  # if this raises, the next call drains
            elif message[0] == "ok":
                self._pending = False
                return message[1]
            else:
                self._pending = False
                raise _rebuild_error(*message[1:])

    def _call(
        self,
        method: str,
        *args: Any,
        on_event: StreamCallback | None = None,
        cancel: CancelToken | None = None,
        **kwargs: Any,
    ) -> Any:
        with self._lock:
            self._ensure_child()
            if cancel is not None:
                kwargs["cancel"] = None  # replaced in the child by a pipe-backed token
            message = ("call", method, args, kwargs, on_event is not None)
            for attempt in (1, 2):
                self._started = False
                try:
                    assert self._conn is not None
                    self._conn.send(message)
                    self._pending = True
                    return self._receive(on_event, cancel)
                except (OSError, ModelCrashedError):
                    # A child killed while idle can still look alive (its threads are exiting) and accept
                    # the send; it never started this call, so the call goes to a new child once.
                    if self._started or attempt == 2:
                        raise
                    self._stop()
                    self._ensure_child()
            raise AssertionError("unreachable")

    # --- Runtime interface ------------------------------------------------------------------------
    @property
    def info(self) -> RuntimeInfo:
        return self._info if self._info is not None else self.wait_ready()

    def count_tokens(self, text: str) -> int:
        return self._call("count_tokens", text)

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return self._call("count_prompt", list(messages))

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        return self._call("generate_call", request, on_event=on_event, cancel=cancel)

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        return self._call("generate_text", request, cancel=cancel)

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        return self._call("warm", list(messages), cancel=cancel)

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop the child, politely if it answers, by force at ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=timeout / 2):
            # Another thread's call holds the pipe (a long generation, a hung child): end the
            # child, which makes that call raise ModelError; it cleans up after itself.
            self._closed = True
            process = self._process
            if process is not None:
                process.kill()
            return
        try:
            self._closed = True
            # An idle child is asked to close (it finishes writing a cache file); any other is
            # just cut off: on end-of-file it closes its runtime and exits, or is killed at the deadline.
            if self._conn is not None and self._ready and not self._pending:
                try:
                    self._conn.send(("call", "close", (), {}, False))
                    self._receive(None, None, deadline=deadline - timeout / 4)
                except (MemDeskError, OSError, _Late):
                    pass
            self._stop(deadline)
        finally:
            self._lock.release()


def isolated_llama(settings: Any) -> IsolatedRuntime:
    """The llama.cpp runtime in its own process (``settings`` is a ``LlamaSettings``); returns at
    once, while the model loads."""
    return IsolatedRuntime("memdesk.core.runtime.llamacpp.runtime", "LlamaCppRuntime", settings)
