"""What a consolidation pass shows the model: the memory functions only (and one to finish), the
messages to read, memory as it is now and the changes the pass made so far; built on the
conversation's own prompt when it leaves room, so the runtime's KV cache still holds most of it.
Part of the ``Consolidator``, whose settings and memory it reads."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from memdesk.core.agent.consolidation.modes import ASK
from memdesk.core.agent.consolidation.store import FAILED, Run
from memdesk.core.memory.recall import Message
from memdesk.core.runtime.base import ChatMessage, ToolSpec
from memdesk.core.tools.registry import HEARTBEAT_PARAM

if TYPE_CHECKING:
    from memdesk.core.agent.consolidation.consolidator import Consolidator

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


def allowed(pass_: Consolidator) -> list[str]:
    return [name for name in MEMORY_FUNCTIONS if pass_.tools.resolve(name) is not None]


def specs(pass_: Consolidator) -> list[ToolSpec]:
    """Memory functions only, without request_heartbeat (a pass chains by itself), and core
    memory functions limited to the blocks that exist and are writable."""
    labels = [b.label for b in pass_.memory.core.blocks(pass_.agent_id) if not b.read_only]
    result = []
    for name in allowed(pass_):
        spec = pass_.tools.resolve(name).spec
        properties = {k: v for k, v in spec.parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
        if name.startswith("core_memory_") and "label" in properties:
            if not labels:
                continue
            properties["label"] = {**properties["label"], "enum": labels}
        required = [r for r in spec.parameters.get("required", []) if r != HEARTBEAT_PARAM]
        result.append(replace(spec, parameters={**spec.parameters, "properties": properties, "required": required}))
    return result + [FINISH_SPEC]


def _system(pass_: Consolidator) -> str:
    lines = []
    for spec in specs(pass_):
        properties = spec.parameters.get("properties", {})
        lines.append(f"- {spec.name}({', '.join(properties)}): {spec.description}")
        for name, schema in properties.items():
            kind = " | ".join(json.dumps(v) for v in schema["enum"]) if "enum" in schema else schema.get("type", "any")
            lines.append(f"    {name} ({kind}){': ' + schema['description'] if schema.get('description') else ''}")
    return f"{pass_.instructions}\n\n### Functions\n" + "\n".join(lines)


def prompt(
    pass_: Consolidator, run: Run, transcript_text: str, conversation_: Conversation | None = None
) -> list[ChatMessage]:
    """The pass's prompt: on the conversation's own prompt when there is one and it leaves room
    (then only the pass's request is evaluated), else standalone with the transcript."""
    if conversation_ is not None:
        messages = [*conversation_.prefix, ChatMessage("user", _request(pass_, run, conversation_))]
        if pass_.runtime.count_prompt(messages) + pass_.settings.params.max_tokens <= pass_.runtime.info.context_window:
            return messages
    return _standalone_prompt(pass_, run, transcript_text)


def _standalone_prompt(pass_: Consolidator, run: Run, transcript_text: str) -> list[ChatMessage]:
    body = "\n".join(
        [
            "### Conversation since the last consolidation (times in UTC)",
            transcript_text,
            "",
            *_memory_and_changes(pass_, run),
        ]
    )
    return [ChatMessage("system", _system(pass_)), ChatMessage("user", body)]


def _request(pass_: Consolidator, run: Run, conversation_: Conversation) -> str:
    """What follows the conversation's prompt: the pass's instructions and functions and the
    messages to read that are no longer in view (all stable during the pass), then memory as
    it is now and the changes so far (what a step changes)."""
    lines = ["### Consolidation pass", "The conversation above is paused. " + _system(pass_), ""]
    if conversation_.out_of_view:
        lines += ["### Earlier messages to read, no longer shown above (times in UTC)", conversation_.out_of_view, ""]
    lines += [
        f"Read the conversation from {conversation_.first:%Y-%m-%d %H:%M} to {conversation_.last:%Y-%m-%d %H:%M} (UTC).",
        "",
    ]
    return "\n".join([*lines, *_memory_and_changes(pass_, run)])


def conversation(pass_: Consolidator, messages: Sequence[Message]) -> Conversation | None:
    if pass_.prefix is None or not messages:
        return None
    try:
        prefix = list(pass_.prefix())
    except Exception:  # noqa: BLE001 - a missing prefix only costs the KV cache reuse
        log.debug("no conversation prefix for consolidation", exc_info=True)
        return None
    if not prefix:
        return None
    start = pass_.memory.agents.get(pass_.agent_id).context_start_id
    hidden = [m for m in messages if m.id < start]
    return Conversation(tuple(prefix), transcript(hidden), messages[0].created_at, messages[-1].created_at)


def _memory_and_changes(pass_: Consolidator, run: Run) -> list[str]:
    changes = pass_.store.changes(run.id)
    shown = changes[-SHOWN_CHANGES:]
    lines = [f"- {c.status}: {c.describe()}" + (f" ({c.result})" if c.status == FAILED else "") for c in shown]
    if len(changes) > len(shown):
        lines.insert(0, f"- ... {len(changes) - len(shown)} earlier change(s)")
    if pass_.settings.mode == ASK and changes:
        lines.append("(Proposed changes wait for the user's review: memory above does not show them yet.)")
    # Memory and the changes come last: what is above them is the same at every step of the
    # pass (and after a resume), so a runtime's KV cache keeps it and each step evaluates
    # only what changed.
    return [
        "### Memory now",
        pass_.memory.core.render(pass_.agent_id),
        f"{pass_.memory.archival.count(pass_.agent_id)} passages are stored in archival memory.",
        "",
        "### Changes made in this pass so far",
        "\n".join(lines) if lines else "None yet.",
        "",
        f"Make the next change, or call {FINISH} if memory is up to date.",
    ]


def transcript(messages: Sequence[Message]) -> str:
    return "\n".join(_line(m) for m in messages)


def fitting(pass_: Consolidator, messages: list[Message]) -> list[Message]:
    """The longest run of messages (oldest first) whose transcript leaves room in the window
    for the instructions, memory, the changes list and the answer; the rest waits for the
    next pass."""
    window = pass_.runtime.info.context_window
    fixed = pass_.runtime.count_prompt(_prompt_without_run(pass_))
    budget = int((window - pass_.settings.params.max_tokens - fixed) * 0.75)
    kept, used = [], 0
    for message in messages:
        cost = pass_.runtime.count_tokens(_line(message)) + 1
        if kept and used + cost > budget:
            break
        kept.append(message)
        used += cost
    return kept


def _prompt_without_run(pass_: Consolidator) -> list[ChatMessage]:
    body = "\n".join(
        [
            "### Memory now",
            pass_.memory.core.render(pass_.agent_id),
            "### Changes made in this pass so far",
            "None yet.",
        ]
    )
    return [ChatMessage("system", _system(pass_)), ChatMessage("user", body)]


def _line(message: Message) -> str:
    who = "user" if message.kind == "user_message" else "companion"
    text = " ".join(message.search_text.split())
    if len(text) > LINE_CHARS:
        text = text[:LINE_CHARS] + " [...]"
    return f"[{message.created_at:%Y-%m-%d %H:%M}] {who}: {text}"
