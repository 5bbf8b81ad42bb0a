"""Hostile documents: whatever a parser raises is that file's failure with a short reason, the
batch goes on, and a zip-based document that would unpack past the cap is refused unread."""

from __future__ import annotations

import io
import os
import re
import zipfile

import pytest

from memdesk.core.documents import parsers
from memdesk.core.documents.ingest import MAX_UNPACKED_BYTES, Ingestor
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from tests.documents.conftest import write_docx, write_pdf


def _ingest(store, clock, paths, **kwargs):
    db, agent_id = store
    return Ingestor(db, ArchivalMemory(db, HashingEmbedder(), clock), clock, **kwargs).ingest(paths, agent_id)


def _reasons(report):
    return {os.path.basename(f.path): f.reason for f in report.failures}


def _rewrite_zip(path, replace: dict[str, bytes], add: dict[str, int] | None = None) -> None:
    """Copy a zip with some parts replaced; ``add`` appends parts of that many zero bytes, written
    in pieces so the test never holds them in memory."""
    with zipfile.ZipFile(path) as source:
        parts = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in parts:
            target.writestr(name, replace.get(name, data))
        for name, size in (add or {}).items():
            with target.open(name, "w", force_zip64=True) as part:
                piece = b"\0" * (1024 * 1024)
                for _ in range(size // len(piece)):
                    part.write(piece)
                part.write(b"\0" * (size % len(piece)))


def write_pdf_bomb(path, expanded_bytes: int) -> None:
    """A one-page PDF whose content stream inflates to ``expanded_bytes`` (mostly spaces)."""
    write_pdf(path, ["Hello"], compress=True, padding=expanded_bytes)


def test_each_hostile_file_is_that_files_failure_and_the_good_file_still_lands(store, manual_clock, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("The lighthouse keeper winds the clock every Sunday.", encoding="utf-8")
    (tmp_path / "nested.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (tmp_path / "wide.csv").write_text("name,notes\nann," + "x" * 200_000 + "\n", encoding="utf-8")
    bad_xml = tmp_path / "bad-xml.docx"
    write_docx(bad_xml, "Minutes", ["Nothing to see."])
    _rewrite_zip(bad_xml, {"word/document.xml": b"<w:document><w:body><unclosed></w:document>"})
    write_pdf_bomb(tmp_path / "bomb.pdf", 80_000_000)  # past pypdf's 75 MB limit on an inflated stream
    report = _ingest(store, manual_clock, sorted(tmp_path.iterdir()))
    reasons = _reasons(report)
    assert report.added == 1 and set(reasons) == {"nested.json", "wide.csv", "bad-xml.docx", "bomb.pdf"}
    assert reasons["nested.json"] == "nested.json: the JSON is nested too deeply to read"
    assert reasons["wide.csv"].startswith("wide.csv: cannot be read as CSV (field larger than field limit")
    assert reasons["bad-xml.docx"].startswith("bad-xml.docx: not a valid Word (.docx) document")
    assert (
        reasons["bomb.pdf"].startswith("bomb.pdf: the PDF is damaged and cannot be read")
        and "limit" in reasons["bomb.pdf"].lower()
    )
    assert all(len(reason) < 300 for reason in reasons.values())  # a reason, not a dump
    db, agent_id = store
    assert db.scalar("SELECT COUNT(*) FROM documents WHERE status = 'failed'") == 4
    assert db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%lighthouse keeper%'") == 1


def test_a_failure_no_parser_foresaw_is_still_only_that_files_failure(store, manual_clock, tmp_path, monkeypatch):
    def broken(data, name):
        raise RuntimeError("the parser tripped over something new\nwith a second line")

    monkeypatch.setitem(parsers.REGISTRY, ".md", broken)
    (tmp_path / "odd.md").write_text("# Odd\n\ntext", encoding="utf-8")
    (tmp_path / "good.txt").write_text("Plain text still lands.", encoding="utf-8")
    report = _ingest(store, manual_clock, sorted(tmp_path.iterdir()))
    assert report.added == 1
    assert _reasons(report) == {
        "odd.md": "odd.md: damaged, or not what its name says "
        "(RuntimeError: the parser tripped over something new with a second line)"
    }


def test_a_docx_that_unpacks_past_the_cap_is_refused_before_it_is_read(store, manual_clock, tmp_path, monkeypatch):
    import docx

    bomb = tmp_path / "bomb.docx"
    write_docx(bomb, "Report", ["A short, real document."])
    _rewrite_zip(
        bomb, {}, add={"word/media/padding.bin": MAX_UNPACKED_BYTES + 5 * 1024 * 1024}
    )  # zeros: about 100 KB packed
    assert bomb.stat().st_size < 1024 * 1024
    monkeypatch.setattr(docx, "Document", lambda *args, **kwargs: pytest.fail("the archive was opened by the parser"))
    report = _ingest(store, manual_clock, [bomb])
    [reason] = _reasons(report).values()
    assert re.fullmatch(
        r"bomb\.docx: unpacks to 10[56] MB, more than the 100 MB a compressed document may hold; it was not read"
        r" \(a document this large is probably damaged or made to exhaust memory\)",
        reason,
    )


def test_a_docx_is_measured_against_the_ingestors_cap_and_read_under_it(store, manual_clock, tmp_path):
    letter = tmp_path / "letter.docx"
    write_docx(letter, "Invitation", ["The reception is at the lighthouse."])
    _rewrite_zip(letter, {}, add={"word/media/padding.bin": 2 * 1024 * 1024})
    report = _ingest(store, manual_clock, [letter], max_unpacked_bytes=1024 * 1024)
    assert "MB, more than the 1 MB a compressed document may hold" in _reasons(report)["letter.docx"]
    assert _ingest(store, manual_clock, [letter], max_unpacked_bytes=4 * 1024 * 1024).added == 1


def test_a_zip_directory_that_understates_a_part_yields_no_more_than_it_declares(tmp_path):
    """Why the directory's sum bounds the read too: zipfile stops inflating a part at its declared
    size, so a lying directory makes a damaged file, never a larger one."""
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("part.xml", b"<a>" + b" " * 5_000_000 + b"</a>")
    data = bytearray(raw.getvalue())
    directory = data.rindex(b"PK\x01\x02")
    data[directory + 24 : directory + 28] = (1000).to_bytes(4, "little")  # the uncompressed size it declares
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        assert archive.infolist()[0].file_size == 1000
        inflated = 0
        with pytest.raises(zipfile.BadZipFile, match="CRC"), archive.open("part.xml") as part:
            while chunk := part.read(100):
                inflated += len(chunk)
    assert inflated <= 1000
