"""What the planning checks of the values it passes on, so that nothing the import stores can fail
halfway or break a later read (``memdesk history``, retention, the Knowledge panel): ids that are
text or numbers, numbers that fit SQLite's integers, times that parse, history entries whose
every field has its type. A value that does not fit is a fix-up the summary reports, or, when the
file cannot be read as intended, an AgentFileError; nothing is written either way.

``MALFORMED`` are the exceptions that reading some other unexpected shape can still raise; the
import turns them into an AgentFileError (``damaged``), never a crash.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdesk.core.base.clock import iso
from memdesk.core.base.errors import AgentFileError
from memdesk.core.transfer.agentfile.summary import ImportSummary
from memdesk.core.transfer.values import MAX_NUMBER, moment, number, shown

__all__ = ["MALFORMED", "damaged", "document_problem", "history_problem", "number", "plan_history", "ref_of", "shown"]

MALFORMED = (KeyError, TypeError, ValueError, OverflowError, AttributeError, IndexError, MemoryError, RecursionError)
DAMAGED_HINT = "the file is damaged or not from Letta or MemDesk; nothing of it was imported"


def damaged(error: BaseException, name: str = "The agent file") -> AgentFileError:
    """An unexpected shape met while reading the file, as the error the user sees."""
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if len(detail) > 160:
        detail = detail[:157] + "..."
    return AgentFileError(f"{name} has a field MemDesk cannot read ({detail})", hint=DAMAGED_HINT)


def ref_of(value: Any) -> str | int | None:
    """An id as the file names things by (text or a number), or None for anything else."""
    if isinstance(value, str) or (type(value) is int and abs(value) <= MAX_NUMBER):
        return value
    return None


def optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


_TEXT_FIELDS = ("kind", "action", "source")
_OPTIONAL_TEXT = ("before", "after", "message", "step")
_OPTIONAL_OBJECTS = ("before_meta", "after_meta")


def history_problem(entry: Any) -> str | None:
    """Why a carried history entry cannot be stored as it is (None: it can)."""
    if not isinstance(entry, dict):
        return "is not an object"
    for name in _TEXT_FIELDS:
        if not isinstance(entry.get(name), str) or not entry[name]:
            return f"has no {name}"
    for name in ("label", "note"):
        if not isinstance(entry.get(name, ""), str):
            return f"has a {type(entry[name]).__name__} as its {name}"
    for name in _OPTIONAL_TEXT:
        if not optional_text(entry.get(name)):
            return f"has a {type(entry[name]).__name__} as its {name}"
    for name in _OPTIONAL_OBJECTS:
        if entry.get(name) is not None and not isinstance(entry[name], dict):
            return f"has a {type(entry[name]).__name__} as its {name}"
    for name in ("passage", "graph_target", "reverts"):
        if entry.get(name) is not None and number(entry[name]) is None:
            return f"has {shown(entry[name])} as its {name}, not a number"
    if moment(entry.get("at")) is None:
        return f"has no valid time ({shown(entry.get('at'))})"
    return None


def plan_history(entries: list, owner: str, summary: ImportSummary) -> list[dict[str, Any]]:
    """The carried history entries that can be stored, their times in the store's form and each
    ``reverts`` pointing at its entry's new position; every entry left out is reported."""
    kept: list[dict[str, Any]] = []
    positions: dict[int, int] = {}
    for index, entry in enumerate(entries):
        problem = history_problem(entry)
        if problem is not None:
            summary.fix(f"History entry {index + 1} of {owner!r} {problem}: it was not imported")
            continue
        at = moment(entry["at"]) or datetime.now().astimezone()  # checked above: never the fallback
        reverts = entry.get("reverts")
        positions[index] = len(kept)
        kept.append(
            {
                **entry,
                "label": entry.get("label", ""),
                "note": entry.get("note", ""),
                "at": iso(at),
                "reverts": positions.get(reverts) if isinstance(reverts, int) and reverts < index else None,
            }
        )
    return kept


_DOCUMENT_TEXT = ("title", "content_hash", "mime", "status", "error")


def document_problem(document: Any) -> str | None:
    """Why a carried document row cannot be stored (None: it can)."""
    if not isinstance(document, dict):
        return "is not an object"
    if not isinstance(document.get("id"), str):
        return "has no id"
    if not isinstance(document.get("path"), str) or not document["path"]:
        return "has no path"
    for name in _DOCUMENT_TEXT:
        if not optional_text(document.get(name)):
            return f"has a {type(document[name]).__name__} as its {name}"
    for name in ("size_bytes", "chunk_count"):
        if document.get(name) is not None and number(document[name], minimum=0) is None:
            return f"has {shown(document[name])} as its {name}, not a number"
    if moment(document.get("created_at")) is None:
        return f"has no valid time ({shown(document.get('created_at'))})"
    if document.get("updated_at") is not None and moment(document["updated_at"]) is None:
        return f"has {shown(document['updated_at'])} as its update time"
    return None
