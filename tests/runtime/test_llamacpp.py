"""The llama.cpp runtime on the real bundled model."""

from __future__ import annotations

import json
import threading
import time

import pytest

from memdesk.core.base.errors import ContextOverflowError, GenerationCancelled, ModelError, ModelFileError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    Runtime,
    TextRequest,
    sampling,
)
from memdesk.core.runtime.grammar import build_call_grammar
from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from tests.runtime.conftest import HEARTBEAT_TOOLS, TOOLS, conversation
from tests.runtime.test_grammar import check_call

pytestmark = pytest.mark.model

PROMPTS = [
    "Hi, I'm Ann. I love hiking.",
    "What did we talk about last week?",
    "Please remember that my cat is called Tom.",
    "Tell me a joke.",
]


def test_is_a_runtime(llama):
    assert isinstance(llama, Runtime)
    assert llama.info.exact_tokens and llama.info.context_window == 4096


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_answer_is_a_valid_call(llama, seed):
    for prompt in PROMPTS:
        turn = llama.generate_call(
            CallRequest(
                conversation(prompt),
                TOOLS,
                sampling(Settings(seed=seed, temperature=1.0, max_answer_tokens=400)),
                HEARTBEAT_TOOLS,
            )
        )
        check_call(turn.text, TOOLS, HEARTBEAT_TOOLS)
        assert turn.stats.generated_tokens > 5


def test_greedy_is_deterministic(llama):
    params = sampling(Settings(temperature=0, max_answer_tokens=200))
    first = llama.generate_call(CallRequest(conversation("Hello!"), TOOLS, params, HEARTBEAT_TOOLS)).text
    llama.generate_call(CallRequest(conversation("Something else entirely."), TOOLS, params, HEARTBEAT_TOOLS))
    assert llama.generate_call(CallRequest(conversation("Hello!"), TOOLS, params, HEARTBEAT_TOOLS)).text == first
    check_call(first, TOOLS, HEARTBEAT_TOOLS)


def test_streaming_is_incremental_and_matches_the_call(llama):
    events, arrival = [], []
    turn = llama.generate_call(
        CallRequest(
            conversation("Hi there, how are you today?"), TOOLS[:1], sampling(Settings(seed=3, max_answer_tokens=300))
        ),
        on_event=lambda event: (events.append(event), arrival.append(time.perf_counter())),
    )
    params = json.loads(turn.text)["params"]
    assert "".join(e.text for e in events if e.kind == "thought") == params["inner_thoughts"]
    assert "".join(e.text for e in events if e.kind == "message") == params["message"]
    assert len(events) >= 5  # token by token, not one block at the end
    assert arrival[-1] - arrival[0] > 0.02


def test_cancel_stops_quickly_and_the_next_call_works(llama):
    cancel = CancelToken()
    cancelled_at: list[float] = []
    arrivals: list[float] = []

    def on_event(event):
        arrivals.append(time.perf_counter())
        if len(arrivals) == 1:
            threading.Timer(0.1, lambda: (cancelled_at.append(time.perf_counter()), cancel.cancel())).start()

    with pytest.raises(GenerationCancelled):
        llama.generate_call(
            CallRequest(
                conversation("Write me a very long poem about the sea."),
                TOOLS[:1],
                sampling(Settings(seed=4, max_answer_tokens=2000)),
            ),
            on_event=on_event,
            cancel=cancel,
        )
    # Quickly means within a token or two of the cancel, however fast this machine decodes (a
    # time in seconds would hold on one CPU and not on a slower or busier one).
    assert cancelled_at and sum(1 for t in arrivals if t > cancelled_at[0]) <= 2
    turn = llama.generate_call(
        CallRequest(
            conversation("Hello again"), TOOLS, sampling(Settings(seed=4, max_answer_tokens=300)), HEARTBEAT_TOOLS
        )
    )
    check_call(turn.text, TOOLS, HEARTBEAT_TOOLS)


def test_a_cancelled_token_before_start_is_honoured(llama):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(GenerationCancelled):
        llama.generate_text(TextRequest(conversation("Hi"), sampling(Settings())), cancel=cancel)


