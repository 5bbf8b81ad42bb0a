"""The Markdown of a memory folder: front matter (``key: JSON value`` lines between ``---``, which
YAML reads too), items marked by an HTML comment (invisible when rendered, so a file reads as a
document), and stable, portable file names."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

MARK = "<!-- memdesk:"
_ESCAPED = re.compile(r"^(\\*)<!-- memdesk:", re.MULTILINE)
_UNESCAPED = re.compile(r"^\\(\\*<!-- memdesk:)", re.MULTILINE)
_ITEM = re.compile(r"^<!-- memdesk:(?P<kind>[a-z]+) (?P<data>\{.*\}) -->$", re.MULTILINE)


def front_matter(fields: dict[str, Any], body: str) -> str:
    lines = ["---"] + [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()] + ["---", ""]
    return "\n".join(lines) + body + "\n"


def read_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(fields, body); the body exactly as written (the newline ``front_matter`` adds is taken off)."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}, text
    fields = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            try:
                fields[key.strip()] = json.loads(value.strip())
            except ValueError:
                fields[key.strip()] = value.strip()
    body = text[end + 5 :]
    return fields, body[:-1] if body.endswith("\n") else body


def escape(text: str) -> str:
    """A line of the text that looks like an item's mark gets one more backslash (undone on reading)."""
    return _ESCAPED.sub(lambda m: "\\" + m.group(1) + "<!-- memdesk:", text)


def unescape(text: str) -> str:
    return _UNESCAPED.sub(r"\1", text)


def item(kind: str, data: dict[str, Any], text: str) -> str:
    """One item: its mark, a blank line, its text, a blank line."""
    return f"{MARK}{kind} {json.dumps(data, ensure_ascii=False, sort_keys=True)} -->\n\n{escape(text)}\n\n"


def items(body: str) -> list[tuple[str, dict[str, Any], str]]:
    """The items of a body, each (kind, data, text) with the text exactly as given to ``item``."""
    marks = list(_ITEM.finditer(body))
    out = []
    for n, found in enumerate(marks):
        start = found.end() + 2  # the mark's line end and the blank line
        end = marks[n + 1].start() if n + 1 < len(marks) else len(body)
        text = body[start:end]
        for tail in ("\n\n", "\n"):  # an editor may drop the last blank line of a file
            if text.endswith(tail):
                text = text[: -len(tail)]
                break
        try:
            data = json.loads(found["data"])
        except ValueError:
            continue
        out.append((found["kind"], data, unescape(text)))
    return out


def slug(text: str, fallback: str = "untitled", limit: int = 60) -> str:
    """A file name part that every file system and git accept, stable for the same text."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:limit].strip("-")
    return cleaned or fallback


def unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``... when taken; recorded as taken."""
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate
