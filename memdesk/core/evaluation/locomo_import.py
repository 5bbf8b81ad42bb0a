"""Does an imported conversation search as well as one stored directly?

Each LoCoMo conversation is written out as a ChatGPT export (a zip of ``conversations.json``, one
conversation per session, one node per turn, the dialogue id as the node id, the speakers as the
authors' names), imported through ``memdesk import``'s own code into a fresh store, and its
questions ranked as conversation search ranks them; the same conversation is also stored directly
(as the LoCoMo evaluation does) and ranked the same way. The import keeps what search needs
(times, speakers, words), so recall@k is the same on both sides. The import is handed in
(``import_export``: memdesk.core.transfer.history's, by the caller), as evaluation and transfer are
siblings that do not import each other.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from memdesk.core.base.clock import SystemClock
from memdesk.core.embedding import Embedder
from memdesk.core.evaluation.locomo import _load_conversation, session_time, turn_text
from memdesk.core.memory.agents import AgentStore
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.memory.history import MemoryHistory
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.memory.services import MemoryServices
from memdesk.core.retrieval import MessageRanker, VectorIndex
from memdesk.core.storage import open_database

#: (memory, agent id, export path): import the export into the agent's recall memory.
ImportExport = Callable[[MemoryServices, int, Path], object]


def as_chatgpt_export(sample: dict) -> list[dict[str, Any]]:
    """A LoCoMo conversation in ChatGPT's export shape: the first speaker as the user, the other
    as the assistant, each named (``author.name``), each session a conversation."""
    conversation = sample["conversation"]
    first = conversation.get("speaker_a")
    out = []
    number = 1
    while f"session_{number}" in conversation:
        start = session_time(conversation[f"session_{number}_date_time"])
        mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            node = turn["dia_id"]
            role = "user" if turn["speaker"] == (first or turn["speaker"]) else "assistant"
            mapping[node] = {
                "id": node,
                "parent": parent,
                "children": [],
                "message": {
                    "id": node,
                    "author": {"role": role, "name": turn["speaker"], "metadata": {}},
                    "create_time": (start + timedelta(seconds=offset)).timestamp(),
                    "content": {"content_type": "text", "parts": [turn_text(turn)]},
                    "status": "finished_successfully",
                    "recipient": "all",
                    "metadata": {},
                },
            }
            mapping[parent]["children"].append(node)
            parent = node
        out.append(
            {
                "id": f"{sample['sample_id']}-session-{number}",
                "conversation_id": f"{sample['sample_id']}-session-{number}",
                "title": f"{sample['sample_id']} session {number}",
                "create_time": start.timestamp(),
                "update_time": start.timestamp(),
                "mapping": mapping,
                "current_node": parent,
            }
        )
        number += 1
    return out


def _memory(db, embedder: Embedder, ranker: MessageRanker) -> MemoryServices:
    clock = SystemClock()
    history = MemoryHistory(db, clock)
    core = CoreMemory(db, clock, history)
    recall = RecallMemory(db, embedder, ranker=ranker)
    return MemoryServices(
        db, AgentStore(db, core, clock, None), core, recall, ArchivalMemory(db, embedder, clock), clock
    )


def evaluate_through_import(
    samples: list[dict], embedder: Embedder, import_export: ImportExport, *, ks: tuple[int, ...] = (5, 10)
) -> dict:
    """recall@k of each question, the conversation stored directly and imported from its ChatGPT
    export, in the same run with the same embedder."""
    recalls: dict[str, dict[int, list[float]]] = {"direct": defaultdict(list), "imported": defaultdict(list)}
    with tempfile.TemporaryDirectory(prefix="memdesk-locomo-import-") as folder:
        db = open_database(Path(folder) / "memdesk.sqlite3")
        ranker = MessageRanker(db, embedder, VectorIndex(db))
        memory = _memory(db, embedder, ranker)
        try:
            for sample in samples:
                ids = _load_conversation(db, memory.recall, sample)
                direct_agent = ids.pop("agent_id")
                export = Path(folder) / f"{sample['sample_id']}.zip"
                with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
                    archive.writestr("conversations.json", json.dumps(as_chatgpt_export(sample)))
                with db.transaction():
                    agent = memory.agents.create_empty(f"imported-{sample['sample_id']}", system_prompt="")
                import_export(memory, agent.id, export)
                imported = {
                    r[0]: r[1]
                    for r in db.query(
                        "SELECT external_id, id FROM messages WHERE agent_id = ? AND conversation_id IS NOT NULL",
                        (agent.id,),
                    )
                }
                for qa in sample["qa"]:
                    for side, agent_id, found in (("direct", direct_agent, ids), ("imported", agent.id, imported)):
                        evidence = {found[e] for e in qa.get("evidence", []) if e in found}
                        if not evidence:
                            continue
                        ranked = [r.id for r in memory.recall.rank(agent_id, qa["question"], graph_weight=0.0)]
                        for k in ks:
                            recalls[side][k].append(len(evidence & set(ranked[:k])) / len(evidence))
        finally:
            db.close()
    return {
        side: {f"recall@{k}": round(sum(v) / len(v), 4) if v else None for k, v in by_k.items()}
        | {"questions": len(next(iter(by_k.values()), []))}
        for side, by_k in recalls.items()
    }
