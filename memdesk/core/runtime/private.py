"""The view a private chat has of the shared runtime: every request asks that nothing of its prompt
be kept on disk, and the runtime itself is left alone.

The window's runtime serves the saved conversation too, so it cannot be configured without a disk
cache for a private chat: each request says so instead (``CallRequest.persist``). States the disk
holds already (the instructions' and tools' beginning) are still read, which costs nothing private.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    ModelTurn,
    Runtime,
    RuntimeInfo,
    StreamCallback,
    TextRequest,
)


class PrivateRuntime:
    def __init__(self, runtime: Runtime) -> None:
        self.inner = runtime

    @property
    def info(self) -> RuntimeInfo:
        return self.inner.info

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return self.inner.count_prompt(messages)

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        return self.inner.generate_call(replace(request, persist=False), on_event=on_event, cancel=cancel)

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        return self.inner.generate_text(replace(request, persist=False), cancel=cancel)

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        # Warming exists to keep a prefix's state, on disk too: a private prompt has nothing to keep.
        return 0

    def close(self) -> None:
        """The runtime belongs to whoever made it (the window, the terminal chat): ending the
        private chat must not stop the model."""
