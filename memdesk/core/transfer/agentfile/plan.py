"""What an import will write, planned from the whole file before anything is: the plan types, and
the small readers every part of the planning shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdesk.core.base.clock import parse_iso
from memdesk.core.memory.archival import NewPassage
from memdesk.core.transfer.agentfile.letta import Incoming
from memdesk.core.transfer.agentfile.summary import ImportedAgent, ImportSummary


@dataclass
class BlockPlan:
    label: str
    value: str
    limit: int
    read_only: bool
    description: str


@dataclass
class PassagePlan:
    passage: NewPassage
    document_ref: str | None


@dataclass
class AgentPlan:
    ref: str
    name: str
    system_prompt: str
    created_at: datetime | None
    blocks: list[BlockPlan] = field(default_factory=list)
    messages: list[Incoming] = field(default_factory=list)
    context_start_ref: str | None = None  # None: every message is in context
    summary: str = ""
    evicted_count: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)  # Letta tools stored disabled
    extras: dict[str, Any] | None = None  # Letta fields kept for re-export
    documents: list[dict[str, Any]] = field(default_factory=list)
    passages: list[PassagePlan] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    graph: Any = None
    imported: list[dict[str, Any]] = field(default_factory=list)  # conversations from other assistants
    report: ImportedAgent = field(default_factory=lambda: ImportedAgent(""))


@dataclass
class ImportPlan:
    agents: list[AgentPlan]
    summary: ImportSummary


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def when(value: Any) -> datetime | None:
    if isinstance(value, str):
        try:
            return parse_iso(value.replace("Z", "+00:00"))
        except (ValueError, OverflowError):  # not a time, or one past the calendar's ends
            return None
    return None


def count_messages(plan: AgentPlan) -> None:
    plan.report.messages = len(plan.messages)
    refs = [m.ref for m in plan.messages]
    if plan.context_start_ref is None:
        plan.report.in_context = len(refs)
    elif plan.context_start_ref == "":
        plan.report.in_context = 0
    else:
        plan.report.in_context = len(refs) - refs.index(plan.context_start_ref)
