"""Change recording for the memory history, and the row states that make a change revertible.

Every change to the graph is recorded in the memory history (``history``: the store's
MemoryHistory, passed in by the composition root, since memory sits above the graph): who made it
(the author), what it said before and after, the message it came from, and the rows it touched
before and after (``before_meta``/``after_meta`` = ``{"rows": [[table, id, row or null], ...]}``).
The rows make any recorded change revertible later (``restore_rows``, driven by the memory
package's GraphReverter), across restarts, with a conflict when something changed the rows since.
One user edit is one recorded change, however many rows it touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from memdesk.core.base.errors import RevertError
from memdesk.core.graph.records import Edit
from memdesk.core.storage import Database

#: The memory history's kinds for graph rows (memdesk.core.memory.history).
FACT_CHANGE, ENTITY_CHANGE = "graph_fact", "graph_entity"


#: The tables whose rows a recorded change carries (mentions are evidence, not edits).
ROW_TABLES = ("graph_entities", "graph_facts")
#: A row in a change's meta: [table, id, the row's columns, or None when it did not exist].
RowState = list
#: Each carried table's columns: the type of value each holds and whether it may be NULL. A revert
#: writes these columns only, so a row that came in an agent file is data, never SQL
#: (tests/graph/test_carried_graph_rows.py holds this to the schema).
ROW_COLUMNS: dict[str, dict[str, tuple[type, bool]]] = {
    "graph_entities": {
        "id": (int, False),
        "agent_id": (int, False),
        "name": (str, False),
        "key": (str, False),
        "kind": (str, False),
        "merged_into": (int, True),
        "author": (str, False),
        "created_at": (str, False),
        "deleted": (int, False),
    },
    "graph_facts": {
        "id": (int, False),
        "agent_id": (int, False),
        "subject_id": (int, False),
        "relation": (str, False),
        "object_id": (int, False),
        "message_id": (int, True),
        "passage_id": (int, True),
        "valid_from": (str, False),
        "valid_to": (str, True),
        "author": (str, False),
        "created_at": (str, False),
        "deleted": (int, False),
    },
}


#: Columns that are a row's identity, not its content: the stable id every device knows it by
#: (sync, migration m018). A change's rows leave them out and a revert never writes them, so a
#: restored row keeps the id it has, and an agent file's rows, made where ids were others (or
#: none), cannot take another row's; carried rows that name them still put their content back.
IDENTITY_COLUMNS = frozenset({"uid"})


def rows_problem(rows: Any) -> str | None:
    """Why ``rows`` (a change's meta rows) cannot be put back (None: they can): each entry must be
    [a carried table, an integer id, None or a row with exactly that table's columns, each value of
    its column's type]."""
    if not isinstance(rows, list):
        return "its rows are not a list"
    for item in rows:
        if not (isinstance(item, list) and len(item) == 3):
            return "a row is not [table, id, columns]"
        table, row_id, row = item
        columns = ROW_COLUMNS.get(table) if isinstance(table, str) else None
        if columns is None:
            return f"it names an unknown table ({table!r})"
        if type(row_id) is not int:
            return f"a row of {table} has no integer id"
        if row is None:
            continue
        if not isinstance(row, dict):
            return f"a row of {table} is not an object"
        unknown = [key for key in row if key not in columns and key not in IDENTITY_COLUMNS]
        if unknown:
            return f"a row of {table} names a column it does not have ({unknown[0]!r})"
        for name, (kind, nullable) in columns.items():
            if name not in row:
                return f"a row of {table} has no {name}"
            if not (type(row[name]) is kind or (nullable and row[name] is None)):
                return f"a row of {table} holds a {type(row[name]).__name__} in {name}"
    return None


def _content(row: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name not in IDENTITY_COLUMNS}


class ChangeRecorder(Protocol):
    """What the graph needs of the memory history (memdesk.core.memory.history.MemoryHistory).
    ``cause`` is the history's Cause, passed through untouched (the graph does not look inside)."""

    def record(
        self,
        agent_id: int,
        kind: str,
        target_id: int | None,
        action: str,
        *,
        source: str,
        before: str | None = None,
        after: str | None = None,
        label: str = "",
        before_meta: dict[str, Any] | None = None,
        after_meta: dict[str, Any] | None = None,
        cause: Any = None,
        message_id: int | None = None,
        note: str = "",
    ) -> int: ...


class ChangeRecording:
    """The part of ``KnowledgeGraph`` that records its changes and puts rows back for a revert.
    ``history`` is None for a graph nobody reverts (an evaluation's); ``forget_vectors`` drops what
    the graph keeps in memory about an agent's rows, after a revert put other rows in their place."""

    def __init__(self, db: Database, history: ChangeRecorder | None, forget_vectors: Callable[[int], None]) -> None:
        self._db = db
        self._history = history
        self._forget_vectors = forget_vectors
        # Above zero while one edit runs: its inner steps are recorded as one change at its end.
        self._grouping = 0

    def record(
        self,
        agent_id: int,
        kind: str,
        target_id: int | None,
        action: str,
        *,
        source: str,
        before: str | None = None,
        after: str | None = None,
        message_id: int | None = None,
        note: str = "",
        rows: tuple[list, list] | None = None,
        cause: Any = None,
        label: str | None = None,
    ) -> None:
        """Record one change; ``rows`` = (rows before, rows after) for revert."""
        if self._history is None or self._grouping:
            return
        label = label if label is not None else (after or before or "")
        extra: dict[str, Any] = {}
        if rows is not None:
            extra = {"before_meta": {"rows": rows[0]}, "after_meta": {"rows": rows[1]}}
        if cause is not None:
            extra["cause"] = cause
        else:
            extra.update(message_id=message_id, note=note)
        self._history.record(
            agent_id,
            kind,
            target_id,
            action,
            source=source,
            before=before,
            after=after,
            label=label if len(label) <= 60 else label[:59] + "…",
            **extra,
        )

    # --- row states: what a recorded change carries so it can be reverted -------------------------
    def row(self, table: str, row_id: int) -> dict[str, Any] | None:
        if table not in ROW_TABLES:
            raise ValueError(f"not a graph table: {table}")
        cursor = self._db.execute(f"SELECT * FROM {table} WHERE id = ?", (int(row_id),))
        row = cursor.fetchone()
        return None if row is None else _content(dict(zip([d[0] for d in cursor.description], row, strict=True)))

    def row_states(self, keys: Iterable[tuple[str, int]]) -> list[RowState]:
        """The rows as they are now, as a change's meta holds them (read in batches: an agent's
        insert watches all its current facts)."""
        keys = [(table, int(row_id)) for table, row_id in keys]
        found: dict[tuple[str, int], dict[str, Any]] = {}
        for table in {t for t, _i in keys}:
            if table not in ROW_TABLES:
                raise ValueError(f"not a graph table: {table}")
            ids = sorted({i for t, i in keys if t == table})
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                cursor = self._db.execute(
                    f"SELECT * FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)
                )
                columns = [d[0] for d in cursor.description]
                for row in cursor.fetchall():
                    found[(table, int(row[0]))] = _content(dict(zip(columns, row, strict=True)))
        return [[table, row_id, found.get((table, row_id))] for table, row_id in keys]

    def changed_rows(self, before: list[RowState]) -> tuple[list[RowState], list[RowState]]:
        """``before`` and the same rows now, leaving out rows the change left as they were."""
        after = self.row_states((t, i) for t, i, _row in before)
        pairs = [(b, a) for b, a in zip(before, after, strict=True) if b[2] != a[2]]
        return [b for b, _a in pairs], [a for _b, a in pairs]

    def edit_rows(self, edit: Edit) -> list[RowState]:
        seen: set[tuple[str, int]] = set()
        states: list[RowState] = []
        for table, row in edit.before:
            if (table, int(row["id"])) not in seen:
                seen.add((table, int(row["id"])))
                states.append([table, int(row["id"]), dict(row)])
        for table, row_id in edit.inserted:
            if (table, int(row_id)) not in seen:
                seen.add((table, int(row_id)))
                states.append([table, int(row_id), None])
        return states

    @contextmanager
    def one_change(self) -> Iterator[None]:
        """Inner steps of an edit (new entities, closed facts) are not recorded one by one."""
        self._grouping += 1
        try:
            yield
        finally:
            self._grouping -= 1

    def record_edit(
        self,
        agent_id: int,
        kind: str,
        target_id: int,
        action: str,
        edit: Edit,
        *,
        source: str,
        before: str | None,
        after: str | None,
        label: str | None = None,
        message_id: int | None = None,
        note: str = "",
        cause: Any = None,
    ) -> None:
        rows = self.changed_rows(self.edit_rows(edit))
        if rows[0]:
            self.record(
                agent_id,
                kind,
                target_id,
                action,
                source=source,
                before=before,
                after=after,
                label=label,
                message_id=message_id,
                note=note,
                rows=rows,
                cause=cause,
            )

    def state_text(self, table: str, row: dict[str, Any] | None) -> str | None:
        """A row state as people read it in the history: "Ann (an alias of Ann Smith)",
        "Ann lives in Paris (until 2026-05-01)"; None for a row that does not exist."""
        if row is None:
            return None
        if table == "graph_entities":
            text = str(row["name"])
            if row.get("merged_into") is not None:
                target = self._db.scalar("SELECT name FROM graph_entities WHERE id = ?", (row["merged_into"],))
                text += f" (an alias of {target})" if target else " (an alias)"
        else:

            def name(entity_id: int) -> str:
                found = self._db.query_one(
                    "SELECT r.name FROM graph_entities e JOIN graph_entities r ON r.id = COALESCE(e.merged_into, e.id)"
                    " WHERE e.id = ?",
                    (entity_id,),
                )
                return str(found[0]) if found else f"entity {entity_id}"

            text = f"{name(row['subject_id'])} {row['relation']} {name(row['object_id'])}"
            if row.get("valid_to"):
                text += f" (until {str(row['valid_to'])[:10]})"
        return text + " (deleted)" if row.get("deleted") else text

    def restore_rows(
        self,
        agent_id: int,
        kind: str,
        target_id: int,
        rows: list[RowState],
        *,
        action: str,
        cause: Any,
        label: str = "",
    ) -> None:
        """Put rows back as a change's meta holds them (a revert): a row that did not exist is
        hidden (deleted flag: ids in the history stay valid), a row that is gone is inserted
        again. Recorded as one change by the user."""
        problem = rows_problem(rows)
        if problem is not None:
            raise RevertError(f"This graph change cannot be reverted: {problem}")
        table = "graph_facts" if kind == FACT_CHANGE else "graph_entities"
        before_rows = self.row_states((t, i) for t, i, _row in rows)
        before_text = self.state_text(table, self.row(table, target_id))
        restoring = [
            row_id for row_table, row_id, wanted in rows if row_table == "graph_entities" and wanted is not None
        ]
        with self._db.transaction():
            # Names move between the rows restored (a rename onto an alias's name): free their
            # keys first, so the order of the rows does not matter.
            for row_id in restoring:
                self._db.execute("UPDATE graph_entities SET key = '#restoring ' || id WHERE id = ?", (row_id,))
            for (row_table, row_id, wanted), (_t, _i, now) in zip(rows, before_rows, strict=True):
                if row_table not in ROW_TABLES:
                    raise RevertError(f"A graph change names an unknown table ({row_table})")
                if wanted is None:
                    if now is not None and not now.get("deleted"):
                        self._db.execute(f"UPDATE {row_table} SET deleted = 1 WHERE id = ?", (row_id,))
                    continue
                if row_table == "graph_entities":
                    other = self._db.query_one(
                        "SELECT name FROM graph_entities WHERE agent_id = ? AND key = ? AND id != ?",
                        (wanted["agent_id"], wanted["key"], row_id),
                    )
                    if other is not None:
                        raise RevertError(
                            f"Cannot revert: another entity is called {other[0]!r} now",
                            hint="rename or merge it in the Knowledge panel first",
                        )
                # Names from the declaration, never from the row (checked above to hold no others).
                columns = [c for c in ROW_COLUMNS[row_table] if c != "id" and c in wanted]
                if now is None:
                    self._db.execute(
                        f"INSERT INTO {row_table}(id, {', '.join(columns)})"
                        f" VALUES (?, {', '.join('?' * len(columns))})",
                        (row_id, *[wanted[c] for c in columns]),
                    )
                else:
                    self._db.execute(
                        f"UPDATE {row_table} SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?",
                        (*[wanted[c] for c in columns], row_id),
                    )
            changed = self.changed_rows(before_rows)
            if changed[0]:
                self.record(
                    agent_id,
                    kind,
                    target_id,
                    action,
                    source="user",
                    before=before_text,
                    after=self.state_text(table, self.row(table, target_id)),
                    label=label,
                    rows=changed,
                    cause=cause,
                )
        self._forget_vectors(agent_id)

    def snapshot(self, table: str, where: str, params: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
        """Rows as they are now, for an ``Edit``'s undo."""
        cursor = self._db.execute(f"SELECT * FROM {table} WHERE {where}", tuple(params))
        columns = [d[0] for d in cursor.description]
        return [(table, _content(dict(zip(columns, row, strict=True)))) for row in cursor.fetchall()]
