"""Keeping one agent's memory section current (see memory_view.py for why it is frozen between
renders): what the next step shows, the ``memory_update`` event it needs, and the agent's own
edits, which need none."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdesk.core.agent import events
from memdesk.core.agent.memory_view import MemoryView, render_memory
from memdesk.core.graph.render import render_top_entities
from memdesk.core.memory.agents import AgentRecord

if TYPE_CHECKING:
    from memdesk.core.memory.services import MemoryServices


class MemorySection:
    def __init__(self, memory: MemoryServices, agent_id: int) -> None:
        self.memory = memory
        self.agent_id = agent_id
        # The section is rendered again on this object's first step: a new process or a
        # switched agent means the runtime's cache holds something else, so it costs nothing.
        self.checked = False

    def planned(self, record: AgentRecord, top_entities: int) -> tuple[MemoryView, str | None]:
        """The memory view the next step uses, and the memory_update event it needs (if any)."""
        m = self.memory
        view = MemoryView.from_json(record.memory_view)
        blocks = m.core.blocks(self.agent_id)
        archival = m.archival.count(self.agent_id)
        if not view.rendered or view.stale or not self.checked:
            text = render_memory(m.core.render(self.agent_id), record.evicted_count, archival)
            knowledge = render_top_entities(m.graph, self.agent_id, top_entities) if m.graph is not None else ""
            return MemoryView.fresh(text, blocks, archival, knowledge), None
        changes = view.updates(blocks, archival)
        if not changes:
            return view, None
        return view.knows(blocks, archival), events.memory_update(changes)

    def sync(self, top_entities: int) -> None:
        """Save what ``planned`` plans (the caller holds the transaction)."""
        record = self.memory.agents.get(self.agent_id)
        view, update = self.planned(record, top_entities)
        if update is not None:
            self.memory.recall.add(
                self.agent_id, role="user", kind="memory_update", content=update, created_at=self.memory.clock.now()
            )
        if view.to_json() != record.memory_view:
            self.memory.agents.update(self.agent_id, memory_view=view.to_json())
        self.checked = True

    def saw_own_edits(self, changed_blocks: set[str], archival_added: int) -> None:
        """The agent knows what its own call changed: no update event for it."""
        if not changed_blocks and not archival_added:
            return
        record = self.memory.agents.get(self.agent_id)
        blocks = [b for b in self.memory.core.blocks(self.agent_id) if b.label in changed_blocks]
        view = MemoryView.from_json(record.memory_view).edited(blocks, archival_added)
        self.memory.agents.update(self.agent_id, memory_view=view.to_json())