def test_prefix_reuse_evaluates_only_new_tokens(llama):
    first = conversation("My favourite colour is green.")
    turn = llama.generate_call(
        CallRequest(first, TOOLS, sampling(Settings(seed=5, max_answer_tokens=200)), HEARTBEAT_TOOLS)
    )
    second = [*first, ChatMessage("assistant", turn.text), ChatMessage("user", "And my dog is called Rex.")]
    held, new = list(llama.prefix_cache.tokens), llama.prompt_for_cache(second)
    again = llama.generate_call(
        CallRequest(second, TOOLS, sampling(Settings(seed=5, max_answer_tokens=200)), HEARTBEAT_TOOLS)
    )
    # strict=False: the -1 ends the held tokens, so a held prefix of the new prompt still differs somewhere.
    shared = next(i for i, (a, b) in enumerate(zip(held + [-1], new, strict=False)) if a != b)
    assert again.stats.prompt_tokens == len(new) and shared >= len(llama.prompt_tokens(first))
    # Only what the cache does not hold is evaluated: the first prompt and the reply are kept.
    assert again.stats.evaluated_tokens == len(new) - shared
    assert again.stats.evaluated_tokens < len(new) // 2
    # The same prompt twice: only the last token is re-evaluated (to get its logits).
    repeat = llama.generate_call(
        CallRequest(second, TOOLS, sampling(Settings(seed=6, max_answer_tokens=200)), HEARTBEAT_TOOLS)
    )
    assert repeat.stats.evaluated_tokens == 1


def test_a_reply_held_in_other_tokens_than_its_text_gives_is_not_evaluated_again(llama):
    """A reply sampled under a grammar is often other tokens than its text tokenizes to (``.``
    then ``"`` rather than ``."``); the next prompt keeps the cached tokens, which spell the same
    text, so only the new message is evaluated."""
    first = conversation("My favourite colour is green.")
    reply = (
        '{"function": "send_message", "params": {"inner_thoughts": "She likes green.", "message": "Green is lovely."}}'
    )
    second = [*first, ChatMessage("assistant", reply), ChatMessage("user", "And my dog is called Rex.")]
    sampled = [token for character in reply for token in llama.tokenize(character, special=False)]
    held = [*llama.prompt_tokens(first), *sampled]
    canonical = llama.prompt_tokens(second)
    assert canonical[: len(held)] != held  # the reply's own tokens differ from the sampled ones
    llama.generate_call(CallRequest(first, TOOLS, sampling(Settings(seed=1, max_answer_tokens=8)), HEARTBEAT_TOOLS))
    llama.prefix_cache.evaluate(held, None)  # the cache as if the reply had been sampled so
    prompt = llama.prompt_for_cache(second)
    assert prompt[: len(held)] == held
    assert b"".join(llama._open_model().piece_bytes(t, special=True) for t in prompt) == llama.render(second).encode()
    turn = llama.generate_call(
        CallRequest(second, TOOLS, sampling(Settings(seed=1, max_answer_tokens=24)), HEARTBEAT_TOOLS)
    )
    assert (
        turn.stats.evaluated_tokens
        == len(prompt) - len(held)
        < len(llama.prompt_tokens(second)) - len(llama.prompt_tokens(first))
    )
    json.loads(turn.text)  # still a valid call


def test_a_plain_text_generation_gives_the_conversations_cache_back(llama):
    """message_chatgpt and the summarizer generate on prompts of their own; the conversation's
    next step must not evaluate the whole conversation again (bench.turns: reeval ratio 11.9)."""
    talk = conversation("My favourite colour is green and my dog is called Rex.")
    llama.generate_call(CallRequest(talk, TOOLS, sampling(Settings(seed=2, max_answer_tokens=32)), HEARTBEAT_TOOLS))
    held = list(llama.prefix_cache.tokens)
    aside = llama.generate_text(
        TextRequest(
            [ChatMessage("system", "Answer briefly."), ChatMessage("user", "Name a herb.")],
            sampling(Settings(seed=2, max_answer_tokens=8)),
        )
    )
    assert isinstance(aside, str)
    assert llama.prefix_cache.tokens == held
    again = llama.generate_call(
        CallRequest(talk, TOOLS, sampling(Settings(seed=2, max_answer_tokens=32)), HEARTBEAT_TOOLS)
    )
    assert again.stats.evaluated_tokens == 1  # only the last token, for its logits


