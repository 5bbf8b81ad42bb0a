"""`memdesk backup`: list, take, check and restore snapshots from the terminal, damaged store included."""

from __future__ import annotations

import json

from memdesk.app.instance import WINDOW, InstanceLock
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.storage import open_database


def _user_name() -> str:
    db = open_database(Paths.from_environment().database, migrate=False)
    try:
        return json.loads(db.scalar("SELECT value FROM settings WHERE key = 'user_name'"))
    finally:
        db.close()


def _name(name: str, capsys) -> None:
    assert main(["settings", "user_name", name]) == 0
    capsys.readouterr()


def _snapshots(capsys) -> list[dict]:
    assert main(["backup", "list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["snapshots"]


def test_an_empty_list_says_how_to_take_one(capsys):
    assert main(["backup"]) == 0
    out = capsys.readouterr().out
    assert "No snapshots yet" in out and "memdesk backup create" in out


def test_create_list_and_verify(capsys):
    _name("Ana", capsys)
    assert main(["backup", "create", "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    assert taken["verified"] and taken["reason"] == "manual" and taken["kind"] == "kept"
    [listed] = _snapshots(capsys)
    assert listed["id"] == taken["id"] and listed["size"] > 0
    assert main(["backup"]) == 0
    row = capsys.readouterr().out.strip().split("\t")
    assert row[0] == taken["id"] and row[3] == "verified" and row[4].startswith("manual")
    assert main(["backup", "verify", taken["id"]]) == 0
    assert capsys.readouterr().out.strip().endswith("ok")


def test_restore_brings_back_the_snapshot_and_prints_how_to_undo_it(capsys):
    _name("Ana", capsys)
    assert main(["backup", "create", "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    _name("Bea", capsys)
    assert main(["backup", "restore", taken["id"]]) == 0
    out = capsys.readouterr().out
    assert _user_name() == "Ana"
    undo = out.split("undo with: memdesk backup restore ")[1].strip()
    assert main(["backup", "restore", undo]) == 0
    assert _user_name() == "Bea"


def test_restore_refuses_while_the_window_uses_the_store(capsys):
    _name("Ana", capsys)
    assert main(["backup", "create", "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    _name("Bea", capsys)
    with InstanceLock(Paths.from_environment().instance_lock, WINDOW):
        assert main(["backup", "restore", taken["id"]]) == 1
    assert "already running" in capsys.readouterr().err
    assert _user_name() == "Bea"


def test_a_damaged_snapshot_is_reported_and_not_restored(capsys):
    _name("Ana", capsys)
    assert main(["backup", "create", "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    with open(taken["path"], "r+b") as file:
        file.seek(4096)
        file.write(b"\xa5" * 40_000)
    assert main(["backup", "verify"]) == 1
    assert "DAMAGED" in capsys.readouterr().out
    assert main(["backup", "restore", taken["id"]]) == 1
    assert "is damaged" in capsys.readouterr().err
    assert _user_name() == "Ana"


def test_a_store_too_damaged_to_open_is_named_with_the_command_that_restores_it(capsys):
    _name("Ana", capsys)
    assert main(["backup", "create", "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    Paths.from_environment().database.write_bytes(b"garbage" * 2000)
    assert main(["agents"]) == 1
    assert f"memdesk backup restore {taken['id']}" in capsys.readouterr().err
    assert main(["backup", "restore", taken["id"]]) == 0
    assert "damaged store was kept" in capsys.readouterr().out
    assert _user_name() == "Ana"
    assert main(["agents"]) == 0


def test_a_store_too_damaged_to_look_encrypted_is_restored_with_its_snapshots_passphrase(capsys, tmp_path, monkeypatch):
    """Cut mid-page, an encrypted store no longer says it is encrypted, so no passphrase is asked
    to open it; restoring its encrypted snapshot asks for one (here from MEMDESK_PASSPHRASE_FILE)."""
    from memdesk.app.services import open_services
    from memdesk.core.embedding.hashing import HashingEmbedder

    secret = tmp_path / "passphrase.txt"
    secret.write_text("correct horse\n", encoding="utf-8")
    paths = Paths.from_environment()
    services = open_services(paths, key="correct horse", embedder=HashingEmbedder())
    services.settings_store.set("user_name", "Ana")
    snapshot = services.backups.create("daily")
    services.close()
    with open(paths.database, "r+b") as file:
        file.truncate(file.seek(0, 2) - 100)
    monkeypatch.setenv("MEMDESK_PASSPHRASE_FILE", str(secret))
    assert main(["backup", "restore", snapshot.id]) == 0
    assert "damaged store was kept" in capsys.readouterr().out
    db = open_database(paths.database, migrate=False, key="correct horse")
    try:
        assert json.loads(db.scalar("SELECT value FROM settings WHERE key = 'user_name'")) == "Ana"
    finally:
        db.close()
