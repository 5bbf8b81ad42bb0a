"""`memdesk doctor` says whether the store is encrypted, without the passphrase, and never calls an
encrypted store damaged."""

from __future__ import annotations

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder


def store_line(capsys) -> tuple[int, str]:
    code = main(["doctor", "--check", "store"])
    lines = [line for line in capsys.readouterr().out.splitlines() if " store " in f" {line} "]
    return code, lines[0]


def test_an_encrypted_store_is_reported_as_encrypted_and_passes_without_its_passphrase(
    memdesk_home, capsys, monkeypatch
):
    monkeypatch.delenv("MEMDESK_PASSPHRASE_FILE", raising=False)
    open_services(Paths.from_environment(), key="secret", embedder=HashingEmbedder()).close()
    database = Paths.from_environment().database
    before = database.read_bytes()
    code, line = store_line(capsys)
    assert code == 0, line
    assert line.startswith("ok") and "encrypted (SQLCipher" in line and "damaged" not in line
    assert database.read_bytes() == before


def test_a_plain_store_is_reported_as_not_encrypted(services, capsys):
    code, line = store_line(capsys)
    assert code == 0 and "integrity ok" in line and line.endswith("not encrypted")
