"""HTML through BeautifulSoup's built-in html.parser: visible text only, headings as sections."""

from __future__ import annotations

from memdesk.core.documents.parsers.base import ParsedDocument, Section, decode_text

EXTENSIONS = (".html", ".htm", ".xhtml")

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKS = ("p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption") + _HEADINGS


def parse(data: bytes, name: str) -> ParsedDocument:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(decode_text(data, name), "html.parser")
    for hidden in soup(["script", "style", "noscript", "template", "head"]):
        hidden.decompose()
    title_tag = BeautifulSoup(decode_text(data, name), "html.parser").title
    title = title_tag.get_text(strip=True) if title_tag else ""
    sections: list[Section] = []
    heading: str | None = None
    lines: list[str] = []
    blocks = [b for b in soup.find_all(_BLOCKS) if not b.find_parent(_BLOCKS)]
    for block in blocks:
        text = " ".join(block.get_text(" ", strip=True).split())
        if not text:
            continue
        if block.name in _HEADINGS:
            if lines:
                sections.append(Section("\n\n".join(lines), section=heading))
                lines = []
            heading = text
        lines.append(text)
    if lines:
        sections.append(Section("\n\n".join(lines), section=heading))
    if not blocks:  # markup without block elements: take all visible text
        sections = [Section(" ".join(soup.get_text(" ", strip=True).split()))]
    return ParsedDocument(title or name, "text/html", sections)
