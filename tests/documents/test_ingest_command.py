"""`memdesk ingest` through its argparse command, with the real embedder."""

from __future__ import annotations

import argparse

import pytest

from desktop.cli.ingest import add_ingest_command
from desktop.core.storage import open_database
from desktop.paths import Paths

pytestmark = pytest.mark.embedder


def _run(argv):
    parser = argparse.ArgumentParser()
    add_ingest_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_ingest_command_prints_progress_and_failures(tmp_path, capsys):
    db = open_database(Paths.from_environment().ensure().database)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    db.close()
    good = tmp_path / "good.md"
    good.write_text("# Plans\n\nThe trip to Porto starts on Friday.", encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"")
    assert _run(["ingest", str(good), str(bad), "--agent", "sam"]) == 0
    out = capsys.readouterr().out
    assert "[reading]" in out and "[embedding]" in out
    assert "failed:" in out and "empty" in out
    assert "1 added" in out and "1 failed" in out
    assert _run(["ingest", str(good), "--agent", "nobody"]) == 1
