"""The window on the real default model (llama.cpp, SmolLM2) and the real app under Xvfb."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from desktop.app import make_runtime
from desktop.settings import Settings

pytestmark = pytest.mark.model


def test_full_conversation_on_the_real_model(make_window, send):
    window = make_window(make_runtime(Settings(context_size=4096, max_chained_steps=3, max_answer_tokens=160)))
    send(window, "Hello! My name is Ada. Please greet me.", timeout=300_000)
    entries = window.chat.transcript.entries
    assert entries[0].kind == "user"
    assert any(e.kind in ("agent", "call") for e in entries[1:])  # the model answered with a function call
    assert window.budget.budget is not None and window.budget.budget.window == 4096


def test_real_app_under_xvfb_sends_a_message_and_saves_a_screenshot(tmp_path):
    xvfb_run = shutil.which("xvfb-run")
    assert xvfb_run, "xvfb-run is missing: install the Debian package xvfb (make test does)"
    shot = tmp_path / "window.png"
    env = {**os.environ, "MEMDESK_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    env.pop("QT_QPA_PLATFORM", None)  # a real X server this time
    result = subprocess.run(
        [xvfb_run, "-a", "-s", "-screen 0 1400x900x24", sys.executable, "-m", "desktop.ui.main", "--screenshot", str(shot),
         "--message", "Hi, I am Ada."],
        env=env, capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 10_000
    assert "reply shown: " in result.stdout  # the reply to the message sent, not a preempted login turn
