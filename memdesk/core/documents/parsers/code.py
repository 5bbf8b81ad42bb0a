"""Source code: kept verbatim; top-level definitions become section labels so hits cite them."""

from __future__ import annotations

import re

from memdesk.core.documents.parsers.base import ParsedDocument, Section, decode_text

EXTENSIONS = (
    ".py",
    ".js",
    ".ts",
    ".tsx",
    ".jsx",
    ".java",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".cs",
    ".go",
    ".rs",
    ".rb",
    ".php",
    ".swift",
    ".kt",
    ".scala",
    ".sh",
    ".sql",
    ".lua",
    ".r",
    ".m",
    ".toml",
    ".yaml",
    ".yml",
    ".ini",
    ".cfg",
)

# A line at column 0 that starts a definition in most C-like and scripting languages.
_DEFINITION = re.compile(
    r"^(?:export\s+)?(?:async\s+)?(?:pub\s+)?(?:def|class|function|func|fn|interface|struct|impl|enum|module|type)\s+(\w+)",
    re.MULTILINE,
)


def parse(data: bytes, name: str) -> ParsedDocument:
    text = decode_text(data, name)
    matches = list(_DEFINITION.finditer(text))
    sections = []
    if not matches or matches[0].start() > 0:
        sections.append(Section(text[: matches[0].start() if matches else len(text)], offset=0))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.append(Section(text[match.start() : end], section=match.group(1), offset=match.start()))
    return ParsedDocument(name, "text/x-source", [s for s in sections if s.text.strip()])
