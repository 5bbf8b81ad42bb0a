"""Plain text and Markdown. Markdown headings become section labels."""

from __future__ import annotations

import re

from memdesk.core.documents.parsers.base import ParsedDocument, Section, decode_text

EXTENSIONS = (".txt", ".text", ".md", ".markdown", ".rst", ".log")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)


def parse(data: bytes, name: str) -> ParsedDocument:
    text = decode_text(data, name)
    if not name.lower().endswith((".md", ".markdown")):
        return ParsedDocument(name, "text/plain", [Section(text, offset=0)])
    sections = []
    headings = list(_HEADING.finditer(text))
    if not headings or headings[0].start() > 0:
        sections.append(Section(text[: headings[0].start() if headings else len(text)], offset=0))
    for i, match in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        sections.append(Section(text[match.start() : end], section=match.group(2), offset=match.start()))
    title = headings[0].group(2) if headings and headings[0].group(1) == "#" else name
    return ParsedDocument(title, "text/markdown", [s for s in sections if s.text.strip()])
