"""Word documents through python-docx: paragraphs and tables, headings as section labels."""

from __future__ import annotations

import io
import zipfile
import zlib

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents.parsers.base import ParsedDocument, Section

EXTENSIONS = (".docx",)
#: A zip archive: measured unpacked before it is parsed (parsers.archive).
ZIP_BASED = True


def parse(data: bytes, name: str) -> ParsedDocument:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    # SyntaxError: lxml's XMLSyntaxError for a part that is not well-formed XML.
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, SyntaxError, EOFError, zlib.error) as error:
        raise DocumentError(f"{name}: not a valid Word (.docx) document ({error})") from error
    sections: list[Section] = []
    heading: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if any(line.strip() for line in lines):
            sections.append(Section("\n\n".join(lines), section=heading))
        lines.clear()

    for paragraph in document.paragraphs:
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if style.lower().startswith(("heading", "title")) and paragraph.text.strip():
            flush()
            heading = paragraph.text.strip()
        if paragraph.text.strip():
            lines.append(paragraph.text)
    for table in document.tables:
        for row in table.rows:
            lines.append(" | ".join(cell.text.strip() for cell in row.cells))
    flush()
    title = (document.core_properties.title or "").strip() or name
    return ParsedDocument(title, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", sections)
