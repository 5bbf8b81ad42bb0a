"""The one harness for the real app (testing/real_app.py): what it runs a program in, how it ends one
that overstays, and how it reads a run back. The real window and terminal runs themselves are the
suite's shared runs (tests/conftest.py), checked in tests/ui/test_real_app.py and
tests/test_socket_audit.py."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from memdesk.core.runtime.scripted import ScriptedRuntime, say
from testing.real_app import REPLY_SHOWN, AppRun

ENVIRONMENT = (
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
    "('MEMDESK_HOME', 'HF_HUB_OFFLINE', 'QT_QPA_PLATFORM', 'MEMDESK_SOCKET_AUDIT')}))"
)


def test_a_run_gets_the_apps_home_offline_and_offscreen(real_app):
    app = real_app()
    run = app.run([sys.executable, "-c", ENVIRONMENT])
    assert run.returncode == 0, run.explain()
    seen = json.loads(run.stdout)
    assert seen == {
        "MEMDESK_HOME": str(app.home),
        "HF_HUB_OFFLINE": "1",
        "QT_QPA_PLATFORM": "offscreen",
        "MEMDESK_SOCKET_AUDIT": None,
    }
    assert run.home == app.home
    with pytest.raises(ValueError, match="not audited"):
        _ = run.network_events


def test_an_audited_run_gets_a_users_plain_environment_and_its_own_log(real_app, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as the suite sets it: MemDesk must stay offline without it
    app = real_app(audit=True)
    first, second = app.run([sys.executable, "-c", ENVIRONMENT]), app.run([sys.executable, "-c", "pass"])
    seen = json.loads(first.stdout)
    assert seen["HF_HUB_OFFLINE"] is None and seen["MEMDESK_SOCKET_AUDIT"] == str(first.audit_log)
    assert first.audit_log != second.audit_log and first.network_events == second.network_events == []
    assert len(first.processes) == len(second.processes) == 1


def test_a_run_that_overstays_is_killed_with_what_it_started_and_reported(real_app, tmp_path):
    """Nothing is left behind (the window's model child, Xvfb): the whole process group goes."""
    pid_file = tmp_path / "grandchild.pid"
    program = (
        "import subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        f"open({str(pid_file)!r}, 'w').write(str(child.pid)); print('started', flush=True); time.sleep(120)"
    )
    run = real_app().run([sys.executable, "-c", program], timeout=5)
    assert run.returncode != 0 and "killed by the harness after 5 s" in run.stderr
    assert "started" in run.stdout  # what it printed before the kill is kept
    # The group's SIGKILL was sent; the kernel ends the grandchild a moment later (under load, after
    # the harness has returned): it must be gone within seconds, not two minutes.
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _running(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(grandchild)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"  # a zombie waits only for its reaper


def test_the_reply_read_back_is_the_one_to_the_message_sent_not_an_earlier_one(services, make_agent, memdesk_home):
    runtime = ScriptedRuntime(
        [say("Welcome back!"), say("Hello Ada, nice to meet you."), say("Hello again.")], context_window=32768
    )
    agent = make_agent(runtime=runtime)
    agent.send_user_message("Are you there?")
    agent.send_user_message("Hi, I am Ada.")
    agent.send_user_message("Hi, I am Ada.")  # the same words again: the newest one counts
    services.db.execute("PRAGMA wal_checkpoint")
    run = AppRun(
        ["memdesk"],
        0,
        f"{REPLY_SHOWN}Hello again.\nscreenshot saved x.png\n",
        "",
        memdesk_home,
        1.0,
        sent=["Hi, I am Ada."],
    )
    assert run.reply_in_store("Hi, I am Ada.") == "Hello again." == run.reply_shown
    assert run.reply_in_store("Are you there?") == "Welcome back!"
    assert run.reply_in_store("Never said.") is None
    assert AppRun(["memdesk"], 0, "", "", memdesk_home / "nothing-here", 1.0).reply_in_store("Hi, I am Ada.") is None


def test_the_runs_log_is_read_from_its_home(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "memdesk.log").write_text("INFO memdesk.ui: window shown\n", encoding="utf-8")
    run = AppRun(["memdesk"], 6, "error: the model failed\n", "Traceback ...\n", tmp_path, 2.0)
    assert "window shown" in run.log
    assert all(
        part in run.explain() for part in ("exit code 6", "error: the model failed", "Traceback", "window shown")
    )
