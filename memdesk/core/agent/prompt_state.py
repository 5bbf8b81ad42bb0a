"""The state of one agent's next prompt: which messages are in the context window, the memory
section the next step shows (and the ``memory_update`` event it still owes), the prompt's parts
built from them, and the tool specs the next step's grammar admits. The loop, fitting the context
(fitting.py) and automatic recall in a turn (recall/turn.py) all read the prompt through this
object, so none of them reaches into another.
"""

from __future__ import annotations

from dataclasses import replace

from memdesk.core.agent.context import ContextBudget, PromptParts, measure, to_chat
from memdesk.core.agent.memory_section import MemorySection
from memdesk.core.agent.memory_view import MemoryView
from memdesk.core.agent.recall.events import EVENT_KIND as MEMORIES
from memdesk.core.agent.recall.events import expired_view
from memdesk.core.agent.settings import AgentSettings
from memdesk.core.memory.agents import AgentRecord
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.core.runtime.base import ChatMessage, Runtime, ToolSpec
from memdesk.core.tools.builtin import HUMAN, REMEMBER
from memdesk.core.tools.registry import ToolRegistry

#: The longest note send_message may add to the human block in one call.
REMEMBER_CHARS = 200


class PromptState:
    def __init__(
        self,
        agent_id: int,
        *,
        memory: MemoryServices,
        runtime: Runtime,
        tools: ToolRegistry,
        settings: AgentSettings,
    ) -> None:
        self.agent_id = agent_id
        self.memory = memory
        self.runtime = runtime
        self.tools = tools
        #: What the prompt is built with (the agent's settings: the loop reads them here too).
        self.settings = settings
        self.section = MemorySection(memory, agent_id)

    @property
    def record(self) -> AgentRecord:
        return self.memory.agents.get(self.agent_id)

    @property
    def reserve(self) -> int:
        """Tokens kept free for the model's answer."""
        return self.settings.reserve

    def in_context(self, record: AgentRecord) -> list[Message]:
        """The messages in the context window as the model sees them (expired memories events as
        their stub)."""
        return expired_view(
            self.memory.recall.since(self.agent_id, record.context_start_id), record.recall_expired_before
        )

    def planned_view(self, record: AgentRecord) -> tuple[MemoryView, str | None]:
        """The memory view the next step uses, and the memory_update event it needs (if any)."""
        return self.section.planned(record, self.settings.top_entities)

    def sync_memory(self) -> None:
        """Save what ``planned_view`` plans (the caller holds the transaction)."""
        self.section.sync(self.settings.top_entities)

    def parts(self) -> PromptParts:
        """The prompt the next step would send, in its sections."""
        record = self.record
        in_context = self.in_context(record)
        view, update = self.planned_view(record)
        messages = to_chat(self.runtime, in_context, self.runtime.info.context_window)
        recall = frozenset(n for n, m in enumerate(in_context) if m.kind == MEMORIES)
        if update is not None:  # not saved yet: the next step will save it
            messages += (ChatMessage("user", update),)
        return PromptParts(
            instructions="\n\n".join(
                [
                    record.system_prompt,
                    *thoughts_note(self.settings.thoughts_chars),
                    heartbeat_note(self.settings.heartbeat_minutes),
                ]
            ),
            tools=self.tools.describe_for_prompt(self.settings.tool_section, without=self.settings.hidden_functions),
            core_memory=view.text,
            summary=record.summary or None,
            messages=messages,
            knowledge=view.knowledge,
            recall=recall,
        )

    def live_specs(self) -> list[ToolSpec]:
        """The tool specs for this step's grammar, before the chain rules narrow them: core memory
        functions may name only the blocks that exist and are writable, so a small model cannot
        pick a missing or read-only block. (The prompt's tool section stays static, which keeps
        the KV cache warm.)"""
        labels = [b.label for b in self.memory.core.blocks(self.agent_id) if not b.read_only]
        specs = []
        for spec in self.tools.specs():
            if spec.name in self.settings.hidden_functions:
                continue
            properties = spec.parameters.get("properties", {})
            if spec.name.startswith("core_memory_") and "label" in properties:
                if not labels:
                    continue
                label = {**properties["label"], "enum": labels}
                spec = replace(spec, parameters={**spec.parameters, "properties": {**properties, "label": label}})
            elif spec.name == "send_message" and REMEMBER in properties:
                if HUMAN in labels:  # a fact, not an essay: it is written after the reply, but the turn waits for it
                    kept = {**properties, REMEMBER: {**properties[REMEMBER], "maxLength": REMEMBER_CHARS}}
                else:  # nowhere to remember to (an imported agent's blocks, a read-only human block)
                    kept = {k: v for k, v in properties.items() if k != REMEMBER}
                spec = replace(spec, parameters={**spec.parameters, "properties": kept})
            specs.append(spec)
        return specs

    def budget(self) -> ContextBudget:
        """The exact context budget of the prompt the next step would send."""
        return measure(self.runtime, self.parts(), self.reserve)


def thoughts_note(chars: int | None) -> list[str]:
    """What the instructions say about inner_thoughts' bound (nothing without one): the grammar
    ends the thoughts there, so a model that knows it plans within it rather than being cut off."""
    return [] if chars is None else [f"inner_thoughts holds at most {chars} characters: a few words of plan."]


def heartbeat_note(minutes: int) -> str:
    """What the instructions promise about timed heartbeats: exactly what the setting does."""
    if minutes <= 0:
        return "Timed heartbeats are off: you run only when an event arrives."
    return f"Timed heartbeats: every {minutes} minutes while the user is idle, you run with a heartbeat event."
