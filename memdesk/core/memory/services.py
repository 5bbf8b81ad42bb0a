"""The stores one agent reads and writes, bundled: what the agent loop, consolidation, forgetting
and transfer take instead of the app's services."""

from __future__ import annotations

from dataclasses import dataclass

from memdesk.core.base.clock import Clock
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.agents import AgentStore
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.storage import Database


@dataclass(frozen=True)
class MemoryServices:
    """The stores one agent reads and writes, bundled to keep constructor lists short."""

    db: Database
    agents: AgentStore
    core: CoreMemory
    recall: RecallMemory
    archival: ArchivalMemory
    clock: Clock
    graph: KnowledgeGraph | None = None
