"""What a tool function receives as its first argument: the services of the agent calling it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from memdesk.core.base.clock import Clock
from memdesk.core.base.errors import ToolError
from memdesk.core.memory.history import AGENT, Cause

if TYPE_CHECKING:
    from memdesk.core.graph.store import KnowledgeGraph
    from memdesk.core.memory.archival import ArchivalMemory
    from memdesk.core.memory.core_memory import CoreMemory
    from memdesk.core.memory.recall import RecallMemory
    from memdesk.core.runtime.base import CancelToken, Runtime, SamplingParams
    from memdesk.core.tools.files import FileSandbox
    from memdesk.core.tools.http import HttpPolicy


class ConsentPolicy(Protocol):
    """Asks the user before a tool that touches their machine or network runs."""

    def allow(self, agent_id: int, tool: str, summary: str) -> bool: ...


class AgentRecords(Protocol):
    """The one thing a tool changes about its agent's own row (``pause_heartbeats``): the agent layer's
    ``AgentStore`` fits it, and the tools layer, below the agent layer, need not import it."""

    def update(self, agent_id: int, **fields: Any) -> None: ...


class AllowAll:
    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        return True


class DenyAll:
    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        return False


@dataclass
class ToolContext:
    agent_id: int
    agents: AgentRecords
    core: CoreMemory
    recall: RecallMemory
    archival: ArchivalMemory
    #: None where only memory functions run (consolidation, and its review without a model).
    files: FileSandbox | None
    http: HttpPolicy
    runtime: Runtime | None
    params: SamplingParams
    plain_assistant_prompt: str
    clock: Clock
    consent: ConsentPolicy = field(default_factory=DenyAll)
    #: Set when the user stops the turn; long tools (generation) must honour it.
    cancel: CancelToken | None = None
    #: Labels of core memory blocks changed during the current step (the UI highlights them).
    changed_blocks: set[str] = field(default_factory=set)
    #: The latest search hits, for the archival panel.
    last_hits: list = field(default_factory=list)
    #: (page, pages) of the latest search, so the chain rules can offer its next page.
    last_page: tuple[int, int] | None = None
    #: The agent's knowledge graph (None in stores without one, such as some unit tests).
    graph: KnowledgeGraph | None = None
    #: Why memory changes during this call (the message answered; the call, once saved): the
    #: memory history records it with every change a tool makes.
    cause: Cause = field(default_factory=Cause)
    #: Who the history says made those changes: the agent, or consolidation running its functions.
    source: str = AGENT

    def sandbox(self) -> FileSandbox:
        """The agent's files folder, for the file functions."""
        if self.files is None:
            raise ToolError("No files folder is open for this call")
        return self.files

    def model(self) -> Runtime:
        """The model, for a function that asks it something."""
        if self.runtime is None:
            raise ToolError("No model is loaded for this call")
        return self.runtime
