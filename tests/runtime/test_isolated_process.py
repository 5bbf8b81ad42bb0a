"""The model's child process survives what happens to it (issue 12 item 2), shown on a scripted
runtime in the child so the tests are quick; test_isolated.py does the same with the real model."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from memdesk.core.base.errors import ModelError, ModelFileError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import CallRequest, ChatMessage, sampling
from memdesk.core.runtime.isolated import IsolatedRuntime

#: Every test here starts and kills real child processes.
pytestmark = pytest.mark.processes

CHILD = "tests.runtime.child_runtimes"


def ask(runtime: IsolatedRuntime, text: str, **kwargs) -> str:
    turn = runtime.generate_call(CallRequest([ChatMessage("user", text)], [], sampling(Settings())), **kwargs)
    return turn.text


def said(text: str) -> str:
    return f'"message": "{text}"'


def wait_dead(pid: int) -> None:
    """Until the process has exited (a zombie or gone): a kill is not instant."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(") ")[1].startswith("Z"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} is still running")


@pytest.fixture
def echo():
    runtime = IsolatedRuntime(CHILD, "EchoRuntime", 0.01)
    yield runtime
    runtime.close()


def test_a_child_killed_while_idle_is_restarted_by_the_next_call(echo):
    assert said("one") in ask(echo, "one")
    pid = echo.pid
    os.kill(pid, signal.SIGKILL)
    wait_dead(pid)
    assert said("two") in ask(echo, "two")  # was BrokenPipeError on every later call
    assert echo.pid != pid and echo.restarts == 1


def test_a_child_still_dying_when_the_call_is_sent_is_replaced_and_the_call_answered(echo):
    # A kill is not instant: until the kernel has torn the child down, it looks alive and its pipe
    # takes the call. A stopped child that is then killed is that moment, made to last.
    assert said("one") in ask(echo, "one")
    pid = echo.pid
    os.kill(pid, signal.SIGSTOP)
    threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
    assert said("two") in ask(echo, "two")  # was ModelCrashedError: the call it never read
    assert echo.pid != pid and echo.restarts == 1


def test_a_child_killed_while_generating_fails_that_call_only(echo):
    killed = []

    def kill_once(event):
        if not killed:
            killed.append(echo.pid)
            os.kill(echo.pid, signal.SIGKILL)

    with pytest.raises(ModelError, match="stopped unexpectedly"):
        ask(echo, "a long answer " * 20, on_event=kill_once)
    assert said("next") in ask(echo, "next")
    assert echo.pid != killed[0]


def test_a_failed_restart_raises_its_own_error_and_the_one_after_can_succeed(tmp_path):
    broken = tmp_path / "broken"
    runtime = IsolatedRuntime(CHILD, "EchoRuntime", 0.0, str(broken))
    try:
        assert said("one") in ask(runtime, "one")
        os.kill(runtime.pid, signal.SIGKILL)
        wait_dead(runtime.pid)
        broken.touch()  # the model file went bad meanwhile
        for _ in range(2):  # each attempt says why, none writes to a dead pipe
            with pytest.raises(ModelFileError, match="damaged"):
                ask(runtime, "two")
        broken.unlink()
        assert said("three") in ask(runtime, "three")
    finally:
        runtime.close()


def test_a_start_that_fails_leaves_no_dead_pipe(tmp_path):
    broken = tmp_path / "broken"
    broken.touch()
    runtime = IsolatedRuntime(CHILD, "EchoRuntime", 0.0, str(broken))
    try:
        for _ in range(2):
            with pytest.raises(ModelFileError, match="damaged"):
                runtime.wait_ready()
        broken.unlink()
        assert said("fixed") in ask(runtime, "fixed")
    finally:
        runtime.close()


def test_the_constructor_does_not_wait_for_the_model_to_load(tmp_path):
    loaded = tmp_path / "loaded"
    runtime = IsolatedRuntime(CHILD, "EchoRuntime", 0.0, None, str(loaded))  # the child waits for this file
    try:
        assert runtime.pid is not None  # the child is running, loading, while we go on
        loaded.touch()
        assert runtime.info.model_id == "scripted"
        assert said("hi") in ask(runtime, "hi")
    finally:
        runtime.close()


def test_an_abandoned_call_never_answers_the_next_one(echo):
    def give_up(event):
        raise KeyboardInterrupt  # Ctrl+C in the terminal, while the child keeps generating

    with pytest.raises(KeyboardInterrupt):
        ask(echo, "first " * 30, on_event=give_up)
    assert said("second") in ask(echo, "second")
    assert echo.restarts == 0  # cancelled and drained, not killed


def closes_within(runtime: IsolatedRuntime, timeout: float) -> float:
    """Seconds ``close`` took; fails if it never returns."""
    took = []
    closer = threading.Thread(
        target=lambda: (started := time.monotonic(), runtime.close(timeout), took.append(time.monotonic() - started))
    )
    closer.start()
    closer.join(timeout + 60)
    assert took, "close() did not return"
    return took[0]


def test_close_kills_a_hung_child(echo):
    assert said("one") in ask(echo, "one")
    pid = echo.pid
    os.kill(pid, signal.SIGSTOP)  # hung: it will never answer "close"
    try:
        took = closes_within(echo, 2.0)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert took < 2.0 + 5.0  # the deadline, plus a kill and its reaping
    wait_dead(pid)
    with pytest.raises(ModelError, match="closed"):
        ask(echo, "after")


def test_close_during_a_call_in_another_thread_ends_that_call(echo):
    streaming = threading.Event()
    errors = []

    def generate():
        try:
            ask(echo, "word " * 2000, on_event=lambda event: streaming.set())
        except ModelError as error:
            errors.append(error)

    caller = threading.Thread(target=generate)
    caller.start()
    assert streaming.wait(30)
    os.kill(echo.pid, signal.SIGSTOP)  # and it hangs mid-answer
    closes_within(echo, 2.0)
    caller.join(30)
    assert not caller.is_alive() and errors
