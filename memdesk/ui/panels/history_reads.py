"""What the memory history view shows, read from the store (on the panels' reads thread, never
the GUI thread): a page of changes for one scope, and what caused one change (the message it
answered, the call that made it). Plain functions of the stores, without Qt."""

from __future__ import annotations

import json
from dataclasses import dataclass

from memdesk.core.agent.events import HEARTBEAT_TIMED
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.memory.history import BLOCK, DOCUMENT, GRAPH_ENTITY, GRAPH_FACT, PASSAGE, Change, MemoryHistory
from memdesk.core.memory.recall import Message, RecallMemory

ALL, BLOCKS, PASSAGES, DOCUMENTS, GRAPH, FACTS, ENTITIES = (
    "all",
    "blocks",
    "passages",
    "documents",
    "graph",
    "graph_facts",
    "graph_entities",
)
#: The scopes offered, as the view names them; a scope per block follows them ("block:<label>").
SCOPES = (
    ("All memory", ALL),
    ("Core memory blocks", BLOCKS),
    ("Archival passages", PASSAGES),
    ("Documents", DOCUMENTS),
    ("Knowledge graph", GRAPH),
    ("Knowledge graph: facts", FACTS),
    ("Knowledge graph: entities", ENTITIES),
)
#: The scopes above that are one kind of change.
SCOPE_KINDS = {BLOCKS: BLOCK, PASSAGES: PASSAGE, DOCUMENTS: DOCUMENT, FACTS: GRAPH_FACT, ENTITIES: GRAPH_ENTITY}
#: The changes a page holds (the newest first).
PAGE = 500


def block_scope(label: str) -> str:
    return f"block:{label}"


@dataclass(frozen=True)
class HistoryPage:
    """The newest changes of one agent in one scope, and the blocks it can be narrowed to."""

    agent_id: int | None
    scope: str
    block_labels: list[str]
    changes: list[Change]


def read_page(history: MemoryHistory, core: CoreMemory, agent_id: int | None, scope: str) -> HistoryPage:
    if agent_id is None:
        return HistoryPage(None, scope, [], [])
    labels = [b.label for b in core.blocks(agent_id)]
    labels += sorted({c.label for c in history.for_agent(agent_id, kind=BLOCK, limit=1000)} - set(labels))
    if scope.startswith("block:"):
        changes = history.for_block(agent_id, scope.split(":", 1)[1])
    elif scope == GRAPH:
        facts = history.for_agent(agent_id, kind=GRAPH_FACT, limit=PAGE)
        entities = history.for_agent(agent_id, kind=GRAPH_ENTITY, limit=PAGE)
        changes = sorted(facts + entities, key=lambda c: -c.id)[:PAGE]
    else:
        changes = history.for_agent(agent_id, kind=SCOPE_KINDS.get(scope), limit=PAGE)
    return HistoryPage(agent_id, scope, labels, changes)


@dataclass(frozen=True)
class Cause:
    """What led to a change: the message it answered (``event``), the user's message that started
    the chain it belongs to (``trigger``), and the call that made it (``call``)."""

    event: Message | None
    trigger: Message | None
    call: Message | None


def read_cause(recall: RecallMemory, change: Change) -> Cause:
    event = recall.get(change.message_id) if change.message_id else None
    trigger = None
    if event is not None and event.kind == "user_message":
        trigger = event
    elif event is not None and event.kind == "heartbeat" and not timed(event):
        trigger = recall.last_of_kind(change.agent_id, "user_message", event.id)  # a chain the user's message started
    call = recall.get(change.step_id) if change.step_id else None
    return Cause(event, trigger, call)


def timed(heartbeat: Message) -> bool:
    """A timed heartbeat starts a turn of its own (the other heartbeats go on with a turn)."""
    try:
        reason = json.loads(heartbeat.content).get("reason")
    except (ValueError, AttributeError):  # stored before events were JSON
        return "Timed heartbeat" in heartbeat.content
    return reason == HEARTBEAT_TIMED
