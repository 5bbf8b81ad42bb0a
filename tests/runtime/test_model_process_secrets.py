"""The passphrase of an encrypted store stays in the app: the model's process gets a key derived
for its own file (HKDF), writes no core file and is not dumpable; passphrases tried at an unlock
or left behind by a conversion are not kept (issue 35, item 10)."""

from __future__ import annotations

import gc
import hashlib
import pickle
import sys

import pytest

from memdesk.app.local_model import llama_settings
from memdesk.app.services import unlock_and_open
from memdesk.app.store_conversion import convert_store
from memdesk.core.base.errors import WrongPassphraseError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.base import ChatMessage, TextRequest, sampling
from memdesk.core.runtime.isolated import IsolatedRuntime
from memdesk.core.runtime.llamacpp.encrypted_kv_store import EncryptedKvStore
from memdesk.core.storage import open_database
from memdesk.core.storage.driver import kv_cache_key


def _passphrase(word: str) -> str:
    """Built at run time, so that only what the code under test keeps refers to it."""
    return "".join([word, "-", "correct horse battery"])


def _fingerprint(text: str) -> tuple[int, bytes]:
    return len(text), hashlib.sha256(text.encode("utf-8")).digest()


def _kept_anywhere(fingerprint: tuple[int, bytes]) -> bool:
    """Whether any object of this process still refers to the string with this fingerprint (the
    test itself holds only the fingerprint). Walks everything reachable from the objects the
    collector tracks, through containers it does not track (a dict of tuples of strings is not)."""
    gc.collect()
    seen: set[int] = set()
    todo = gc.get_objects()
    while todo:
        holder = todo.pop()
        if id(holder) in seen:
            continue
        seen.add(id(holder))
        for referent in gc.get_referents(holder):
            if type(referent) is str:
                if len(referent) == fingerprint[0] and _fingerprint(referent) == fingerprint:
                    return True
            elif id(referent) not in seen and type(referent) not in (int, float, bytes, bool):
                todo.append(referent)
    return False


@pytest.fixture
def encrypted_store(memdesk_home):
    paths = Paths.from_environment().ensure()
    passphrase = _passphrase("store")
    open_database(paths.database, key=passphrase).close()
    return paths, passphrase


def test_the_model_process_is_given_a_derived_key_never_the_passphrase(encrypted_store, tmp_path):
    paths, passphrase = encrypted_store
    given = llama_settings(Settings(), key=passphrase)
    sent = pickle.dumps(given)  # what crosses into the model's process
    assert passphrase.encode("utf-8") not in sent and passphrase.encode("utf-16-le") not in sent
    assert given.cache_key is not None and len(given.cache_key) == 32
    assert given.cache_key == kv_cache_key(paths.database, passphrase)
    states = EncryptedKvStore(tmp_path, {"model": "m"}, given.cache_key)
    states.save([1, 2, 3], b"core memory: Ann loves kayaks")
    states.close()
    again = EncryptedKvStore(tmp_path, {"model": "m"}, given.cache_key)
    assert again.load([1, 2, 3]) == bytearray(b"core memory: Ann loves kayaks")
    again.close()


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_model_process_is_not_dumpable_and_writes_no_core_file():
    runtime = IsolatedRuntime("tests.runtime.child_runtimes", "GuardProbeRuntime")
    try:
        said = runtime.generate_text(TextRequest([ChatMessage("user", "how are you kept?")], sampling(Settings())))
    finally:
        runtime.close()
    assert said == "dumpable=0 core=0"


def test_a_wrong_passphrase_tried_at_the_unlock_is_not_kept(encrypted_store):
    paths, passphrase = encrypted_store
    wrong = _fingerprint(_passphrase("wrong"))
    refused: list[str] = []

    def unlock(_store, open_with):
        try:
            return open_with(_passphrase("wrong"))  # as the user types it: a new string
        except WrongPassphraseError as error:
            refused.append(error.message)
        return open_with(passphrase)

    services = unlock_and_open(paths, unlock=unlock, embedder=HashingEmbedder())
    assert services is not None and len(refused) == 1
    try:
        assert not _kept_anywhere(wrong)
    finally:
        services.close()


def test_a_conversion_keeps_nothing_of_the_old_passphrase(memdesk_home):
    paths = Paths.from_environment().ensure()
    open_database(paths.database, key=_passphrase("old")).close()
    convert_store(paths, _passphrase("old"), _passphrase("new"))
    assert not _kept_anywhere(_fingerprint(_passphrase("old")))
