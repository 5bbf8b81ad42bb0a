"""A store that cannot be written is refused when it is opened, saying it is read-only, not at the
first write with a hint about disk space.

Tests run as root on some machines, where file modes stop no write: there the file or folder is
made immutable (``chattr +i``), which stops root too."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from memdesk.cli.main import main
from memdesk.core.base.errors import StoreReadOnlyError
from memdesk.core.base.paths import Paths
from memdesk.core.storage import open_database
from memdesk.core.storage.driver import sqlite_module


def _writable(path) -> bool:
    return os.access(path, os.W_OK)


@pytest.fixture
def make_read_only():
    undo = []

    def make(path):
        mode = os.stat(path).st_mode
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
        undo.append(lambda: os.chmod(path, mode))
        if _writable(path) and shutil.which("chattr"):  # root: file modes do not stop it
            if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0:
                undo.append(lambda: subprocess.run(["chattr", "-i", str(path)], check=True))
        if _writable(path):
            pytest.skip("neither file modes nor chattr +i make a file read-only for this user on this file system")

    yield make
    for step in reversed(undo):
        step()


def _store(folder):
    path = folder / "memdesk.sqlite3"
    open_database(path).close()
    return path


def test_a_read_only_store_file_is_refused_at_open(tmp_path, make_read_only):
    path = _store(tmp_path)
    make_read_only(path)
    with pytest.raises(sqlite_module().OperationalError, match="readonly"):  # what the first write met
        raw = sqlite_module().connect(str(path))
        raw.execute("INSERT INTO settings(key, value) VALUES ('a', '1')")
    raw.close()
    with pytest.raises(StoreReadOnlyError) as refused:
        open_database(path)
    assert "read-only" in refused.value.user_message
    assert "disk space" not in refused.value.user_message


def test_a_store_in_a_read_only_folder_is_refused_at_open(tmp_path, make_read_only):
    folder = tmp_path / "home"
    folder.mkdir()
    path = _store(folder)
    make_read_only(folder)
    with pytest.raises(StoreReadOnlyError, match=r"folder .*home.* is read-only"):
        open_database(path)


def test_a_write_refused_as_read_only_says_so(tmp_path):
    db = open_database(tmp_path / "memdesk.sqlite3")
    db.execute("PRAGMA query_only = ON")  # SQLite's own read-only state, which binds root too
    with pytest.raises(StoreReadOnlyError) as refused:
        db.execute("INSERT INTO settings(key, value) VALUES ('a', '1')")
    assert "disk space" not in refused.value.user_message
    db.close()


def test_a_command_on_a_read_only_store_says_so_in_one_line(memdesk_home, make_read_only, capsys):
    paths = Paths.from_environment().ensure()
    _store(paths.home)
    make_read_only(paths.database)
    assert main(["agents"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("memdesk: The database") and "is read-only" in error
