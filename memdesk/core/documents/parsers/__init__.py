"""Format parsers, chosen by file extension. Each turns raw bytes into sections of text that keep
where they came from (page number or heading), so archival hits can be cited.

Files are hostile input: whatever a parser raises becomes a DocumentError naming the file, so one
bad file is that file's failure and never stops a batch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents.parsers import code, docx_parser, html_parser, pdf_parser, tabular, text
from memdesk.core.documents.parsers.archive import check_unpacked_size
from memdesk.core.documents.parsers.base import ParsedDocument, Section

Parser = Callable[[bytes, str], ParsedDocument]

REGISTRY: dict[str, Parser] = {}
#: Extensions whose files are zip archives, measured unpacked before their parser sees them.
ZIP_BASED: set[str] = set()
for module in (text, pdf_parser, docx_parser, html_parser, tabular, code):
    for extension in module.EXTENSIONS:
        REGISTRY[extension] = module.parse
        if getattr(module, "ZIP_BASED", False):
            ZIP_BASED.add(extension)


def supported(path: Path) -> bool:
    return path.suffix.lower() in REGISTRY


def parse(path: Path, data: bytes, *, max_unpacked_bytes: int) -> ParsedDocument:
    extension = path.suffix.lower()
    parser = REGISTRY.get(extension)
    if parser is None:
        raise DocumentError(f"{path.name}: unsupported file type '{path.suffix or '(none)'}'")
    if extension in ZIP_BASED:
        check_unpacked_size(data, path.name, max_unpacked_bytes)
    try:
        document = parser(data, path.name)
    except DocumentError:
        raise
    except Exception as error:  # noqa: BLE001 - any parser failure is this file's failure
        raise DocumentError(f"{path.name}: {unreadable(error)}") from error
    if not any(s.text.strip() for s in document.sections):
        raise DocumentError(f"{path.name}: no text found (empty, or a scanned document without a text layer)")
    return document


def unreadable(error: BaseException) -> str:
    """A short reason for a failure no parser foresaw, for the person who added the file."""
    if isinstance(error, RecursionError):
        return "nested too deeply to read"
    if isinstance(error, MemoryError):
        return "too large to read into memory"
    detail = " ".join(str(error).split())
    detail = detail[:157] + "..." if len(detail) > 160 else detail
    return f"damaged, or not what its name says ({type(error).__name__}{': ' + detail if detail else ''})"


__all__ = ["REGISTRY", "ParsedDocument", "Section", "ZIP_BASED", "parse", "supported", "unreadable"]
