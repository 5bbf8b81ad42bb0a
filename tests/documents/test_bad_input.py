"""Bad input is reported per file with a reason and never stops the batch (hashing embedder:
these tests are about the pipeline's logic, not about meaning)."""

from __future__ import annotations

import os

import pytest

from memdesk.core.documents.ingest import Ingestor
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from tests.documents.conftest import write_pdf


def _ingest(store, clock, paths, **kwargs):
    db, agent_id = store
    return Ingestor(db, ArchivalMemory(db, HashingEmbedder(), clock), clock, **kwargs).ingest(paths, agent_id)


def _reasons(report):
    return {os.path.basename(f.path): f.reason for f in report.failures}


def test_each_bad_file_is_reported_and_the_good_one_still_lands(store, manual_clock, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("Saffron is harvested by hand in the autumn.", encoding="utf-8")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.md").write_text("   \n\n  ", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\ngarbage")
    (tmp_path / "fake.pdf").write_bytes(b"this is not a pdf at all")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "bad.json").write_text("{'single': quotes}", encoding="utf-8")
    (tmp_path / "big.txt").write_text("word " * 5000, encoding="utf-8")
    files = sorted(p for p in tmp_path.iterdir() if p.is_file())
    report = _ingest(store, manual_clock, [*files, tmp_path / "vanished.txt"], max_bytes=10_000)
    reasons = _reasons(report)
    assert report.added == 1
    assert "empty" in reasons["empty.txt"]
    assert "no text" in reasons["blank.md"] or "empty" in reasons["blank.md"]
    assert "binary" in reasons["binary.txt"]
    assert "not UTF-8" in reasons["latin1.txt"]
    assert "damaged" in reasons["corrupt.pdf"] or "no text" in reasons["corrupt.pdf"]
    assert "not a PDF" in reasons["fake.pdf"]
    assert "Word" in reasons["broken.docx"]
    assert "invalid JSON" in reasons["bad.json"]
    assert "too large" in reasons["big.txt"]
    assert "no such file" in reasons["vanished.txt"]
    db, agent_id = store
    assert db.scalar("SELECT COUNT(*) FROM documents WHERE status = 'failed'") == len(files) - 1


def test_encrypted_pdf_is_refused_with_a_hint(store, manual_clock, tmp_path):
    from pypdf import PdfReader, PdfWriter

    plain = tmp_path / "plain.pdf"
    write_pdf(plain, ["Secret launch codes."])
    writer = PdfWriter()
    for page in PdfReader(plain).pages:
        writer.add_page(page)
    writer.encrypt("hunter2", algorithm="RC4-128")
    locked = tmp_path / "locked.pdf"
    with open(locked, "wb") as handle:
        writer.write(handle)
    report = _ingest(store, manual_clock, [locked])
    assert "encrypted" in _reasons(report)["locked.pdf"]


def test_a_file_that_vanishes_between_listing_and_reading(store, manual_clock, tmp_path, monkeypatch):
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("Here today, gone tomorrow.", encoding="utf-8")
    from memdesk.core.documents import ingest as ingest_module

    real_discover = ingest_module.discover

    def discover_then_delete(paths):
        found = list(real_discover(paths))
        doomed.unlink()
        return iter(found)

    monkeypatch.setattr(ingest_module, "discover", discover_then_delete)
    report = _ingest(store, manual_clock, [tmp_path])
    assert "vanished" in _reasons(report)["doomed.txt"]


def test_symlink_loops_end_and_nothing_outside_the_paths_is_read(store, manual_clock, tmp_path):
    inside = tmp_path / "inside"
    outside = tmp_path / "outside"
    (inside / "deep").mkdir(parents=True)
    outside.mkdir()
    (inside / "kept.txt").write_text("Inside the folder.", encoding="utf-8")
    (outside / "secret.txt").write_text("Outside the folder.", encoding="utf-8")
    (inside / "deep" / "loop").symlink_to(inside, target_is_directory=True)
    (inside / "escape").symlink_to(outside, target_is_directory=True)
    (inside / "secret-link.txt").symlink_to(outside / "secret.txt")
    report = _ingest(store, manual_clock, [inside])
    db, _ = store
    paths = [r[0] for r in db.query("SELECT path FROM documents")]
    assert report.added == 1 and paths == [str((inside / "kept.txt").absolute())]
    assert not db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%Outside%'")


@pytest.mark.parametrize("name", ["photo.jpg", "archive.zip"])
def test_unsupported_file_named_explicitly_is_reported(store, manual_clock, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\xff\xd8\xff\xe0 bytes")
    assert "unsupported" in _reasons(_ingest(store, manual_clock, [path]))[name]
