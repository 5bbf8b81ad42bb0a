"""The stores one agent reads and writes, bundled: what the agent loop, consolidation, forgetting
and transfer take instead of the app's services."""

from __future__ import annotations

from dataclasses import dataclass

from desktop.core.base.clock import Clock
from desktop.core.graph.store import KnowledgeGraph
from desktop.core.memory.agents import AgentStore
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.memory.core_memory import CoreMemory
from desktop.core.memory.recall import RecallMemory
from desktop.core.storage import Database


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
