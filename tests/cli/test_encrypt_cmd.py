"""`memdesk encrypt`, `encrypt --change` and `decrypt`, and every command on an encrypted store:
the passphrase comes from MEMDESK_PASSPHRASE_FILE or the terminal, never from argv or the disk."""

from __future__ import annotations

import json

import pytest

from memdesk.app.instance import WINDOW, InstanceLock
from memdesk.cli import passphrase as passphrase_module
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.storage.driver import file_is_encrypted

SECRET = "tide pool 'seven' \"quoted\""


@pytest.fixture
def passphrase_file(tmp_path, monkeypatch):
    """Writes a passphrase file outside the data folder and points MEMDESK_PASSPHRASE_FILE at it."""

    def write(text: str, env: str = "MEMDESK_PASSPHRASE_FILE", name: str = "passphrase.txt"):
        path = tmp_path / name
        path.write_text(text + "\n", encoding="utf-8")
        monkeypatch.setenv(env, str(path))
        return path

    return write


@pytest.fixture
def typed(monkeypatch):
    """What the user types at each passphrase prompt, in order; records the prompts."""
    answers: list[str] = []
    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return answers.pop(0)

    monkeypatch.setattr(passphrase_module.getpass, "getpass", fake_getpass)
    return answers, prompts


def database() -> object:
    return Paths.from_environment().database


def test_encrypt_with_a_passphrase_file_and_every_command_then_reads_it(passphrase_file, capsys):
    assert main(["agents", "create", "Nora", "--persona", "I am Nora, I love kayaks."]) == 0
    passphrase_file(SECRET)
    assert main(["encrypt"]) == 0
    assert "Encrypted" in capsys.readouterr().out
    assert file_is_encrypted(database())
    assert b"kayaks" not in database().read_bytes()
    assert main(["memory", "Nora"]) == 0
    assert "I love kayaks" in capsys.readouterr().out
    assert main(["settings", "heartbeat_minutes", "15"]) == 0
    assert main(["agents", "create", "Ivo"]) == 0
    capsys.readouterr()
    assert main(["agents"]) == 0
    listing = capsys.readouterr().out
    assert "Ivo" in listing and "Nora" in listing


