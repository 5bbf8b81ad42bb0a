"""The graph in agent files: ``export_graph`` gives a JSON-ready dict, ``import_graph`` rebuilds it
for a new agent, mapping the file's message and passage ids to the new store's.

Everything is carried: alias rows (so merges stay undoable) with their keys (an alias whose name
the entity took keeps its row), user deletions (so a name the user removed stays removed) and
closed facts (the history). Imported sources are marked as extracted, so the background
extraction does not add them a second time. ``remap_rows`` moves a recorded graph change's rows
(its memory-history meta) onto the new ids, so the copy's changes stay revertible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdesk.core.base.clock import parse_iso
from memdesk.core.base.errors import AgentFileError
from memdesk.core.graph import names
from memdesk.core.graph.changes import rows_problem
from memdesk.core.storage import Database
from memdesk.core.transfer.values import MAX_NUMBER, shown

FORMAT_VERSION = 1
DAMAGED_HINT = "nothing of the file was imported; export it again"
#: Who may have written a fact (graph_facts' CHECK constraint).
FACT_AUTHORS = ("extractor", "agent", "user")
_INT, _TEXT, _TIME, _FLAG = "an integer", "text", "a time", "true or false"
#: What ``import_graph`` reads of each section's rows: (kind, required).
_GRAPH_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "entities": {
        "id": (_INT, True),
        "name": (_TEXT, True),
        "key": (_TEXT, False),
        "kind": (_TEXT, False),
        "merged_into": (_INT, False),
        "author": (_TEXT, False),
        "created_at": (_TIME, True),
        "deleted": (_FLAG, False),
    },
    "mentions": {"entity": (_INT, True), "message": (_INT, False), "passage": (_INT, False), "at": (_TIME, True)},
    "facts": {
        "id": (_INT, False),
        "subject": (_INT, True),
        "relation": (_TEXT, True),
        "object": (_INT, True),
        "message": (_INT, False),
        "passage": (_INT, False),
        "valid_from": (_TIME, True),
        "valid_to": (_TIME, False),
        "author": (_TEXT, False),
        "created_at": (_TIME, False),
        "deleted": (_FLAG, False),
    },
}


def _fits(value: Any, kind: str) -> bool:
    if kind == _INT:
        return type(value) is int and -MAX_NUMBER <= value <= MAX_NUMBER
    if kind == _FLAG:
        return type(value) is bool or value in (0, 1)
    if not isinstance(value, str):
        return False
    if kind == _TIME:
        try:
            parse_iso(value)
        except (ValueError, OverflowError):
            return False
    return True


def graph_problem(data: Any) -> str | None:
    """Why ``data`` is not a graph section ``import_graph`` can take (None: it is, or there is
    none): checked before anything is written, so a damaged file is refused whole rather than
    failing halfway or storing values that break the Knowledge panel later."""
    if data is None:
        return None
    if not isinstance(data, dict):
        return "it is not an object"
    for section, fields in _GRAPH_FIELDS.items():
        rows = data.get(section, [])
        if not isinstance(rows, list):
            return f"its {section} are not a list"
        for number, row in enumerate(rows, start=1):
            if not isinstance(row, dict):
                return f"{section} entry {number} is not an object"
            for name, (kind, required) in fields.items():
                value = row.get(name)
                if value is None:
                    if required:
                        return f"{section} entry {number} has no {name}"
                elif not _fits(value, kind):
                    return f"{section} entry {number} has {shown(value)} as its {name}, not {kind}"
            if section == "facts" and (row.get("author") or "extractor") not in FACT_AUTHORS:
                return f"facts entry {number} has {shown(row.get('author'))} as its author"
    return None


def export_graph(db: Database, agent_id: int) -> dict[str, Any]:
    entities = db.query(
        "SELECT id, name, kind, merged_into, author, created_at, deleted, key FROM graph_entities WHERE agent_id = ?"
        " ORDER BY id",
        (agent_id,),
    )
    mentions = db.query(
        "SELECT entity_id, message_id, passage_id, at FROM graph_mentions WHERE agent_id = ? ORDER BY id", (agent_id,)
    )
    facts = db.query(
        "SELECT subject_id, relation, object_id, message_id, passage_id, valid_from, valid_to, author, created_at,"
        " deleted, id"
        " FROM graph_facts WHERE agent_id = ? ORDER BY id",
        (agent_id,),
    )
    return {
        "version": FORMAT_VERSION,
        "entities": [
            {
                "id": r[0],
                "name": r[1],
                "kind": r[2],
                "merged_into": r[3],
                "author": r[4],
                "created_at": r[5],
                "deleted": bool(r[6]),
                "key": r[7],
            }
            for r in entities
        ],
        "mentions": [{"entity": r[0], "message": r[1], "passage": r[2], "at": r[3]} for r in mentions],
        "facts": [
            {
                "id": r[10],
                "subject": r[0],
                "relation": r[1],
                "object": r[2],
                "message": r[3],
                "passage": r[4],
                "valid_from": r[5],
                "valid_to": r[6],
                "author": r[7],
                "created_at": r[8],
                "deleted": bool(r[9]),
            }
            for r in facts
        ],
    }


@dataclass
class ImportedGraph:
    """The file's ids mapped to the new store's."""

    entities: dict[int, int] = field(default_factory=dict)
    facts: dict[int, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.entities)


def import_graph(
    db: Database,
    agent_id: int,
    data: dict[str, Any] | None,
    *,
    message_ids: dict[int, int],
    passage_ids: dict[int, int],
) -> ImportedGraph:
    """Add ``export_graph`` output to ``agent_id`` (caller holds the transaction). Rows whose
    source did not come along are dropped, not guessed."""
    problem = graph_problem(data)
    if problem is not None:
        raise AgentFileError(f"The knowledge graph in the file is damaged: {problem}", hint=DAMAGED_HINT)
    imported = ImportedGraph()
    if not data:
        return imported
    new_ids = imported.entities
    for entity in data.get("entities", []):
        # The stored key, when the file has one: an alias that gave its name up keeps its own.
        key = entity["key"] if isinstance(entity.get("key"), str) and entity["key"] else names.name_key(entity["name"])
        existing = db.query_one("SELECT id FROM graph_entities WHERE agent_id = ? AND key = ?", (agent_id, key))
        if existing is not None:
            new_ids[int(entity["id"])] = int(existing[0])
            continue
        cursor = db.execute(
            "INSERT INTO graph_entities(agent_id, name, key, kind, author, created_at, deleted)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                entity["name"],
                key or f"#{entity['id']}",
                entity.get("kind") or "thing",
                entity.get("author") or "extractor",
                entity["created_at"],
                int(bool(entity.get("deleted"))),
            ),
        )
        new_ids[int(entity["id"])] = int(cursor.lastrowid)
    for entity in data.get("entities", []):
        target = entity.get("merged_into")
        if target is not None and int(target) in new_ids and new_ids[int(target)] != new_ids[int(entity["id"])]:
            db.execute(
                "UPDATE graph_entities SET merged_into = ? WHERE id = ?",
                (new_ids[int(target)], new_ids[int(entity["id"])]),
            )

    def source(row: dict[str, Any]) -> tuple[int | None, int | None] | None:
        message, passage = row.get("message"), row.get("passage")
        if message is not None:
            return (message_ids[int(message)], None) if int(message) in message_ids else None
        if passage is not None:
            return (None, passage_ids[int(passage)]) if int(passage) in passage_ids else None
        return (None, None)

    for mention in data.get("mentions", []):
        where = source(mention)
        if where is None or where == (None, None) or int(mention["entity"]) not in new_ids:
            continue
        db.execute(
            "INSERT INTO graph_mentions(agent_id, entity_id, message_id, passage_id, at) VALUES (?, ?, ?, ?, ?)",
            (agent_id, new_ids[int(mention["entity"])], *where, mention["at"]),
        )
    for fact in data.get("facts", []):
        where = source(fact)
        if where is None or int(fact["subject"]) not in new_ids or int(fact["object"]) not in new_ids:
            continue
        cursor = db.execute(
            "INSERT INTO graph_facts(agent_id, subject_id, relation, object_id, message_id, passage_id, valid_from,"
            " valid_to, author, created_at, deleted)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent_id,
                new_ids[int(fact["subject"])],
                fact["relation"],
                new_ids[int(fact["object"])],
                *where,
                fact["valid_from"],
                fact.get("valid_to"),
                fact.get("author") or "extractor",
                fact.get("created_at") or fact["valid_from"],
                int(bool(fact.get("deleted"))),
            ),
        )
        if fact.get("id") is not None:
            imported.facts[int(fact["id"])] = int(cursor.lastrowid)
    for kind, table in (("message", "messages"), ("passage", "passages")):
        newest = db.scalar(f"SELECT MAX(id) FROM {table} WHERE agent_id = ?", (agent_id,))
        if newest is not None:
            db.execute(
                "INSERT INTO graph_progress(agent_id, source_kind, last_id) VALUES (?, ?, ?)"
                " ON CONFLICT(agent_id, source_kind) DO UPDATE SET last_id = excluded.last_id",
                (agent_id, kind, newest),
            )
    return imported


_ENTITY_COLUMNS = ("subject_id", "object_id", "merged_into")


def remap_rows(
    rows: Any, imported: ImportedGraph, agent_id: int, *, message_ids: dict[int, int], passage_ids: dict[int, int]
) -> list | None:
    """A recorded change's rows (``[[table, id, row or None], ...]``, ids as in the file) with the
    new store's ids; None when a row did not come along (the change then stays listed but cannot
    be reverted, rather than touching a wrong row). Rows that are not the tables' own (an unknown
    column, a value of the wrong type) are not carried either."""
    if rows_problem(rows) is not None:
        return None
    maps = {"graph_entities": imported.entities, "graph_facts": imported.facts}
    moved = []
    for item in rows:
        if not (isinstance(item, list) and len(item) == 3 and item[0] in maps and isinstance(item[1], int)):
            return None
        table, old_id, row = item
        new_id = maps[table].get(old_id)
        if new_id is None:
            return None
        if row is not None:
            row = dict(row, id=new_id, agent_id=agent_id)
            for column in _ENTITY_COLUMNS:
                if row.get(column) is not None:
                    if int(row[column]) not in imported.entities:
                        return None
                    row[column] = imported.entities[int(row[column])]
            for column, ids in (("message_id", message_ids), ("passage_id", passage_ids)):
                if row.get(column) is not None:
                    if int(row[column]) not in ids:
                        return None
                    row[column] = ids[int(row[column])]
        moved.append([table, new_id, row])
    return moved