def test_count_prompt_is_the_rendered_prompts_token_count(llama):
    messages = conversation("Count me, please: ünïcode too ✓")
    rendered = llama.render(messages)
    assert rendered.endswith("<|im_start|>assistant\n")
    assert llama.count_prompt(messages) == len(llama.tokenize(rendered, special=True))
    assert llama.count_prompt(messages) > llama.count_tokens(messages[0].content) + llama.count_tokens(
        messages[1].content
    )
    assert llama.count_tokens("<|im_start|>") > 1  # plain text never becomes a control token


def test_generate_text_is_free_text(llama):
    text = llama.generate_text(
        TextRequest(
            [ChatMessage("user", "Summarise in one sentence: Ann likes hiking and her cat Tom.")],
            sampling(Settings(seed=7, max_answer_tokens=60)),
        )
    )
    assert text and not text.startswith("{")


def test_the_grammar_rejects_unknown_functions_and_wrong_arguments(llama):
    grammar = build_call_grammar(TOOLS, HEARTBEAT_TOOLS).text
    good = '{"function": "send_message", "params": {"inner_thoughts": "hi", "message": "Hello!"}}'
    assert llama.grammar_accepts(grammar, good)
    bad = [
        '{"function": "delete_everything", "params": {"inner_thoughts": "hi", "message": "x"}}',
        '{"function": "send_message", "params": {"inner_thoughts": "hi", "msg": "Hello!"}}',
        '{"function": "send_message", "params": '
        '{"inner_thoughts": "hi", "message": "Hello!", "request_heartbeat": true}}',
        '{"function": "archival_memory_search", "params": {"inner_thoughts": "x", "query": "cats"}}',
        '{"function": "archival_memory_search", "params": '
        '{"inner_thoughts": "x", "query": "cats", "page": "two", "request_heartbeat": true}}',
        '{"function": "core_memory_append", "params": '
        '{"inner_thoughts": "x", "label": "diary", "content": "c", "request_heartbeat": false}}',
        '{"function":"send_message","params":{"inner_thoughts":"hi","message":"Hello!"}}',
        '{"function": "send_message", "params": {"inner_thoughts": "hi", "message": "Hello!"}} ',
    ]
    for text in bad:
        assert not llama.grammar_accepts(grammar, text), text


def test_llama_cpp_keeps_string_bounds_phrases_and_the_thoughts_budget(llama):
    from memdesk.core.runtime.grammar import Limits
    from tests.runtime.test_grammar import BOUNDED

    grammar = build_call_grammar([BOUNDED], limits=Limits(thoughts_chars=7))
    for seed in range(20):
        assert llama.grammar_accepts(grammar.text, grammar.sample(seed))
    good = '{"function": "record", "params": {"inner_thoughts": "fine", "label": "sister of", "note": "ok"}}'
    assert llama.grammar_accepts(grammar.text, good)
    for bad in (
        good.replace('"fine"', '"eight ch"'),  # thoughts over budget
        good.replace('"sister of"', '"a"'),  # phrase too short
        good.replace('"sister of"', '"sister of Ann!"'),  # too long, and punctuation
        good.replace('"sister of"', '"- sister"'),  # does not start with a letter
        good.replace('"ok"', '"toolong"'),
    ):
        assert not llama.grammar_accepts(grammar.text, bad), bad


def test_llama_cpp_parses_the_grammar_and_admits_its_samples(llama):
    grammar = build_call_grammar(TOOLS, HEARTBEAT_TOOLS)
    for seed in range(40):
        sample = grammar.sample(seed)
        assert llama.grammar_accepts(grammar.text, sample), sample


