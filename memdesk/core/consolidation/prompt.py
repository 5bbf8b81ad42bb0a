"""What a consolidation pass shows the model: the memory functions only (and one to finish), the
messages to read, memory as it is now and the changes the pass made so far; built on the
conversation's own prompt when it leaves room, so the runtime's KV cache still holds most of it.
The ``Consolidator`` builds one ``PassPrompt`` per pass, handing it what it reads."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memdesk.core.consolidation.modes import ASK
from memdesk.core.consolidation.store import FAILED, ConsolidationStore, Run
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.core.runtime.base import ChatMessage, Runtime, ToolSpec
from memdesk.core.tools.registry import HEARTBEAT_PARAM, ToolRegistry

log = logging.getLogger("memdesk.consolidation")

#: The only functions a pass may call (those the agent has; the graph one once it exists).
MEMORY_FUNCTIONS = ("core_memory_append", "core_memory_replace", "archival_memory_insert", "knowledge_graph_insert")
FINISH = "finish_consolidation"
FINISH_SPEC = ToolSpec(
    FINISH, "End this consolidation pass: memory is up to date.", {"type": "object", "properties": {}, "required": []}
)
#: Changes listed in the prompt (the most recent); older ones are summarised by a count.
SHOWN_CHANGES = 20
LINE_CHARS = 1500


@dataclass(frozen=True)
class Conversation:
    """The conversation's prompt a pass builds on, and what of the pass's messages it no longer shows."""

    prefix: tuple[ChatMessage, ...]
    out_of_view: str  # transcript lines of the pass's messages evicted from the context ("" if none)
    first: datetime  # when the pass's first and last messages were sent
    last: datetime


def allowed(tools: ToolRegistry) -> list[str]:
    return [name for name in MEMORY_FUNCTIONS if tools.resolve(name) is not None]


class PassPrompt:
    """The prompts of one pass over one agent's memory. ``answer_tokens`` are kept free in the
    window; ``mode`` says whether the changes wait for review; ``prefix`` (the open agent's
    ``prompt_prefix``) is the conversation's prompt to build on, when there is one."""

    def __init__(
        self,
        agent_id: int,
        *,
        memory: MemoryServices,
        runtime: Runtime,
        tools: ToolRegistry,
        store: ConsolidationStore,
        instructions: str,
        answer_tokens: int,
        mode: str,
        prefix: Callable[[], Sequence[ChatMessage]] | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.memory = memory
        self.runtime = runtime
        self.tools = tools
        self.store = store
        self.instructions = instructions
        self.answer_tokens = answer_tokens
        self.mode = mode
        self.prefix = prefix

    def specs(self) -> list[ToolSpec]:
        """Memory functions only, without request_heartbeat (a pass chains by itself), and core
        memory functions limited to the blocks that exist and are writable."""
        labels = [b.label for b in self.memory.core.blocks(self.agent_id) if not b.read_only]
        result = []
        for name in allowed(self.tools):
            tool = self.tools.resolve(name)
            if tool is None:  # allowed() lists only the registry's
                continue
            spec = tool.spec
            properties = {k: v for k, v in spec.parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
            if name.startswith("core_memory_") and "label" in properties:
                if not labels:
                    continue
                properties["label"] = {**properties["label"], "enum": labels}
            required = [r for r in spec.parameters.get("required", []) if r != HEARTBEAT_PARAM]
            result.append(replace(spec, parameters={**spec.parameters, "properties": properties, "required": required}))
        return result + [FINISH_SPEC]

    def _system(self) -> str:
        lines = []
        for spec in self.specs():
            properties = spec.parameters.get("properties", {})
            lines.append(f"- {spec.name}({', '.join(properties)}): {spec.description}")
            for name, schema in properties.items():
                kind = (
                    " | ".join(json.dumps(v) for v in schema["enum"]) if "enum" in schema else schema.get("type", "any")
                )
                lines.append(f"    {name} ({kind}){': ' + schema['description'] if schema.get('description') else ''}")
        return f"{self.instructions}\n\n### Functions\n" + "\n".join(lines)

    def prompt(self, run: Run, transcript_text: str, conversation_: Conversation | None = None) -> list[ChatMessage]:
        """The pass's prompt: on the conversation's own prompt when there is one and it leaves room
        (then only the pass's request is evaluated), else standalone with the transcript."""
        if conversation_ is not None:
            messages = [*conversation_.prefix, ChatMessage("user", self._request(run, conversation_))]
            if self.runtime.count_prompt(messages) + self.answer_tokens <= self.runtime.info.context_window:
                return messages
        return self._standalone_prompt(run, transcript_text)

    def _standalone_prompt(self, run: Run, transcript_text: str) -> list[ChatMessage]:
        body = "\n".join(
            [
                "### Conversation since the last consolidation (times in UTC)",
                transcript_text,
                "",
                *self._memory_and_changes(run),
            ]
        )
        return [ChatMessage("system", self._system()), ChatMessage("user", body)]

    def _request(self, run: Run, conversation_: Conversation) -> str:
        """What follows the conversation's prompt: the pass's instructions and functions and the
        messages to read that are no longer in view (all stable during the pass), then memory as
        it is now and the changes so far (what a step changes)."""
        lines = ["### Consolidation pass", "The conversation above is paused. " + self._system(), ""]
        if conversation_.out_of_view:
            lines += [
                "### Earlier messages to read, no longer shown above (times in UTC)",
                conversation_.out_of_view,
                "",
            ]
        lines += [
            f"Read the conversation from {conversation_.first:%Y-%m-%d %H:%M} "
            f"to {conversation_.last:%Y-%m-%d %H:%M} (UTC).",
            "",
        ]
        return "\n".join([*lines, *self._memory_and_changes(run)])

    def conversation(self, messages: Sequence[Message]) -> Conversation | None:
        if self.prefix is None or not messages:
            return None
        try:
            prefix = list(self.prefix())
        except Exception:  # noqa: BLE001 - a missing prefix only costs the KV cache reuse
            log.debug("no conversation prefix for consolidation", exc_info=True)
            return None
        if not prefix:
            return None
        start = self.memory.agents.get(self.agent_id).context_start_id
        hidden = [m for m in messages if m.id < start]
        return Conversation(tuple(prefix), transcript(hidden), messages[0].created_at, messages[-1].created_at)

    def _memory_and_changes(self, run: Run) -> list[str]:
        changes = self.store.changes(run.id)
        shown = changes[-SHOWN_CHANGES:]
        lines = [f"- {c.status}: {c.describe()}" + (f" ({c.result})" if c.status == FAILED else "") for c in shown]
        if len(changes) > len(shown):
            lines.insert(0, f"- ... {len(changes) - len(shown)} earlier change(s)")
        if self.mode == ASK and changes:
            lines.append("(Proposed changes wait for the user's review: memory above does not show them yet.)")
        # Memory and the changes come last: what is above them is the same at every step of the
        # pass (and after a resume), so a runtime's KV cache keeps it and each step evaluates
        # only what changed.
        return [
            "### Memory now",
            self.memory.core.render(self.agent_id),
            f"{self.memory.archival.count(self.agent_id)} passages are stored in archival memory.",
            "",
            "### Changes made in this pass so far",
            "\n".join(lines) if lines else "None yet.",
            "",
            f"Make the next change, or call {FINISH} if memory is up to date.",
        ]

    def fitting(self, messages: list[Message]) -> list[Message]:
        """The longest run of messages (oldest first) whose transcript leaves room in the window
        for the instructions, memory, the changes list and the answer; the rest waits for the
        next pass."""
        window = self.runtime.info.context_window
        fixed = self.runtime.count_prompt(self._prompt_without_run())
        budget = int((window - self.answer_tokens - fixed) * 0.75)
        kept: list[Message] = []
        used = 0
        for message in messages:
            cost = self.runtime.count_tokens(_line(message)) + 1
            if kept and used + cost > budget:
                break
            kept.append(message)
            used += cost
        return kept

    def _prompt_without_run(self) -> list[ChatMessage]:
        body = "\n".join(
            [
                "### Memory now",
                self.memory.core.render(self.agent_id),
                "### Changes made in this pass so far",
                "None yet.",
            ]
        )
        return [ChatMessage("system", self._system()), ChatMessage("user", body)]


def transcript(messages: Sequence[Message]) -> str:
    return "\n".join(_line(m) for m in messages)


def _line(message: Message) -> str:
    who = "user" if message.kind == "user_message" else "companion"
    text = " ".join(message.search_text.split())
    if len(text) > LINE_CHARS:
        text = text[:LINE_CHARS] + " [...]"
    return f"[{message.created_at:%Y-%m-%d %H:%M}] {who}: {text}"
