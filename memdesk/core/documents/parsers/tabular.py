"""CSV and JSON: rows and records become lines of ``key: value`` so each chunk reads on its own."""

from __future__ import annotations

import csv
import io
import json

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents.parsers.base import ParsedDocument, Section, decode_text

EXTENSIONS = (".csv", ".tsv", ".json", ".jsonl")


def parse(data: bytes, name: str) -> ParsedDocument:
    text = decode_text(data, name)
    lower = name.lower()
    if lower.endswith((".csv", ".tsv")):
        try:
            return ParsedDocument(name, "text/csv", [Section(_csv(text, "\t" if lower.endswith(".tsv") else ","))])
        except csv.Error as error:  # e.g. a field longer than the csv module's field size limit
            raise DocumentError(f"{name}: cannot be read as CSV ({error})") from error
    try:
        if lower.endswith(".jsonl"):
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text)
        lines = _flatten(records, "")
    except json.JSONDecodeError as error:
        raise DocumentError(f"{name}: invalid JSON ({error.msg} at line {error.lineno})") from error
    except RecursionError as error:  # both the decoder and _flatten recurse once per level
        raise DocumentError(f"{name}: the JSON is nested too deeply to read") from error
    return ParsedDocument(name, "application/json", [Section("\n\n".join(lines))])


def _csv(text: str, delimiter: str) -> str:
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        return ""
    header = rows[0]
    lines = []
    for row in rows[1:] or [header]:
        if rows[1:]:
            # strict=False: CSV rows may be ragged; cells past the header are dropped, a short row shows what it has.
            lines.append("; ".join(f"{h}: {v}" for h, v in zip(header, row, strict=False) if v.strip()))
        else:
            lines.append("; ".join(row))
    return "\n".join(lines)


def _flatten(value, prefix: str) -> list[str]:
    """One line per leaf with its dotted path; list items of records become paragraphs."""
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            lines.extend(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return lines
    if isinstance(value, list):
        if all(isinstance(item, (dict, list)) for item in value) and value:
            return ["\n".join(_flatten(item, prefix)) for item in value]
        return [f"{prefix}: " + ", ".join(str(v) for v in value)] if prefix else [", ".join(str(v) for v in value)]
    return [f"{prefix}: {value}" if prefix else str(value)]
