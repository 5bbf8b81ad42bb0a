"""The text a forget finds outside the kinds of memory it knows by name (finder.KINDS): the system
prompt, block descriptions, the agent's options, what an imported agent file brought along (its
details kept for re-export, its tools), the graph's record of the user's name, an error message
quoting a source. The schema walk (schema_text.py) finds them; here they are described for the
preview and removed.

Text loses the lines (in one-line text, the sentences) that hold the phrases, as a core-memory
block does; JSON loses the keys that hold them and keeps its shape, each string without them.
Some rows go whole (``WHOLE_ROWS``): a tool's code cannot lose lines and still be the code the
user read before enabling it, a block named after the person is about them, and the graph's
record of the user's name is nothing but the name, and a proposal of what MemDesk learned from
imported conversations is about what it names (a proposal without it says nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memdesk.core.memory.erase import erase_block
from memdesk.core.memory.forget.matching import Phrases
from memdesk.core.memory.forget.schema_text import TextTable, where_key
from memdesk.core.storage import Database

#: Tables whose row goes whole when these of its columns hold the phrases (None: any of them).
WHOLE_ROWS: dict[str, frozenset[str] | None] = {
    "imported_tools": None,
    "graph_user_names": None,
    "learned_proposals": None,
    "memory_blocks": frozenset({"label"}),
}
#: How people call the places (a column without a name here is shown as table.column).
_LABELS = {
    ("agents", "system_prompt"): "the system prompt",
    ("agents", "config"): "the agent's options",
    ("agents", "memory_view"): "core memory as the model last saw it",
    ("memory_blocks", "description"): "a core-memory block's description",
    ("memory_blocks", "label"): "a core-memory block named after it (removed)",
    ("agent_file_extras", "data"): "details kept from an imported agent file",
    ("imported_tools", None): "an imported tool (removed)",
    ("graph_user_names", None): "your name in the knowledge graph",
    ("graph_queue", "last_error"): "a knowledge-graph extraction error",
    ("learned_proposals", None): "a proposal of what MemDesk learned (removed)",
    ("imported_conversations", "title"): "an imported conversation's title",
    ("imported_conversations", "assistant"): "the assistant of an imported conversation",
    ("imported_conversations", "external_id"): "an imported conversation's name in its export",
    ("imported_conversations", "skipped"): "what an imported conversation left out",
    ("history_imports", "path"): "the file an import read",
    ("history_imports", "selection"): "the titles an import chose",
    ("history_imports", "skipped"): "what an import left out",
}


@dataclass(frozen=True)
class Place:
    """One column of one row that holds the phrases."""

    table: TextTable
    column: str
    key: tuple

    @property
    def whole_row(self) -> bool:
        columns = WHOLE_ROWS.get(self.table.name, frozenset())
        return columns is None or self.column in columns

    @property
    def label(self) -> str:
        name = self.table.name
        return _LABELS.get((name, None)) or _LABELS.get((name, self.column)) or f"{name}.{self.column}"


def describe(db: Database, place: Place, phrases: Phrases, width: int = 120) -> str:
    """The place and what of it would go, for the preview."""
    value = db.scalar(f'SELECT "{place.column}" FROM "{place.table.name}" WHERE {where_key(place.table)}', place.key)
    parts = phrases.matching_parts(str(value or "")) or [str(value or "")]
    line = " ".join(" ".join(parts).split())
    line = line if len(line) <= width else line[: width - 1] + "…"
    return f"{place.label}: {line}"


def scrubbed(value: str, phrases: Phrases) -> str:
    """``value`` without what holds the phrases (JSON keeps its shape)."""
    try:
        data = json.loads(value)
    except (json.JSONDecodeError, TypeError):
        return phrases.without(value) if phrases.matches(value) else value
    if isinstance(data, (dict, list)):
        return json.dumps(_scrub_json(data, phrases), ensure_ascii=False)
    return phrases.without(value) if phrases.matches(value) else value


def _scrub_json(value: Any, phrases: Phrases) -> Any:
    if isinstance(value, dict):
        return {k: _scrub_json(v, phrases) for k, v in value.items() if not phrases.matches(k)}
    if isinstance(value, list):
        return [_scrub_json(v, phrases) for v in value]
    if isinstance(value, str) and phrases.matches(value):
        return phrases.without(value)
    return value


def remove_places(db: Database, places: list[Place], phrases: Phrases) -> None:
    """Remove the phrases from every place (inside the caller's transaction)."""
    gone: set[tuple[str, tuple]] = set()
    for place in places:
        table = place.table
        if (table.name, place.key) in gone:
            continue
        if place.whole_row:
            gone.add((table.name, place.key))
            if table.name == "memory_blocks":
                erase_block(db, int(place.key[0]))
            else:
                db.execute(f'DELETE FROM "{table.name}" WHERE {where_key(table)}', place.key)
            continue
        value = db.scalar(f'SELECT "{place.column}" FROM "{table.name}" WHERE {where_key(table)}', place.key)
        if not isinstance(value, str):
            continue
        # A row an editor may hold open says it changed (core memory's lost-update check).
        bump = ', "version" = "version" + 1' if _has(db, table.name, "version") else ""
        db.execute(
            f'UPDATE "{table.name}" SET "{place.column}" = ?{bump} WHERE {where_key(table)}',
            (scrubbed(value, phrases), *place.key),
        )


def _has(db: Database, table: str, column: str) -> bool:
    return any(row[1] == column for row in db.query(f'PRAGMA table_info("{table}")'))
