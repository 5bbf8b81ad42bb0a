"""Fixtures for document tests: a store with one agent, and generated files of every format."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from memdesk.core.base.clock import ManualClock
from memdesk.core.storage import open_database


@pytest.fixture
def store(tmp_path, new_store):
    db = open_database(new_store(tmp_path / "store" / "memdesk.sqlite3"))
    agent_id = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('reader', '2026-01-01T00:00:00+00:00', '')"
    ).lastrowid
    yield db, agent_id
    db.close()


@pytest.fixture
def manual_clock():
    return ManualClock()


def write_pdf(path: Path, pages: list[str], *, compress: bool = False, padding: int = 0) -> None:
    """A minimal valid PDF with one text line per page, written by hand (pypdf cannot draw text).
    ``padding`` spaces follow each page's text: compressed, a small file that inflates to a lot."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font_id = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode() + b" " * padding
        stream = zlib.compress(content) if compress else content
        extra = b" /Filter /FlateDecode" if compress else b""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R"
            f" /Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length " + str(len(stream)).encode() + extra + b" >>\nstream\n" + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))


def write_docx(path: Path, heading: str, paragraphs: list[str]) -> None:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    document.save(str(path))


@pytest.fixture
def corpus(tmp_path) -> dict[str, Path]:
    """One small real file per supported format, each with a sentence only it contains."""
    folder = tmp_path / "docs"
    folder.mkdir()
    files = {
        "txt": folder / "notes.txt",
        "md": folder / "guide.md",
        "pdf": folder / "manual.pdf",
        "docx": folder / "letter.docx",
        "html": folder / "page.html",
        "csv": folder / "plants.csv",
        "json": folder / "config.json",
        "py": folder / "tool.py",
    }
    files["txt"].write_text(
        "Shopping list.\n\nThe blue kettle is in the attic next to the old piano.\n", encoding="utf-8"
    )
    files["md"].write_text(
        "# Garden guide\n\nIntro text.\n\n## Watering\n\nWater the tomatoes every morning before nine.\n",
        encoding="utf-8",
    )
    write_pdf(files["pdf"], ["Chapter one is about engines.", "The reactor coolant valve must be checked weekly."])
    write_docx(files["docx"], "Invitation", ["Dear Ana,", "The wedding reception will be held at the lighthouse."])
    files["html"].write_text(
        "<html><head><title>Trip</title><script>var hidden='scriptword';</script></head><body>"
        "<h1>Lisbon trip</h1><p>We took the yellow tram up to the castle.</p></body></html>",
        encoding="utf-8",
    )
    files["csv"].write_text("plant,light\nfern,shade\ncactus,full sun\n", encoding="utf-8")
    files["json"].write_text('{"server": {"port": 8421, "owner": "quartermaster"}}', encoding="utf-8")
    files["py"].write_text("import os\n\n\ndef launch_rocket(fuel):\n    return fuel * 2\n", encoding="utf-8")
    return files
