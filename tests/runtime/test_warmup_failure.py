"""A warm-up that fails is a background nicety gone wrong, nothing more: the reason is logged as
the user would read it and the thread ends quietly (the first real call meets the same problem)."""

from __future__ import annotations

import logging
import threading

from memdesk.core.base.errors import ModelFileError
from memdesk.core.runtime.base import ChatMessage
from memdesk.core.runtime.warmup import Warmup


class BrokenModel:
    """A runtime whose model file went bad after it was chosen."""

    def warm(self, messages, *, cancel=None) -> int:
        raise ModelFileError("model.gguf is truncated", hint="download it again")


def test_a_failed_warm_up_logs_the_users_message_and_raises_nothing(caplog):
    unhandled = []
    previous, threading.excepthook = threading.excepthook, unhandled.append
    try:
        warmup = Warmup()
        with caplog.at_level(logging.INFO, logger="memdesk.core.runtime.warmup"):
            warmup.start(BrokenModel(), [ChatMessage("system", "You are Sam.")])
            warmup.stop()
    finally:
        threading.excepthook = previous
    assert unhandled == []
    assert "warm-up failed: model.gguf is truncated (download it again)" in caplog.messages
    assert not warmup.finished.is_set()
