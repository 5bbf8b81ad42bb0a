"""The window on the real default model (llama.cpp, SmolLM2) and the real app under Xvfb."""

from __future__ import annotations

import pytest

from memdesk.app.runtimes import make_runtime
from memdesk.core.base.settings_table import Settings

pytestmark = pytest.mark.model


def test_full_conversation_on_the_real_model(make_window, send):
    window = make_window(make_runtime(Settings(context_size=4096, max_chained_steps=3, max_answer_tokens=160)))
    send(window, "Hello! My name is Ada. Please greet me.", timeout=300_000)
    entries = window.chat.transcript.entries
    assert entries[0].kind == "user"
    assert any(e.kind in ("agent", "call") for e in entries[1:])  # the model answered with a function call
    assert window.budget.budget is not None and window.budget.budget.window == 4096


def test_real_app_under_xvfb_answers_the_message_it_sent_and_saves_a_screenshot(real_window_run):
    run = real_window_run  # the real app in a fresh home under Xvfb (tests/conftest.py, testing/real_app.py)
    assert run.returncode == 0, run.explain()
    assert run.screenshot.exists() and run.screenshot.stat().st_size > 10_000
    # The reply shown is the one saved for the message sent, not a login turn the message preempted.
    reply = run.reply_in_store(run.sent[0])
    assert reply is not None and run.reply_shown == reply.split("\n")[0], run.explain()
