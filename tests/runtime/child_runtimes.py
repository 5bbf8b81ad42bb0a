"""Test runtimes: ones built by name in a spawned child (so they live in a module), and a slow warm-up."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from memdesk.core.base.errors import GenerationCancelled, ModelFileError
from memdesk.core.runtime.base import CallRequest, CancelToken, ChatMessage, ModelTurn, StreamCallback
from memdesk.core.runtime.scripted import ScriptedRuntime, say


class EchoRuntime(ScriptedRuntime):
    """Answers every call by saying the last message back, streamed slowly like a real model.

    ``broken_if``: the start fails with a ModelFileError while that file exists (a model file that
    went bad). ``start_when``: the start waits until that file exists (a slow model load)."""

    def __init__(self, delay: float = 0.0, broken_if: str | None = None, start_when: str | None = None) -> None:
        if broken_if is not None and Path(broken_if).exists():
            raise ModelFileError(f"Model file {broken_if} is damaged", hint="Choose another model.")
        while start_when is not None and not Path(start_when).exists():
            time.sleep(0.01)
        super().__init__(context_window=4096)
        self._delay = delay

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        self.enqueue(say(request.messages[-1].content))

        def slow(event):
            time.sleep(self._delay)
            if on_event is not None:
                on_event(event)

        return super().generate_call(request, on_event=slow, cancel=cancel)


class SlowWarmRuntime(ScriptedRuntime):
    """Its warm-up takes ``warm_seconds`` (a big prompt on a slow CPU) and looks at the cancel token
    every 10 ms (its batches); ``warm_outcomes`` records how each warm-up ended."""

    def __init__(self, *args, warm_seconds: float = 60.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.warm_started = threading.Event()
        self.warm_outcomes: list[str] = []
        self._warm_seconds = warm_seconds

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        self.warmed.append(list(messages))
        self.warm_started.set()
        deadline = time.monotonic() + self._warm_seconds
        while time.monotonic() < deadline:
            if cancel is not None and cancel.cancelled:
                self.warm_outcomes.append("cancelled")
                raise GenerationCancelled("Generation stopped")
            time.sleep(0.01)
        self.warm_outcomes.append("done")
        return 100


class GuardProbeRuntime(ScriptedRuntime):
    """Answers with what the model's process keeps to itself: whether it is dumpable (prctl) and
    its core file limit, read with nothing of MemDesk."""

    def generate_text(self, request, *, cancel=None) -> str:
        import ctypes
        import resource

        dumpable = ctypes.CDLL(None, use_errno=True).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        return f"dumpable={dumpable} core={resource.getrlimit(resource.RLIMIT_CORE)[0]}"
