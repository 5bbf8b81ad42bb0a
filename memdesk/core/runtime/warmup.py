"""Warm a runtime in the background, and get out of the way the moment real work needs it.

A fresh install has no KV state on disk, so the first reply would pay for evaluating the whole
static prompt (instructions and tools: 15-20 s on a slow 2-core machine). ``Warmup`` runs
``Runtime.warm`` in a thread as soon as a model and an agent are chosen, while the user reads the
window or types. Anything that needs the runtime calls ``stop`` first: the warm-up is cancelled
and has given way within one prompt batch; what it evaluated stays in the KV cache, so a later
``resume`` (or the user's message itself) continues from there. ``resume`` is free once the
warm-up finished, so callers may call it after every job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from memdesk.core.base.errors import GenerationCancelled, MemDeskError
from memdesk.core.runtime.base import CancelToken, ChatMessage, Runtime

log = logging.getLogger(__name__)

_Prefixes = tuple[tuple[ChatMessage, ...], ...]


class Warmup:
    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._cancel = CancelToken()
        self._target: tuple[Runtime, _Prefixes] | None = None  # what to warm
        self._done: tuple[Runtime, _Prefixes] | None = None  # the last warm-up that finished
        self.finished = threading.Event()  # set when a warm-up completes (for tests and benchmarks)
        self.last_tokens = 0  # tokens the last completed warm-up evaluated
        self.last_seconds = 0.0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, runtime: Runtime, messages: Sequence[ChatMessage], *longer: Sequence[ChatMessage]) -> None:
        """Warm ``runtime`` for prompts starting with ``messages``, in the background."""
        self.want(runtime, messages, *longer)
        self.resume()

    def want(self, runtime: Runtime, messages: Sequence[ChatMessage], *longer: Sequence[ChatMessage]) -> None:
        """Make this the warm-up to run at the next ``resume`` (replacing any other). ``longer``
        prefixes (each extending the one before) are warmed after ``messages``, each kept on
        disk by the runtime: the static prefix's state stays reusable when what follows it
        changes (the memory section after an edit)."""
        self.stop()
        self._target = (runtime, tuple(tuple(prefix) for prefix in (messages, *longer)))

    def resume(self) -> None:
        """Run the wanted warm-up unless it is running or finished already (cheap to call often)."""
        target = self._target
        if target is None or self.running or self._finished(target):
            return
        self.finished.clear()
        self._cancel = cancel = CancelToken()
        self._thread = threading.Thread(target=self._run, args=(target, cancel), name="memdesk-warmup", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Cancel a running warm-up and wait until it has let go of the runtime (one batch at most)."""
        self._cancel.cancel()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def forget(self) -> None:
        """Stop, and drop what was wanted and warmed (the runtime is being closed)."""
        self.stop()
        self._target = self._done = None

    def _finished(self, target: tuple[Runtime, _Prefixes]) -> bool:
        return self._done is not None and self._done[0] is target[0] and self._done[1] == target[1]

    def _run(self, target: tuple[Runtime, _Prefixes], cancel: CancelToken) -> None:
        runtime, prefixes = target
        started = time.perf_counter()
        try:
            tokens = sum(runtime.warm(prefix, cancel=cancel) for prefix in prefixes)
        except GenerationCancelled:
            return
        except MemDeskError as error:  # the first real call will meet (and report) the same problem
            log.info("warm-up failed: %s", error.user_message)
            return
        except Exception:  # never let a background nicety take the app down
            log.exception("warm-up failed")
            return
        self.last_tokens, self.last_seconds = tokens, time.perf_counter() - started
        self._done = target
        self.finished.set()
        log.info("warmed %s prompt tokens in %.1f s", tokens, self.last_seconds)
