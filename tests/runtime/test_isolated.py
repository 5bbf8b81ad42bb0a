"""The model in a child process: same behaviour, and a crash becomes a ModelError, not an exit."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from memdesk.core.base.errors import GenerationCancelled, ModelError, ModelFileError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import CallRequest, CancelToken, Runtime, sampling
from memdesk.core.runtime.isolated import isolated_llama
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from tests.runtime.conftest import HEARTBEAT_TOOLS, TOOLS, conversation
from tests.runtime.test_grammar import check_call
from tests.runtime.test_isolated_process import wait_dead
from tests.runtime.test_llamacpp import untemplated_copy

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def isolated(model_path):
    runtime = isolated_llama(LlamaSettings.from_settings(Settings(context_size=2048, threads=1), model_path))
    yield runtime
    runtime.close()


def test_generates_and_streams_through_the_pipe(isolated, llama):
    assert isinstance(isolated, Runtime)
    assert isolated.info.context_window == 2048 and isolated.info.exact_tokens
    messages = conversation("Hi, I'm Ann.")
    assert isolated.count_prompt(messages) == llama.count_prompt(messages)
    events = []
    turn = isolated.generate_call(
        CallRequest(messages, TOOLS, sampling(Settings(seed=1, max_answer_tokens=300)), HEARTBEAT_TOOLS),
        on_event=events.append,
    )
    check_call(turn.text, TOOLS, HEARTBEAT_TOOLS)
    assert len(events) > 3


def test_cancel_crosses_the_process_boundary(isolated):
    cancel = CancelToken()
    with pytest.raises(GenerationCancelled):
        isolated.generate_call(
            CallRequest(
                conversation("Write a long poem."), TOOLS[:1], sampling(Settings(seed=2, max_answer_tokens=1000))
            ),
            on_event=lambda e: cancel.cancel(),
            cancel=cancel,
        )
    check_call(
        isolated.generate_call(
            CallRequest(conversation("Hello"), TOOLS[:1], sampling(Settings(seed=2, max_answer_tokens=200)))
        ).text,
        TOOLS[:1],
        frozenset(),
    )


def test_a_dying_model_process_is_a_model_error_and_the_next_call_recovers(isolated):
    pid = isolated.pid
    threading.Timer(0.3, lambda: os.kill(pid, signal.SIGABRT)).start()  # what a native abort does
    with pytest.raises(ModelError, match="stopped unexpectedly"):
        isolated.generate_call(
            CallRequest(
                conversation("Tell me everything about the sea."),
                TOOLS[:1],
                sampling(Settings(seed=3, max_answer_tokens=2000)),
            )
        )
    turn = isolated.generate_call(
        CallRequest(conversation("Hello"), TOOLS[:1], sampling(Settings(seed=4, max_answer_tokens=400)))
    )
    check_call(turn.text, TOOLS[:1], frozenset())
    assert isolated.pid != pid and isolated.restarts == 1


def test_a_model_killed_while_idle_is_restarted_by_the_next_call(isolated):
    check_call(
        isolated.generate_call(
            CallRequest(conversation("Hello"), TOOLS[:1], sampling(Settings(seed=5, max_answer_tokens=200)))
        ).text,
        TOOLS[:1],
        frozenset(),
    )
    pid, restarts = isolated.pid, isolated.restarts
    os.kill(pid, signal.SIGKILL)  # what the out-of-memory killer does
    wait_dead(pid)
    turn = isolated.generate_call(
        CallRequest(conversation("Hello again"), TOOLS[:1], sampling(Settings(seed=5, max_answer_tokens=200)))
    )
    check_call(turn.text, TOOLS[:1], frozenset())
    assert isolated.pid != pid and isolated.restarts == restarts + 1


def test_a_bad_file_raises_the_same_typed_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(100))
    runtime = isolated_llama(LlamaSettings.from_settings(Settings(), bad))  # returns while the child loads
    try:
        with pytest.raises(ModelFileError, match="bad.gguf"):
            runtime.wait_ready()
        with pytest.raises(ModelFileError, match="bad.gguf"):  # again, not a broken pipe
            _ = runtime.info
    finally:
        runtime.close()


def test_a_gguf_without_a_chat_template_says_so_across_the_process_boundary(model_path, tmp_path):
    runtime = isolated_llama(
        LlamaSettings.from_settings(Settings(context_size=256, threads=1), untemplated_copy(model_path, tmp_path))
    )
    try:
        with pytest.raises(ModelError, match="has no chat template") as raised:
            runtime.wait_ready()
        assert "override" in raised.value.hint
    finally:
        runtime.close()
