"""Encrypting, re-keying or decrypting the store takes its snapshots along: none stays readable
without the passphrase, none stays under the old one, `backup list` says what each is, and
DAMAGED means damage (issue 35, item 1)."""

from __future__ import annotations

import json

from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.storage import open_database
from memdesk.core.storage.cipher_pages import passphrase_fits
from memdesk.core.storage.driver import PLAIN_HEADER, file_is_encrypted
from memdesk.session.sent_before_open import SentBeforeOpen

PIN = "PIN 4711"


def _write(tmp_path, monkeypatch, env: str, text: str) -> None:
    path = tmp_path / f"{env}.txt"
    path.write_text(text + "\n", encoding="utf-8")
    monkeypatch.setenv(env, str(path))


def _snapshots(capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["backup", "list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["snapshots"]


def _messages_mention(paths: Paths, key: str, text: str) -> bool:
    db = open_database(paths.database, key=key, migrate=False)
    try:
        return db.scalar("SELECT count(*) FROM messages WHERE content LIKE ?", (f"%{text}%",)) > 0
    finally:
        db.close()


def test_encrypting_then_rekeying_takes_every_snapshot_along(tmp_path, monkeypatch, capsys):
    assert main(["agents", "create", "sam", "--human", PIN]) == 0
    assert main(["backup", "create"]) == 0
    paths = Paths.from_environment()
    (taken,) = _snapshots(capsys)
    assert PIN.encode() in open(taken["path"], "rb").read()
    # A message typed in the first window of an earlier start, never delivered, waits in a plain file.
    SentBeforeOpen(paths.sent_before_open).add("remember my locker code 9377")

    _write(tmp_path, monkeypatch, "MEMDESK_PASSPHRASE_FILE", "first passphrase")
    assert main(["encrypt"]) == 0
    said = capsys.readouterr().out
    snapshot = taken["path"]
    with open(snapshot, "rb") as handle:
        data = handle.read()
    assert not data.startswith(PLAIN_HEADER) and PIN.encode() not in data
    assert "1 snapshot(s) were encrypted like it" in said
    (listed,) = _snapshots(capsys)
    assert listed["id"] == taken["id"] and listed["encrypted"] and listed["state"] == "verified"
    assert passphrase_fits(snapshot, "first passphrase")
    assert not paths.sent_before_open.exists()  # folded into the store before it was encrypted
    assert _messages_mention(paths, "first passphrase", "locker code 9377")
    assert main(["backup", "list"]) == 0
    assert "verified, encrypted" in capsys.readouterr().out

    _write(tmp_path, monkeypatch, "MEMDESK_NEW_PASSPHRASE_FILE", "second passphrase")
    assert main(["encrypt", "--change"]) == 0
    assert "re-encrypted with the new passphrase" in capsys.readouterr().out
    monkeypatch.delenv("MEMDESK_NEW_PASSPHRASE_FILE")
    _write(tmp_path, monkeypatch, "MEMDESK_PASSPHRASE_FILE", "second passphrase")
    assert passphrase_fits(snapshot, "second passphrase") and not passphrase_fits(snapshot, "first passphrase")
    assert main(["backup", "verify"]) == 0
    out = capsys.readouterr().out
    assert "DAMAGED" not in out and f"{taken['id']}" in out and "\tok" in out
    assert main(["backup", "restore", taken["id"]]) == 0  # restorable under the passphrase now in use


def test_a_snapshot_left_under_an_earlier_passphrase_is_named_not_called_damaged(tmp_path, monkeypatch, capsys):
    assert main(["agents", "create", "sam", "--human", PIN]) == 0
    _write(tmp_path, monkeypatch, "MEMDESK_PASSPHRASE_FILE", "first passphrase")
    assert main(["encrypt"]) == 0
    assert main(["backup", "create"]) == 0
    (taken,) = _snapshots(capsys)
    # As an older MemDesk left it: the store re-keyed, the snapshot not.
    from memdesk.core.storage.encryption import change_key

    change_key(Paths.from_environment().database, "first passphrase", "second passphrase")
    _write(tmp_path, monkeypatch, "MEMDESK_PASSPHRASE_FILE", "second passphrase")
    assert main(["backup", "verify"]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED" not in out and "earlier passphrase" in out
    (listed,) = _snapshots(capsys)
    assert listed["state"] == "earlier passphrase"
    assert main(["backup", "list"]) == 0
    assert "encrypted with an earlier passphrase" in capsys.readouterr().out
    _write(tmp_path, monkeypatch, "MEMDESK_NEW_PASSPHRASE_FILE", "third passphrase")
    assert main(["encrypt", "--change"]) == 0
    out = capsys.readouterr().out
    assert f"Snapshot {taken['id']} was left as it was: it is encrypted with an earlier passphrase" in out
    assert f"memdesk backup remove {taken['id']}" in out
    monkeypatch.delenv("MEMDESK_NEW_PASSPHRASE_FILE")
    _write(tmp_path, monkeypatch, "MEMDESK_PASSPHRASE_FILE", "third passphrase")
    assert main(["backup", "remove", taken["id"], "--yes"]) == 0
    assert _snapshots(capsys) == []


def test_decrypting_decrypts_the_snapshots_so_they_stay_restorable(tmp_path, monkeypatch, capsys):
    assert main(["agents", "create", "sam", "--human", PIN]) == 0
    _write(tmp_path, monkeypatch, "MEMDESK_PASSPHRASE_FILE", "first passphrase")
    assert main(["encrypt"]) == 0
    assert main(["backup", "create"]) == 0
    (taken,) = _snapshots(capsys)
    assert main(["decrypt"]) == 0
    said = capsys.readouterr().out
    assert not file_is_encrypted(taken["path"])
    assert "1 snapshot(s) were decrypted like it" in said
    monkeypatch.delenv("MEMDESK_PASSPHRASE_FILE")
    assert main(["backup", "restore", taken["id"]]) == 0
