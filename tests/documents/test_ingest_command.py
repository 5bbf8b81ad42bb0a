"""`memdesk ingest` through its argparse command, with the real embedder."""

from __future__ import annotations

import argparse

import pytest

from memdesk.cli.ingest import add_ingest_command
from memdesk.core.base.paths import Paths
from memdesk.core.storage import open_database

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


def test_hostile_files_are_listed_with_their_reasons_and_the_batch_finishes(tmp_path, capsys):
    from tests.documents.conftest import write_docx
    from tests.documents.test_hostile_files import _rewrite_zip

    db = open_database(Paths.from_environment().ensure().database)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    db.close()
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "good.md").write_text("# Plans\n\nThe trip to Porto starts on Friday.", encoding="utf-8")
    (folder / "nested.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (folder / "wide.csv").write_text("name,notes\nann," + "x" * 200_000 + "\n", encoding="utf-8")
    write_docx(folder / "bad-xml.docx", "Minutes", ["Nothing to see."])
    _rewrite_zip(folder / "bad-xml.docx", {"word/document.xml": b"<w:document><unclosed>"})
    assert _run(["ingest", str(folder), "--agent", "sam"]) == 0
    captured = capsys.readouterr()
    failed = sorted(line for line in captured.out.splitlines() if line.startswith("failed: "))
    assert [line.split(": ", 2)[1].rsplit("/", 1)[1] for line in failed] == ["bad-xml.docx", "nested.json", "wide.csv"]
    assert (
        "nested too deeply" in captured.out
        and "field larger than field limit" in captured.out
        and "not a valid Word" in captured.out
    )
    assert "done: 1 added, 0 replaced, 0 unchanged, 3 failed" in captured.out
    assert "Traceback" not in captured.out + captured.err
