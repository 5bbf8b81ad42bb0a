"""Format parsers, chosen by file extension. Each turns raw bytes into sections of text that keep
where they came from (page number or heading), so archival hits can be cited."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from desktop.core.documents.parsers.base import ParsedDocument, Section
from desktop.core.documents.parsers import code, docx_parser, html_parser, pdf_parser, tabular, text
from desktop.errors import DocumentError

Parser = Callable[[bytes, str], ParsedDocument]

REGISTRY: dict[str, Parser] = {}
for module in (text, pdf_parser, docx_parser, html_parser, tabular, code):
    for extension in module.EXTENSIONS:
        REGISTRY[extension] = module.parse


def supported(path: Path) -> bool:
    return path.suffix.lower() in REGISTRY


def parse(path: Path, data: bytes) -> ParsedDocument:
    parser = REGISTRY.get(path.suffix.lower())
    if parser is None:
        raise DocumentError(f"{path.name}: unsupported file type '{path.suffix or '(none)'}'")
    document = parser(data, path.name)
    if not any(s.text.strip() for s in document.sections):
        raise DocumentError(f"{path.name}: no text found (empty, or a scanned document without a text layer)")
    return document


__all__ = ["REGISTRY", "ParsedDocument", "Section", "parse", "supported"]
