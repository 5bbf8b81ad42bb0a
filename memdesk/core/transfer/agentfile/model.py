"""What the agent-file code needs from the app (the core must not import the composition root),
and the name and version of MemDesk's extension inside a Letta agent file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memdesk.core.base.clock import Clock
    from memdesk.core.memory.agents import AgentStore
    from memdesk.core.memory.services import MemoryServices
    from memdesk.core.storage import Database

#: Letta's AgentFileSchema ignores unknown top-level keys; MemDesk's own data lives under this one.
EXTENSION_KEY = "memdesk"
EXTENSION_FORMAT = "memdesk-agent-file-extension"
EXTENSION_VERSION = 1


class AgentFileServices(Protocol):
    @property
    def agents(self) -> AgentStore: ...

    memory: MemoryServices
    clock: Clock
    db: Database


class GraphTransfer(Protocol):
    """The knowledge graph's part of an agent file (agentfile.graph wraps the graph package's).

    ``export_graph`` returns JSON-ready data for one agent, naming messages by the file's ids
    (``message_refs`` maps store ids to them) and passages by their position in the file
    (``passage_refs``); ``import_graph`` stores it for a new agent inside the import's transaction
    (``message_ids`` maps the file's ids back, ``passage_ids`` lists the new passages in file
    order) and returns a GraphImport. ``export_rows`` writes a recorded graph change's rows (its
    history meta) in the file's terms."""

    def export_graph(
        self, db: Database, agent_id: int, message_refs: dict[int, str], passage_refs: dict[int, int]
    ) -> Any: ...

    def export_rows(self, meta: Any, message_refs: dict[int, str], passage_refs: dict[int, int]) -> Any: ...

    def import_graph(
        self, db: Database, agent_id: int, data: Any, message_ids: dict[str, int], passage_ids: list[int]
    ) -> GraphImport: ...


class GraphImport(Protocol):
    """One agent's imported graph: a line for the import summary, and where a carried graph
    change now points (its target and before/after meta in the new store; None: not revertible)."""

    summary: str

    def change(self, kind: str, target: Any, meta: tuple[Any, Any]) -> tuple[int, dict, dict] | None: ...
