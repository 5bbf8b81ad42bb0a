"""The KV states of an encrypted store: kept in one SQLCipher file under a key derived from the store's,
with KvStore's contract (exact tokens and identity, least recently used evicted, a bad cache
costs time only). The last test runs the bundled model: a fresh runtime loads the encrypted state."""

from __future__ import annotations

import pytest

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import CallRequest, ChatMessage, sampling
from memdesk.core.runtime.llamacpp.encrypted_kv_store import FILE, EncryptedKvStore
from memdesk.core.runtime.llamacpp.kv_store import SUFFIX, KvStore, _token_bytes
from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from tests.runtime.conftest import TOOLS

PASSPHRASE = 'it\'s "ours"'
KEY = bytes(range(32))  # what the app derives from the store's key (storage/driver.py: kv_cache_key)
TOKENS = list(range(1000, 1400))  # a prompt's token ids: they spell its text


def test_states_round_trip_under_the_key_and_nothing_readable_is_on_disk(tmp_path):
    store = EncryptedKvStore(tmp_path, {"model": "m"}, KEY)
    assert store.load(TOKENS) is None and not store.has(TOKENS)
    store.save_async(TOKENS, bytearray(b"core memory: Ann loves kayaks " * 100))
    store.wait()
    assert store.has(TOKENS)
    assert store.load(TOKENS) == bytearray(b"core memory: Ann loves kayaks " * 100)
    assert store.load(TOKENS[:-1]) is None
    store.close()
    assert [p.name for p in tmp_path.iterdir()] == [FILE]
    raw = (tmp_path / FILE).read_bytes()
    assert b"kayaks" not in raw and _token_bytes(TOKENS) not in raw and not raw.startswith(b"SQLite format 3")
    again = EncryptedKvStore(tmp_path, {"model": "m"}, KEY)
    assert again.load(TOKENS) is not None
    assert EncryptedKvStore(tmp_path, {"model": "other"}, KEY).load(TOKENS) is None


def test_states_saved_under_another_key_are_dropped_not_an_error(tmp_path):
    EncryptedKvStore(tmp_path, {"model": "m"}, bytes(32)).save(TOKENS, b"state")
    store = EncryptedKvStore(tmp_path, {"model": "m"}, KEY)
    assert store.load(TOKENS) is None and "started afresh" in store.last_error
    store.save(TOKENS, b"state")
    assert store.load(TOKENS) == bytearray(b"state")


def test_plain_state_files_left_beside_an_encrypted_store_are_deleted(tmp_path):
    KvStore(tmp_path, {"model": "m"}).save(TOKENS, b"prompt state in the clear")
    assert list(tmp_path.glob("*" + SUFFIX))
    EncryptedKvStore(tmp_path, {"model": "m"}, KEY)
    assert not list(tmp_path.glob("*" + SUFFIX))


def test_least_recently_used_states_go_first_and_discard_drops_one(tmp_path):
    store = EncryptedKvStore(tmp_path, {"model": "m"}, KEY, max_entries=2)
    store.save([1], b"a")
    store.save([2], b"b")
    assert store.load([1]) == bytearray(b"a")  # [1] is now the most recently used
    store.save([3], b"c")
    assert store.load([2]) is None and store.load([1]) and store.load([3])
    store.discard([3], "refused by llama.cpp")
    assert store.load([3]) is None and "refused" in store.last_error
    sized = EncryptedKvStore(tmp_path / "sized", {"model": "m"}, KEY, max_bytes=2500)
    for n in range(3):
        sized.save([n], bytes(1000))
    assert len(sized.entries()) == 2


def test_the_settings_repr_never_shows_the_key(tmp_path):
    assert KEY.hex() not in repr(LlamaSettings.from_settings(Settings(), tmp_path / "m.gguf", cache_key=KEY))


@pytest.mark.model
def test_a_fresh_runtime_loads_the_encrypted_state_instead_of_evaluating_it(model_path, tmp_path):
    def runtime(key: bytes) -> LlamaCppRuntime:
        return LlamaCppRuntime(
            LlamaSettings.from_settings(
                Settings(context_size=512, threads=1), model_path, cache_dir=tmp_path, cache_key=key
            )
        )

    system = (
        "You are Sam, a friendly companion with long-term memory. You remember what the user tells you and answer "
        "briefly. Always reply with one JSON object that calls send_message. Core memory: the user is Ann,"
        " who loves kayaks."
    )
    messages = [ChatMessage("system", system), ChatMessage("user", "Hi!")]
    request = CallRequest(messages, TOOLS[:1], sampling(Settings(temperature=0, max_answer_tokens=16)))
    with runtime(KEY) as first:
        cold = first.generate_call(request)
        first.prefix_cache.store.wait()
        assert first.prefix_saves == 1
    assert [p.name for p in tmp_path.iterdir()] == [FILE]
    with runtime(KEY) as second:
        warm = second.generate_call(request)
        assert second.prefix_loads == 1 and warm.text == cold.text
        assert warm.stats.evaluated_tokens < cold.stats.evaluated_tokens
    with runtime(bytes(32)) as stranger:
        stranger.generate_call(request)
        assert stranger.prefix_loads == 0


@pytest.mark.model
def test_the_app_keeps_an_encrypted_stores_states_encrypted(memdesk_home):
    """make_runtime hands the model's child process a key derived from the store's (through its
    pipe, not argv), never the passphrase."""
    from memdesk.app.runtimes import make_runtime
    from memdesk.core.base.paths import Paths
    from memdesk.core.storage import open_database
    from memdesk.core.storage.driver import kv_cache_key

    paths = Paths.from_environment().ensure()
    open_database(paths.database, key=PASSPHRASE).close()
    rt = make_runtime(Settings(context_size=512), key=PASSPHRASE)
    try:
        system = "You are Sam, a companion with long-term memory. " * 6
        rt.generate_call(
            CallRequest(
                [ChatMessage("system", system), ChatMessage("user", "Hi")],
                TOOLS[:1],
                sampling(Settings(temperature=0, max_answer_tokens=8)),
            )
        )
    finally:
        rt.close()
    folder = Paths.from_environment().kv_cache
    assert [p.name for p in folder.iterdir()] == [FILE]
    derived = kv_cache_key(paths.database, PASSPHRASE)
    assert derived is not None
    reopened = EncryptedKvStore(folder, {"probe": 1}, derived)
    assert reopened.last_error is None and len(reopened.entries()) == 1  # saved under the derived key
