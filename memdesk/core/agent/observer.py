"""How the agent reports what it does while it works. The GUI's worker adapts these calls into Qt
signals; the CLI prints them. Every method has a do-nothing default."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdesk.core.agent.context import ContextBudget
from memdesk.core.runtime.base import GenerationStats, StreamEvent


@dataclass(frozen=True)
class StepRecord:
    """One model call and what came of it."""

    thoughts: str
    function: str
    arguments: dict[str, Any]
    ok: bool
    result: str
    heartbeat: bool  # the model asked to run again
    stats: GenerationStats
    raw: str  # exactly what the model produced
    refused: bool = False  # the chain rules refused the call before it ran


@dataclass
class TurnResult:
    """One turn: the steps the agent chained after an input event ("user_message", "login",
    "heartbeat"), what it said, and how long it took."""

    kind: str = "user_message"
    replies: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    capped: bool = False
    budget: ContextBudget | None = None
    seconds: float = 0.0

    def describe(self) -> str:
        steps = len(self.steps)
        return f"{steps} step{'s' if steps != 1 else ''} in {self.seconds:.1f} s" + (
            " (step cap)" if self.capped else ""
        )


class AgentObserver:
    def on_stream(self, event: StreamEvent) -> None:
        """A piece of inner monologue or of a send_message text, while it is generated."""

    def on_step(self, step: StepRecord) -> None:
        """A step finished and was saved."""

    def on_budget(self, budget: ContextBudget) -> None:
        """The context budget after a step (or after an eviction)."""

    def on_memory_changed(self, labels: set[str]) -> None:
        """The agent itself edited these core memory blocks."""

    def on_search_hits(self, hits: list[tuple[str, Any]]) -> None:
        """Results of the agent's latest recall ("recall", Message) or archival ("archival", PassageHit) search."""

    def on_event(self, kind: str, text: str) -> None:
        """A system event worth showing quietly: "alert", "heartbeat", "eviction", "step_cap",
        "memories" (what automatic recall placed before the reply), "recall" (it was skipped)."""

    def on_turn_end(self, result: TurnResult) -> None:
        """A turn finished (steps per turn, time)."""
