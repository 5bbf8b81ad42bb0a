"""The prompt-prefix KV cache on disk, with the real bundled model: a fresh runtime loads the
system message's state instead of evaluating it, gets the same greedy output, and ignores any file
it cannot trust."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest

from memdesk.core.base.settings_table import SETTINGS, Settings
from memdesk.core.runtime.base import CallRequest, ChatMessage, sampling
from memdesk.core.runtime.llamacpp.kv_store import SUFFIX, KvStore
from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from tests.runtime.conftest import TOOLS

pytestmark = pytest.mark.model

GREEDY = sampling(Settings(temperature=0, max_answer_tokens=24))
# Short prompts and a small context keep each cold evaluation around a second on a slow CPU.
SYSTEM = (
    "You are Sam, a friendly companion with long-term memory. You remember what the user tells you "
    "and answer briefly. Always reply with one JSON object that calls send_message."
)


def chat(user: str, system: str = SYSTEM) -> list[ChatMessage]:
    return [ChatMessage("system", system), ChatMessage("user", user)]


def runtime(model_path, cache_dir, **overrides) -> LlamaCppRuntime:
    """``overrides``: settings (context_size) or the runtime's own knobs (batch_size, cache_max_entries)."""
    settings = Settings(**{"context_size": 512, "threads": 1, **{k: v for k, v in overrides.items() if k in SETTINGS}})
    own = {k: v for k, v in overrides.items() if k not in SETTINGS}
    return LlamaCppRuntime(replace(LlamaSettings.from_settings(settings, model_path, cache_dir=cache_dir), **own))


def run(rt: LlamaCppRuntime, messages: list[ChatMessage]):
    return rt.generate_call(CallRequest(messages, TOOLS[:1], GREEDY))


def entries(folder) -> list:
    return sorted(p for p in folder.iterdir() if p.suffix == SUFFIX)


@pytest.fixture(scope="module")
def reference(model_path, tmp_path_factory):
    """Greedy output with no disk cache at all, and a cache folder holding the prefix's state."""
    with runtime(model_path, None) as plain:
        expected = run(plain, chat("Hi, I'm Ann!"))
        prefix = plain.stable_prefix(chat("Hi, I'm Ann!"), plain.prompt_tokens(chat("Hi, I'm Ann!")))
    folder = tmp_path_factory.mktemp("kv")
    with runtime(model_path, folder) as first:
        cold = run(first, chat("Hi, I'm Ann!"))
        assert first.prefix_saves == 1 and first.prefix_loads == 0
    assert cold.text == expected.text and cold.stats.evaluated_tokens == cold.stats.prompt_tokens
    assert len(entries(folder)) == 1
    return expected, prefix, folder


@pytest.fixture
def cache(reference, tmp_path):
    folder = tmp_path / "kv"
    shutil.copytree(reference[2], folder)
    return folder


def test_a_fresh_runtime_evaluates_only_what_follows_the_cached_system_message(model_path, reference, cache):
    expected, prefix, _ = reference
    assert prefix > 32
    with runtime(model_path, cache) as second:
        turn = run(second, chat("Hi, I'm Ann!"))
        assert second.prefix_loads == 1 and second.prefix_saves == 0
        assert turn.stats.evaluated_tokens == turn.stats.prompt_tokens - prefix
        assert turn.text == expected.text
        # Another user message after the same system message also starts from the saved state.
        with runtime(model_path, None) as plain:
            other = run(plain, chat("What is my name?"))
        again = LlamaCppRuntime(
            LlamaSettings.from_settings(Settings(context_size=512, threads=1), model_path, cache_dir=cache)
        )
        with again:
            turn = run(again, chat("What is my name?"))
            assert again.prefix_loads == 1
            assert turn.text == other.text and turn.stats.evaluated_tokens == turn.stats.prompt_tokens - prefix


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x5A
    path.write_bytes(data)


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage(path):
    path.write_bytes(os.urandom(4096))


def _empty(path):
    path.write_bytes(b"")


def _edited_header(path):
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"tokens": ', b'"tokens": 1', 1))


@pytest.mark.parametrize("damage", [_flip_last_byte, _truncate, _garbage, _empty, _edited_header])
def test_a_damaged_cache_file_is_ignored_deleted_and_rewritten(model_path, reference, cache, damage):
    expected = reference[0]
    [entry] = entries(cache)
    damage(entry)
    with runtime(model_path, cache) as rt:
        turn = run(rt, chat("Hi, I'm Ann!"))
        assert rt.prefix_loads == 0 and rt.prefix_cache.store.last_error
        assert turn.text == expected.text and turn.stats.evaluated_tokens == turn.stats.prompt_tokens
        assert rt.prefix_saves == 1  # the prefix was evaluated again, so its file is written anew
    with runtime(model_path, cache) as rt:
        assert run(rt, chat("Hi, I'm Ann!")).text == expected.text and rt.prefix_loads == 1


