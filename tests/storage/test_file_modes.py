"""Only the person whose memories these are can read them: the data folder is 0700 and every file
MemDesk keeps in it 0600, whatever the umask, and a folder an older MemDesk left readable is fixed
at start. Each test sets a permissive umask itself, so nothing depends on this machine's."""

from __future__ import annotations

import os
import stat

import pytest

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.llamacpp.kv_store import KvStore
from memdesk.core.storage import open_database


@pytest.fixture(autouse=True)
def permissive_umask():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_fresh_data_folder_and_store_are_private(memdesk_home):
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    services.create_agent("sam")
    try:
        paths = services.paths
        for folder in (paths.home, paths.files_root, paths.user_models, paths.user_tools, paths.logs):
            assert mode(folder) == 0o700, folder
        store = [paths.database, *(paths.database.with_name(paths.database.name + s) for s in ("-wal", "-shm"))]
        assert any(p.name.endswith("-wal") and p.exists() for p in store)  # the WAL is there to be checked
        for file in store:
            if file.exists():
                assert mode(file) == 0o600, file
    finally:
        services.close()


def test_an_existing_readable_data_folder_is_made_private_at_start(memdesk_home, tmp_path):
    paths = Paths.from_environment()
    open_database(paths.database).close()
    agent_files = paths.agent_files(1)
    for folder in (paths.home, agent_files, paths.logs, paths.kv_cache):
        folder.mkdir(parents=True, exist_ok=True)
    for file in (agent_files / "notes.txt", paths.logs / "memdesk.log", paths.kv_cache / "abc.kv"):
        file.write_text("private")
    outside = tmp_path / "shared-model.gguf"  # the user's own file, linked into the models folder
    outside.write_text("weights")
    os.chmod(outside, 0o644)
    paths.user_models.mkdir()
    os.symlink(outside, paths.user_models / "linked.gguf")
    for path in [paths.home, *paths.home.rglob("*")]:
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() else 0o644)

    services = open_services(paths, embedder=HashingEmbedder())
    services.close()

    for path in [paths.home, *paths.home.rglob("*")]:
        if path.is_symlink():
            continue
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path
    assert mode(outside) == 0o644  # not MemDesk's: a link into the folder does not make it so


def test_only_memdesk_own_entries_are_changed_in_a_shared_folder(memdesk_home):
    memdesk_home.mkdir()
    theirs = memdesk_home / "not-memdesk"
    theirs.mkdir()
    (theirs / "document.txt").write_text("someone else's")
    os.chmod(theirs / "document.txt", 0o644)
    Paths.from_environment().ensure()
    assert mode(memdesk_home) == 0o700
    assert mode(theirs / "document.txt") == 0o644


def test_kv_cache_files_are_private(tmp_path):
    store = KvStore(tmp_path / "kv", {"model": "m"})
    saved = store.save([1, 2, 3], b"state")
    assert mode(saved) == 0o600 and mode(tmp_path / "kv") == 0o700


def test_what_a_command_writes_is_private_and_the_umask_is_given_back(memdesk_home, tmp_path, capsys):
    assert main(["agents", "create", "sam"]) == 0
    export = tmp_path / "sam.json"
    assert main(["agents", "export", "sam", str(export), "--format", "json"]) == 0
    assert mode(export) == 0o600  # an export too: it holds the whole memory
    assert os.umask(0o022) == 0o022  # the caller's umask is back once the command returns
