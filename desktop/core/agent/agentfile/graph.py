"""The knowledge graph's part of an agent file, written and read by the graph package's own
``export_graph``/``import_graph``; in the file, its rows name messages by their number in the
file (``message-N`` -> N) and passages by their position in the extension's passage list."""

from __future__ import annotations

from typing import Any

from desktop.core.graph.transfer import export_graph, import_graph
from desktop.core.storage import Database

_GONE = -1  # a source that is not in the file: the graph's import drops the row


class GraphFileTransfer:
    def export_graph(self, db: Database, agent_id: int, message_refs: dict[int, str], passage_refs: dict[int, int]) -> dict[str, Any]:
        data = export_graph(db, agent_id)
        for row in data.get("mentions", []) + data.get("facts", []):
            if row.get("message") is not None:
                ref = message_refs.get(int(row["message"]))
                row["message"] = int(ref.split("-", 1)[1]) if ref else _GONE
            if row.get("passage") is not None:
                row["passage"] = passage_refs.get(int(row["passage"]), _GONE)
        return data

    def import_graph(self, db: Database, agent_id: int, data: Any, message_ids: dict[str, int], passage_ids: list[int]) -> str:
        numbers = {int(ref.split("-", 1)[1]): new for ref, new in message_ids.items() if ref.startswith("message-") and ref[8:].isdigit()}
        count = import_graph(db, agent_id, data if isinstance(data, dict) else None, message_ids=numbers, passage_ids=dict(enumerate(passage_ids)))
        return f"{count} knowledge-graph entities"
