"""PDF through pypdf, one section per page so hits cite their page."""

from __future__ import annotations

import io
import logging
import zlib

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents.parsers.base import ParsedDocument, Section

EXTENSIONS = (".pdf",)


def parse(data: bytes, name: str) -> ParsedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not data.startswith(b"%PDF"):
        raise DocumentError(f"{name}: not a PDF file (no %PDF header)")
    # pypdf logs warnings for every recoverable oddity; the user only needs our verdict.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise DocumentError(
                f"{name}: the PDF is encrypted", hint="remove the password in a PDF viewer and add it again"
            )
        title = None
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title).strip() or None
        sections = [
            Section(page.extract_text() or "", page=number) for number, page in enumerate(reader.pages, start=1)
        ]
    except DocumentError:
        raise
    # PyPdfError: every pypdf error, its safety limits (LimitReachedError) included.
    except (
        PyPdfError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        RecursionError,
        zlib.error,
    ) as error:
        raise DocumentError(f"{name}: the PDF is damaged and cannot be read ({error})") from error
    return ParsedDocument(title or name, "application/pdf", sections)