def test_an_encrypted_store_without_its_passphrase_is_one_clear_line(passphrase_file, monkeypatch, typed, capsys):
    main(["agents", "create", "Nora"])
    passphrase_file(SECRET)
    main(["encrypt"])
    monkeypatch.delenv("MEMDESK_PASSPHRASE_FILE")
    typed[0].extend(["", ""])  # Enter without typing anything
    capsys.readouterr()
    assert main(["agents"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memdesk: No passphrase was given") and err.count("\n") == 1
    assert "MEMDESK_PASSPHRASE_FILE" in err


def test_a_wrong_passphrase_file_is_refused_clearly(passphrase_file, capsys):
    main(["agents", "create", "Nora"])
    passphrase_file(SECRET)
    main(["encrypt"])
    passphrase_file("not it")
    capsys.readouterr()
    assert main(["memory", "Nora"]) == 1
    assert capsys.readouterr().err.startswith("memdesk: Wrong passphrase for")


def test_the_terminal_asks_again_after_a_wrong_passphrase(passphrase_file, monkeypatch, typed, capsys):
    main(["agents", "create", "Nora"])
    passphrase_file(SECRET)
    main(["encrypt"])
    monkeypatch.delenv("MEMDESK_PASSPHRASE_FILE")
    answers, prompts = typed
    answers.extend(["wrong", SECRET])
    capsys.readouterr()
    assert main(["agents"]) == 0
    assert len(prompts) == 2 and "Passphrase for" in prompts[0]
    assert "Wrong passphrase" in capsys.readouterr().err


def test_encrypt_on_the_terminal_asks_twice_and_refuses_two_different_passphrases(typed, capsys):
    main(["agents", "create", "Nora"])
    answers, prompts = typed
    answers.extend(["first", "second"])
    assert main(["encrypt"]) == 1
    assert "differ" in capsys.readouterr().err
    assert not file_is_encrypted(database())
    answers.extend([SECRET, SECRET])
    assert main(["encrypt"]) == 0
    assert file_is_encrypted(database())
    assert prompts[-2:] == ["New passphrase: ", "Type it again: "]


def test_change_then_decrypt_with_passphrase_files(passphrase_file, capsys):
    main(["agents", "create", "Nora", "--persona", "I am Nora, I love kayaks."])
    passphrase_file(SECRET)
    main(["encrypt"])
    passphrase_file("a new one", env="MEMDESK_NEW_PASSPHRASE_FILE", name="new.txt")
    assert main(["encrypt", "--change"]) == 0
    assert "Changed the passphrase" in capsys.readouterr().out
    assert main(["memory", "Nora"]) == 1  # MEMDESK_PASSPHRASE_FILE still holds the old one
    assert "Wrong passphrase" in capsys.readouterr().err
    passphrase_file("a new one")
    assert main(["decrypt"]) == 0
    assert not file_is_encrypted(database())
    assert b"kayaks" in database().read_bytes()


def test_encrypt_refuses_an_encrypted_store_and_decrypt_a_plain_one(passphrase_file, capsys):
    main(["agents", "create", "Nora"])
    assert main(["decrypt"]) == 1
    assert "is not encrypted" in capsys.readouterr().err
    passphrase_file(SECRET)
    main(["encrypt"])
    assert main(["encrypt"]) == 1
    assert "already encrypted" in capsys.readouterr().err


def test_encrypting_a_fresh_install_creates_an_encrypted_store(passphrase_file):
    passphrase_file(SECRET)
    assert not database().exists()
    assert main(["encrypt"]) == 0
    assert file_is_encrypted(database())
    assert main(["agents", "create", "Nora"]) == 0


def test_encrypt_waits_for_no_window_to_hold_the_store(passphrase_file, capsys):
    main(["agents", "create", "Nora"])
    passphrase_file(SECRET)
    with InstanceLock(Paths.from_environment().instance_lock, WINDOW):
        assert main(["encrypt"]) == 1
    assert "already" in capsys.readouterr().err.lower()
    assert not file_is_encrypted(database())


def test_encrypting_drops_the_plain_kv_cache_files(passphrase_file):
    main(["agents", "create", "Nora"])
    kv = Paths.from_environment().kv_cache
    kv.mkdir(parents=True)
    (kv / "state.kv").write_bytes(b"the prompt's core memory, in the clear")
    passphrase_file(SECRET)
    assert main(["encrypt"]) == 0
    assert not (kv / "state.kv").exists()


def test_the_passphrase_is_written_nowhere_in_the_data_folder(passphrase_file, memdesk_home):
    main(["agents", "create", "Nora"])
    passphrase_file(SECRET)
    main(["encrypt"])
    main(["settings", "heartbeat_minutes", "15"])
    main(["memory", "Nora"])
    for path in memdesk_home.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            assert SECRET.encode() not in raw and b"tide pool" not in raw, path


def test_backups_and_forget_of_an_encrypted_store_use_its_passphrase(passphrase_file, capsys):
    assert main(["agents", "create", "Nora", "--persona", "I am Nora, I love kayaks."]) == 0
    passphrase_file(SECRET)
    assert main(["encrypt"]) == 0
    assert main(["backup", "create"]) == 0
    assert main(["backup", "verify"]) == 0
    snapshots = [p for p in Paths.from_environment().backups.iterdir() if p.suffix != ".json"]
    assert snapshots and all(b"kayaks" not in p.read_bytes() for p in snapshots)
    capsys.readouterr()
    assert main(["forget", "Nora", "kayaks", "--apply", "--purge-backups", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["applied"] is True
    assert main(["memory", "Nora"]) == 0
    assert "kayaks" not in capsys.readouterr().out
