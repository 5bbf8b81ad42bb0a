"""The OpenAI-compatible runtime against a real server on loopback: llama-cpp-python's own,
serving the bundled model."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from memdesk.core.base.errors import GenerationCancelled, ModelError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    Runtime,
    TextRequest,
    sampling,
)
from memdesk.core.runtime.openai_http import (
    OpenAIHttpRuntime,
    OpenAISettings,
    call_schema,
    estimate_tokens,
    normalise_call,
)
from tests.runtime.conftest import HEARTBEAT_TOOLS, TOOLS, conversation, free_port
from tests.runtime.test_grammar import check_call

pytestmark = pytest.mark.model


def test_is_a_runtime_with_estimated_counts(http):
    assert isinstance(http, Runtime)
    assert not http.info.exact_tokens
    assert http.count_tokens("Hello, world!") >= 3
    assert http.count_prompt(conversation("Hi")) > http.count_tokens(conversation("Hi")[0].content)


@pytest.mark.parametrize("seed", [0, 1])
def test_calls_come_back_valid_and_in_our_shape(http, seed):
    events = []
    turn = http.generate_call(
        CallRequest(
            conversation("Hi, I'm Ann. I love hiking."),
            TOOLS,
            sampling(Settings(seed=seed, max_answer_tokens=300)),
            HEARTBEAT_TOOLS,
        ),
        on_event=events.append,
    )
    check_call(turn.text, TOOLS, HEARTBEAT_TOOLS)
    thoughts = "".join(e.text for e in events if e.kind == "thought")
    assert thoughts == json.loads(turn.text)["params"]["inner_thoughts"]
    assert len(events) > 1


def test_free_text(http):
    text = http.generate_text(
        TextRequest(
            [ChatMessage("user", "Say hello in one short sentence.")], sampling(Settings(seed=1, max_answer_tokens=40))
        )
    )
    assert text


def test_cancel_stops_the_stream(http):
    cancel = CancelToken()
    with pytest.raises(GenerationCancelled):
        http.generate_call(
            CallRequest(
                conversation("Write a long poem."), TOOLS[:1], sampling(Settings(seed=2, max_answer_tokens=400))
            ),
            on_event=lambda e: cancel.cancel(),
            cancel=cancel,
        )
    turn = http.generate_call(
        CallRequest(conversation("Hello"), TOOLS[:1], sampling(Settings(seed=2, max_answer_tokens=200)))
    )
    check_call(turn.text, TOOLS[:1], frozenset())


def test_unreachable_server_is_a_model_error():
    runtime = OpenAIHttpRuntime(
        replace(OpenAISettings.from_settings(Settings(openai_base_url=f"http://127.0.0.1:{free_port()}/v1")), timeout=5)
    )
    with pytest.raises(ModelError, match="Cannot reach"):
        runtime.generate_text(TextRequest([ChatMessage("user", "Hi")], sampling(Settings())))


def test_normalise_reorders_and_keeps_bad_output_raw():
    messy = (
        '{ "params": {"request_heartbeat": true, "query": "cats", "inner_thoughts": "hm"}, '
        '"function": "archival_memory_search" }'
    )
    assert normalise_call(messy, TOOLS, HEARTBEAT_TOOLS) == json.dumps(
        {
            "function": "archival_memory_search",
            "params": {"inner_thoughts": "hm", "query": "cats", "request_heartbeat": True},
        }
    )
    assert normalise_call("not json", TOOLS, HEARTBEAT_TOOLS) == "not json"
    unknown = '{"function": "rm_rf", "params": {}}'
    assert normalise_call(unknown, TOOLS, HEARTBEAT_TOOLS) == unknown


def test_schema_names_each_function_once():
    schema = call_schema(TOOLS, HEARTBEAT_TOOLS)
    names = [option["properties"]["function"]["enum"] for option in schema["anyOf"]]
    assert names == [[t.name] for t in TOOLS]
    assert estimate_tokens("") == 0 and estimate_tokens("a b c") == 3  # one per word beats 5 bytes / 4


def test_the_schema_bounds_inner_thoughts_when_the_request_does():
    bounded = call_schema(TOOLS, HEARTBEAT_TOOLS, thoughts_chars=60)
    assert all(
        option["properties"]["params"]["properties"]["inner_thoughts"]["maxLength"] == 60 for option in bounded["anyOf"]
    )
    free = call_schema(TOOLS, HEARTBEAT_TOOLS)
    assert all(
        "maxLength" not in option["properties"]["params"]["properties"]["inner_thoughts"] for option in free["anyOf"]
    )