def test_a_file_saved_for_other_tokens_is_not_used(model_path, reference, cache):
    """A file under another prompt's name (copied or renamed) is refused by its header's key."""
    [entry] = entries(cache)
    with runtime(model_path, cache) as rt:
        other_system = SYSTEM.replace("Sam", "Max")
        shutil.copy(entry, cache / prefix_file(rt, chat("Hi!", other_system)))
        turn = run(rt, chat("Hi!", other_system))
        assert rt.prefix_loads == 0 and turn.stats.evaluated_tokens == turn.stats.prompt_tokens
        assert "other format or key" in rt.prefix_cache.store.last_error


def test_another_context_size_or_model_file_does_not_reuse_the_state(model_path, reference, cache, tmp_path):
    with runtime(model_path, cache, context_size=1024) as bigger:
        turn = run(bigger, chat("Hi, I'm Ann!"))
        assert bigger.prefix_loads == 0 and turn.stats.evaluated_tokens == turn.stats.prompt_tokens
    assert len(entries(cache)) == 2  # one per context size
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(model_path, copy)
    with runtime(copy, cache) as other:
        turn = run(other, chat("Hi, I'm Ann!"))
        assert other.prefix_loads == 0 and turn.stats.evaluated_tokens == turn.stats.prompt_tokens
        assert turn.text == reference[0].text
    assert len(entries(cache)) == 3


def prefix_file(rt: LlamaCppRuntime, messages: list[ChatMessage]) -> str:
    tokens = rt.prompt_tokens(messages)
    return rt.prefix_cache.store.path(tokens[: rt.stable_prefix(messages, tokens)]).name


def test_least_recently_used_entries_are_evicted(model_path, tmp_path):
    ada, bob, cy = (chat("Hi", SYSTEM.replace("Sam", name)) for name in ("Ada", "Bob", "Cy"))
    folder = tmp_path / "kv"
    with runtime(model_path, folder, cache_max_entries=2) as rt:
        run(rt, ada)
        run(rt, bob)
        run(rt, ada)  # loaded from disk: Ada is now the most recent use
        assert rt.prefix_loads == 1
        run(rt, cy)
        rt.prefix_cache.store.wait()
        assert {p.name for p in entries(folder)} == {prefix_file(rt, ada), prefix_file(rt, cy)}


def test_no_cache_dir_writes_nothing(model_path, tmp_path):
    with runtime(model_path, None) as rt:
        run(rt, chat("Hi"))
        assert rt.prefix_saves == 0 and rt.prefix_cache.store is None


def test_the_app_keeps_the_cache_in_memdesk_home(memdesk_home):
    """make_runtime wires the cache folder; the model runs in its child process as in the app."""
    from memdesk.app.runtimes import make_runtime
    from memdesk.core.base.paths import Paths

    rt = make_runtime(Settings(context_size=512))
    try:
        rt.generate_call(CallRequest(chat("Hi"), TOOLS[:1], GREEDY))
    finally:
        rt.close()
    folder = Paths.from_environment().kv_cache
    assert folder == memdesk_home.resolve() / "cache" / "kv"
    assert len(entries(folder)) == 1


# --- the store alone: file format and limits, no model needed ----------------------------------------
def test_store_round_trip_and_byte_limit(tmp_path):
    store = KvStore(tmp_path, {"model": "m"}, max_entries=8, max_bytes=2500)
    assert store.load([1, 2, 3]) is None
    store.save([1, 2, 3], b"a" * 1000)
    assert store.load([1, 2, 3]) == bytearray(b"a" * 1000)
    assert store.load([1, 2, 4]) is None  # another prefix: another key, a plain miss
    store.save([5, 6], b"b" * 1000)
    store.save([7], b"c" * 1000)  # three files exceed 2500 bytes: the oldest goes
    assert len(entries(tmp_path)) == 2 and store.load([1, 2, 3]) is None
    other_model = KvStore(tmp_path, {"model": "n"})
    assert other_model.load([7]) is None and store.load([7]) == bytearray(b"c" * 1000)
    store.save_async([8], bytearray(3000))  # larger than the whole budget: not written
    store.wait()
    assert store.load([8]) is None
