"""The knowledge graph's part of an agent file, written and read by the graph package's own
``export_graph``/``import_graph``; in the file, its rows name messages by their number in the
file (``message-N`` -> N) and passages by their position in the extension's passage list.

The memory history's graph changes carry the rows they touched (for revert): ``export_rows``
writes them in the same terms, and the import's ``GraphFileImport.change`` moves them onto the
new store's ids, so the copy's graph changes can still be reverted."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from memdesk.core.storage import Database
from memdesk.core.transfer.graph import ImportedGraph, export_graph, import_graph, remap_rows

_GONE = -1  # a source that is not in the file: the graph's import drops the row
_TABLES = {"graph_fact": "graph_facts", "graph_entity": "graph_entities"}


def _message_number(ref: str | None) -> int:
    return int(ref.split("-", 1)[1]) if ref else _GONE


@dataclass
class GraphFileImport:
    """What one agent's graph import did: its summary line, and the ids to move its history to."""

    summary: str
    imported: ImportedGraph
    agent_id: int
    message_ids: dict[int, int]
    passage_ids: dict[int, int]

    def change(self, kind: str, target: Any, meta: tuple[Any, Any]) -> tuple[int, dict, dict] | None:
        """A carried graph change's target and before/after rows in this store, or None."""
        table = _TABLES.get(kind)
        if table is None or not isinstance(target, int):
            return None
        new_target = (self.imported.facts if table == "graph_facts" else self.imported.entities).get(target)
        moved = [
            remap_rows(
                (m or {}).get("rows") if isinstance(m, dict) else None,
                self.imported,
                self.agent_id,
                message_ids=self.message_ids,
                passage_ids=self.passage_ids,
            )
            for m in meta
        ]
        if new_target is None or moved[0] is None or moved[1] is None:
            return None
        return new_target, {"rows": moved[0]}, {"rows": moved[1]}


class GraphFileTransfer:
    def export_graph(
        self, db: Database, agent_id: int, message_refs: dict[int, str], passage_refs: dict[int, int]
    ) -> dict[str, Any]:
        data = export_graph(db, agent_id)
        for row in data.get("mentions", []) + data.get("facts", []):
            if row.get("message") is not None:
                row["message"] = _message_number(message_refs.get(int(row["message"])))
            if row.get("passage") is not None:
                row["passage"] = passage_refs.get(int(row["passage"]), _GONE)
        return data

    def export_rows(self, meta: Any, message_refs: dict[int, str], passage_refs: dict[int, int]) -> Any:
        """A graph change's before/after meta with its rows' sources in the file's terms."""
        if not isinstance(meta, dict) or not isinstance(meta.get("rows"), list):
            return meta
        meta = copy.deepcopy(meta)
        for item in meta["rows"]:
            row = item[2] if isinstance(item, list) and len(item) == 3 else None
            if isinstance(row, dict):
                if row.get("message_id") is not None:
                    row["message_id"] = _message_number(message_refs.get(int(row["message_id"])))
                if row.get("passage_id") is not None:
                    row["passage_id"] = passage_refs.get(int(row["passage_id"]), _GONE)
        return meta

    def import_graph(
        self, db: Database, agent_id: int, data: Any, message_ids: dict[str, int], passage_ids: list[int]
    ) -> GraphFileImport:
        numbers = {
            int(ref.split("-", 1)[1]): new
            for ref, new in message_ids.items()
            if ref.startswith("message-") and ref[8:].isdigit()
        }
        positions = dict(enumerate(passage_ids))
        imported = import_graph(
            db, agent_id, data if isinstance(data, dict) else None, message_ids=numbers, passage_ids=positions
        )
        return GraphFileImport(f"{imported.count} knowledge-graph entities", imported, agent_id, numbers, positions)