def test_context_size_is_capped_at_the_training_context(model_path):
    with LlamaCppRuntime(
        LlamaSettings.from_settings(Settings(context_size=1_000_000, threads=1), model_path)
    ) as runtime:
        assert runtime.info.context_window == 8192


def test_a_prompt_longer_than_the_context_is_refused(model_path):
    with LlamaCppRuntime(LlamaSettings.from_settings(Settings(context_size=256, threads=1), model_path)) as runtime:
        with pytest.raises(ContextOverflowError):
            runtime.generate_text(TextRequest([ChatMessage("user", "word " * 400)], sampling(Settings())))
        assert (
            runtime.generate_text(
                TextRequest([ChatMessage("user", "Hi")], sampling(Settings(max_answer_tokens=8, seed=1)))
            )
            is not None
        )


def test_bad_files_raise_model_file_error_naming_them(tmp_path, model_path):
    broken = tmp_path / "half.gguf"
    broken.write_bytes(model_path.read_bytes()[:40_000_000])
    with pytest.raises(ModelFileError, match="half.gguf"):
        LlamaCppRuntime(LlamaSettings.from_settings(Settings(), broken))
    with pytest.raises(ModelFileError, match="gone.gguf"):
        LlamaCppRuntime(LlamaSettings.from_settings(Settings(), tmp_path / "gone.gguf"))


def test_chat_template_override_is_used(model_path):
    override = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "<|im_start|>assistant\nSure: "
    )
    with LlamaCppRuntime(
        LlamaSettings.from_settings(Settings(context_size=512, threads=1, chat_template=override), model_path)
    ) as runtime:
        assert runtime.render([ChatMessage("user", "Hi")]).endswith("Sure: ")


def test_closed_runtime_raises_model_error(model_path):
    runtime = LlamaCppRuntime(LlamaSettings.from_settings(Settings(context_size=256, threads=1), model_path))
    runtime.close()
    with pytest.raises(ModelError):
        runtime.generate_text(TextRequest([ChatMessage("user", "Hi")], sampling(Settings())))


def test_a_call_that_runs_out_of_tokens_is_still_valid_json(llama):
    # A budget far too small for the model's thoughts: the call is closed, not cut off.
    for seed in (1, 2, 3):
        turn = llama.generate_call(
            CallRequest(
                conversation("Tell me a very long story about dragons, with many details."),
                TOOLS,
                sampling(Settings(seed=seed, max_answer_tokens=24)),
                HEARTBEAT_TOOLS,
            )
        )
        check_call(turn.text, TOOLS, HEARTBEAT_TOOLS)


# --- a model that cannot be set up says why (issue 12 item 5) --------------------------------------
def test_a_bad_template_override_gives_its_model_error(model_path):
    with pytest.raises(ModelError, match="override chat template does not parse"):
        LlamaCppRuntime(
            LlamaSettings.from_settings(Settings(context_size=256, threads=1, chat_template="{% for %}"), model_path)
        )


def untemplated_copy(model_path, folder):
    """The bundled model with its chat template key renamed (same length, so the file stays valid)."""
    copy = folder / "untemplated.gguf"
    data = model_path.read_bytes()
    assert data.count(b"tokenizer.chat_template") == 1
    copy.write_bytes(data.replace(b"tokenizer.chat_template", b"tokenizer.chat_templatX"))
    return copy


def test_a_gguf_without_a_chat_template_asks_for_an_override(model_path, tmp_path):
    copy = untemplated_copy(model_path, tmp_path)
    with pytest.raises(ModelError, match="has no chat template") as raised:
        LlamaCppRuntime(
            LlamaSettings.from_settings(Settings(context_size=256, threads=1), copy, cache_dir=tmp_path / "kv")
        )
    assert "override" in raised.value.hint
    override = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "<|im_start|>assistant\n"
    )
    with LlamaCppRuntime(
        LlamaSettings.from_settings(Settings(context_size=256, threads=1, chat_template=override), copy)
    ) as runtime:
        assert (
            runtime.generate_text(
                TextRequest([ChatMessage("user", "Hi")], sampling(Settings(max_answer_tokens=4, seed=1)))
            )
            is not None
        )
