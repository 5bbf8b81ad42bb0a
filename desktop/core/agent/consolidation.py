"""Idle-time consolidation: while the user is away, a pass reads the messages since the last pass
and updates memory with the memory-editing functions only (new facts about the user, corrections,
duplicates merged, details saved to archival memory).

Small local models rarely edit memory by themselves during a chat; a pass with one job, a short
transcript and only the memory functions in its grammar gives them a better chance, and costs the
user nothing because it runs when they are idle.

Rules:

* The front end decides when the user is idle; ``due`` adds "at most every N user turns", and a pass
  over an empty or tiny stretch of conversation returns before any model call.
* ``mode``: ``off``; ``apply`` (changes go straight into memory); ``ask`` (each change is checked
  against memory without writing it, then kept as a proposal the user accepts or rejects).
* A pass never blocks the user: the front end cancels it (the ``CancelToken``) when a message
  arrives; the runtime stops between tokens and the pass keeps what it already did.
* Resumable: each change is written together with its record in one transaction, the pass's range
  of messages is stored before the first model call, and the watermark (the last message read)
  moves only when the pass finishes. A pass cancelled or cut by a crash is resumed on the same
  range, with the changes it already made listed in its prompt so it does not make them twice.
* Every change is recorded as coming from consolidation (``ConsolidationStore``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from desktop.core.agent.consolidation_store import (
    APPLIED,
    ACCEPTED,
    FAILED,
    PENDING,
    REJECTED,
    Change,
    ConsolidationStore,
    Run,
)
from desktop.core.memory.history import CONSOLIDATION, Cause
from desktop.core.memory.recall import Message
from desktop.core.runtime.base import CallRequest, CancelToken, ChatMessage, Runtime, SamplingParams, ToolSpec
from desktop.core.settings_table import DEFAULTS
from desktop.core.tools.context import DenyAll, ToolContext
from desktop.core.tools.http import HttpPolicy
from desktop.core.tools.registry import HEARTBEAT_PARAM, ToolRegistry, validate_arguments
from desktop.errors import ConfigError, GenerationCancelled, MemDeskError, StoreBusyError, ToolError

log = logging.getLogger("memdesk.consolidation")

OFF, APPLY, ASK = "off", "apply", "ask"
MODES = (OFF, APPLY, ASK)
#: The only functions a pass may call (those the agent has; the graph one once it exists).
MEMORY_FUNCTIONS = ("core_memory_append", "core_memory_replace", "archival_memory_insert", "knowledge_graph_insert")
FINISH = "finish_consolidation"
FINISH_SPEC = ToolSpec(FINISH, "End this consolidation pass: memory is up to date.", {"type": "object", "properties": {}, "required": []})
#: Below this many words from the user there is nothing worth a model call.
MIN_USER_WORDS = 12
#: Message kinds a pass reads: what the user said and what the agent said back.
READ_KINDS = ("user_message", "assistant_call")
#: Changes listed in the prompt (the most recent); older ones are summarised by a count.
SHOWN_CHANGES = 20
LINE_CHARS = 1500


def parse_mode(value: str) -> str:
    mode = str(value).strip().lower()
    if mode not in MODES:
        raise ConfigError(f"Consolidation mode must be one of {', '.join(MODES)}, not {value!r}")
    return mode


@dataclass(frozen=True)
class ConsolidationSettings:
    mode: str = DEFAULTS.consolidation
    every_turns: int = DEFAULTS.consolidation_every_turns  # at most one pass per this many user messages
    max_steps: int = 8  # model calls per pass (across resumes)
    params: SamplingParams = field(default_factory=SamplingParams)


#: A pass's status when the store was held by another writer past the busy timeout: it resumes
#: where it stopped at the next idle moment (``Consolidator.run_when_idle``).
BUSY = "busy"


@dataclass(frozen=True)
class PassResult:
    status: str  # "skipped", "done", "cancelled", BUSY
    reason: str = ""
    run_id: int | None = None
    applied: int = 0
    proposed: int = 0
    failed: int = 0
    changed_blocks: frozenset[str] = frozenset()
    resumed: bool = False

    def describe(self) -> str:
        if self.status == "skipped":
            return f"Consolidation skipped: {self.reason}"
        if self.status == BUSY:
            return f"Consolidation paused: {self.reason}"
        what = f"{self.applied} change(s) applied, {self.proposed} proposed for review, {self.failed} failed"
        return f"Consolidation {'stopped' if self.status == 'cancelled' else 'finished'}: {what}"


class Consolidator:
    def __init__(
        self,
        agent_id: int,
        *,
        memory: Any,  # desktop.core.agent.loop.MemoryServices (not imported: the loop imports nothing from here)
        runtime: Runtime | None,  # None: review proposals only (``run`` needs a model)
        tools: ToolRegistry,
        instructions: str,
        settings: ConsolidationSettings = ConsolidationSettings(),
        store: ConsolidationStore | None = None,
        prefix: Callable[[], Sequence[ChatMessage]] | None = None,
        before_apply: Callable[[], None] | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.memory = memory
        self.runtime = runtime
        self.tools = tools
        self.instructions = instructions
        self.settings = replace(settings, mode=parse_mode(settings.mode))
        self.store = store or ConsolidationStore(memory.db, memory.clock)
        # The conversation's own prompt (``Agent.prompt_prefix``): a pass that starts with it finds
        # the runtime's KV cache still holding it and evaluates only its own request below it.
        self.prefix = prefix
        # Runs once before this object first changes memory (a pass in apply mode, or the
        # proposals the user accepts): the composition root takes a snapshot there.
        self._before_apply = before_apply
        self._applying = False

    def _about_to_apply(self) -> None:
        if not self._applying and self._before_apply is not None:
            self._before_apply()
        self._applying = True

    # --- when ----------------------------------------------------------------------------------
    def new_user_turns(self) -> int:
        return int(
            self.memory.db.scalar(
                "SELECT COUNT(*) FROM messages WHERE agent_id = ? AND id > ? AND kind = 'user_message'",
                (self.agent_id, self.store.watermark(self.agent_id)),
            )
        )

    def due(self) -> bool:
        """Worth a pass now that the user is idle: on, and an unfinished pass or N new user turns."""
        if self.settings.mode == OFF:
            return False
        if self.store.unfinished(self.agent_id) is not None:
            return True
        return self.new_user_turns() >= max(1, self.settings.every_turns)

    # --- the pass ------------------------------------------------------------------------------
    def run(self, cancel: CancelToken | None = None) -> PassResult:
        if self.settings.mode == OFF:
            return PassResult("skipped", "consolidation is off")
        if self.runtime is None:
            raise MemDeskError("Consolidation needs a model; none is loaded")
        self._applying = False  # each pass that changes memory is preceded by its own snapshot
        run = self.store.unfinished(self.agent_id)
        resumed = run is not None
        if run is None:
            run, reason = self._start()
            if run is None:
                return PassResult("skipped", reason)
        messages = self._messages(run.first_message_id, run.last_message_id)
        transcript = self._transcript(messages)
        # Taken once: the agent's prompt gains a memory_update event after each applied change,
        # but the pass keeps to what the cache holds and lists its changes below it instead.
        conversation = self._conversation(messages)
        changed: set[str] = set()
        cancelled = False
        try:
            while run.steps < self.settings.max_steps:
                if cancel is not None and cancel.cancelled:
                    raise GenerationCancelled("Consolidation stopped")
                request = CallRequest(self._prompt(run, transcript, conversation), self._specs(), self.settings.params)  # no heartbeats
                turn = self.runtime.generate_call(request, cancel=cancel)
                finished, blocks = self._step(run, turn.text)
                changed |= blocks
                run = self.store.run(run.id)
                if finished:
                    break
        except GenerationCancelled:
            cancelled = True
            log.info("consolidation of agent %s cancelled after %s step(s); it resumes next time", self.agent_id, run.steps)
        if not cancelled:
            with self.memory.db.transaction():
                run = self.store.finish(run.id)
        counts = _counts(self.store.changes(run.id))
        return PassResult(
            "cancelled" if cancelled else "done", run_id=run.id, applied=counts[APPLIED], proposed=counts[PENDING],
            failed=counts[FAILED], changed_blocks=frozenset(changed), resumed=resumed,
        )

    def run_when_idle(self, cancel: CancelToken | None = None) -> PassResult:
        """A pass the user did not ask for. The store held by another writer past the busy timeout
        (the graph extractor catching up, an ingestion) is no error to show: each step commits on
        its own, so the pass keeps what it finished and resumes there at the next idle moment."""
        try:
            return self.run(cancel)
        except StoreBusyError as error:
            log.info("consolidation of agent %s met a busy store (%s); it resumes at the next idle moment", self.agent_id, error)
            return PassResult(BUSY, "the memory store was busy; it resumes the next time you are away")

    def _start(self) -> tuple[Run | None, str]:
        watermark = self.store.watermark(self.agent_id)
        messages = self._messages(watermark + 1, None)
        if not messages:
            return None, "nothing new since the last pass"
        words = sum(len(m.search_text.split()) for m in messages if m.kind == "user_message")
        if words < MIN_USER_WORDS:
            return None, "too little conversation to consolidate"
        messages = self._fitting(messages)
        with self.memory.db.transaction():
            run = self.store.start(self.agent_id, watermark + 1, messages[-1].id, self.settings.mode)
        return run, ""

    def _step(self, run: Run, text: str) -> tuple[bool, set[str]]:
        """Parse and carry out one call; returns (the pass is finished, blocks changed)."""
        thoughts, function, arguments = "", "?", {}
        db = self.memory.db
        try:
            thoughts, function, arguments = _parse(text)
            if function == FINISH:
                with db.transaction():
                    self.store.count_step(run.id)
                return True, set()
            if function not in self._allowed():
                raise ToolError(f"{function} is not available during consolidation; use {', '.join(self._allowed())} or {FINISH}")
            arguments = validate_arguments(self.tools.resolve(function), arguments)
            if self.settings.mode == APPLY:
                self._about_to_apply()
                with db.transaction():
                    result, blocks = self._execute(function, arguments)
                    self.store.add_change(run, function, arguments, thoughts, APPLIED, result)
                    self.store.count_step(run.id)
                return False, blocks
            with db.dry_run():  # check the proposal against memory as it is now, write nothing
                self._execute(function, arguments)
            with db.transaction():
                self.store.add_change(run, function, arguments, thoughts, PENDING, "waiting for the user")
                self.store.count_step(run.id)
            return False, set()
        except ToolError as error:
            message = error.message
        except MemDeskError:
            raise  # the environment's fault (disk full, store locked): the user must see it
        except Exception as error:  # a bug in a tool must not lose the pass
            log.exception("consolidation call %s raised", function)
            message = f"{function} raised {type(error).__name__}: {error}"
        with db.transaction():
            self.store.add_change(run, function, arguments, thoughts, FAILED, message)
            self.store.count_step(run.id)
        return False, set()

    def _execute(self, function: str, arguments: dict[str, Any]) -> tuple[str, set[str]]:
        tool = self.tools.resolve(function)
        context = self._context()
        # The memory history records these changes as consolidation's (consolidation_changes keeps
        # the pass's own record of what it proposed and did).
        context.source = CONSOLIDATION
        context.cause = Cause(note=f"consolidation: {function}")
        output = tool.function(context, **arguments)
        return ("None" if output is None else str(output)), set(context.changed_blocks)

    # --- the user's review (mode ask) ------------------------------------------------------------
    def pending(self) -> list[Change]:
        return self.store.pending(self.agent_id)

    def accept(self, change_id: int) -> Change:
        """Apply a proposed change to memory as it is now (it may no longer fit: then it fails)."""
        change = self._pending_change(change_id)
        self._about_to_apply()
        db = self.memory.db
        try:
            with db.transaction():
                result, _blocks = self._execute(change.function, change.arguments)
                return self.store.decide(change.id, ACCEPTED, result)
        except ToolError as error:
            with db.transaction():
                return self.store.decide(change.id, FAILED, f"could not be applied: {error.message}")

    def reject(self, change_id: int) -> Change:
        change = self._pending_change(change_id)
        with self.memory.db.transaction():
            return self.store.decide(change.id, REJECTED, "rejected by the user")

    def _pending_change(self, change_id: int) -> Change:
        change = self.store.change(change_id)
        if change is None or change.agent_id != self.agent_id:
            raise MemDeskError(f"No proposed memory change {change_id} for this agent")
        if change.status != PENDING:
            raise MemDeskError(f"Memory change {change_id} was already {change.status}")
        return change

    # --- what the model sees -----------------------------------------------------------------
    def _allowed(self) -> list[str]:
        return [name for name in MEMORY_FUNCTIONS if self.tools.resolve(name) is not None]

    def _specs(self) -> list[ToolSpec]:
        """Memory functions only, without request_heartbeat (a pass chains by itself), and core
        memory functions limited to the blocks that exist and are writable."""
        labels = [b.label for b in self.memory.core.blocks(self.agent_id) if not b.read_only]
        specs = []
        for name in self._allowed():
            spec = self.tools.resolve(name).spec
            properties = {k: v for k, v in spec.parameters.get("properties", {}).items() if k != HEARTBEAT_PARAM}
            if name.startswith("core_memory_") and "label" in properties:
                if not labels:
                    continue
                properties["label"] = {**properties["label"], "enum": labels}
            required = [r for r in spec.parameters.get("required", []) if r != HEARTBEAT_PARAM]
            specs.append(replace(spec, parameters={**spec.parameters, "properties": properties, "required": required}))
        return specs + [FINISH_SPEC]

    def _system(self) -> str:
        lines = []
        for spec in self._specs():
            properties = spec.parameters.get("properties", {})
            lines.append(f"- {spec.name}({', '.join(properties)}): {spec.description}")
            for name, schema in properties.items():
                kind = " | ".join(json.dumps(v) for v in schema["enum"]) if "enum" in schema else schema.get("type", "any")
                lines.append(f"    {name} ({kind}){': ' + schema['description'] if schema.get('description') else ''}")
        return f"{self.instructions}\n\n### Functions\n" + "\n".join(lines)

    def _prompt(self, run: Run, transcript: str, conversation: "_Conversation | None" = None) -> list[ChatMessage]:
        """The pass's prompt: on the conversation's own prompt when there is one and it leaves room
        (then only the pass's request is evaluated), else standalone with the transcript."""
        if conversation is not None:
            messages = [*conversation.prefix, ChatMessage("user", self._request(run, conversation))]
            if self.runtime.count_prompt(messages) + self.settings.params.max_tokens <= self.runtime.info.context_window:
                return messages
        return self._standalone_prompt(run, transcript)

    def _standalone_prompt(self, run: Run, transcript: str) -> list[ChatMessage]:
        body = "\n".join(
            [
                "### Conversation since the last consolidation (times in UTC)",
                transcript,
                "",
                *self._memory_and_changes(run),
            ]
        )
        return [ChatMessage("system", self._system()), ChatMessage("user", body)]

    def _request(self, run: Run, conversation: "_Conversation") -> str:
        """What follows the conversation's prompt: the pass's instructions and functions and the
        messages to read that are no longer in view (all stable during the pass), then memory as
        it is now and the changes so far (what a step changes)."""
        lines = ["### Consolidation pass", "The conversation above is paused. " + self._system(), ""]
        if conversation.out_of_view:
            lines += ["### Earlier messages to read, no longer shown above (times in UTC)", conversation.out_of_view, ""]
        lines += [f"Read the conversation from {conversation.first:%Y-%m-%d %H:%M} to {conversation.last:%Y-%m-%d %H:%M} (UTC).", ""]
        return "\n".join([*lines, *self._memory_and_changes(run)])

    def _conversation(self, messages: Sequence[Message]) -> "_Conversation | None":
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
        return _Conversation(tuple(prefix), self._transcript(hidden), messages[0].created_at, messages[-1].created_at)

    def _memory_and_changes(self, run: Run) -> list[str]:
        changes = self.store.changes(run.id)
        shown = changes[-SHOWN_CHANGES:]
        lines = [f"- {c.status}: {c.describe()}" + (f" ({c.result})" if c.status == FAILED else "") for c in shown]
        if len(changes) > len(shown):
            lines.insert(0, f"- ... {len(changes) - len(shown)} earlier change(s)")
        if self.settings.mode == ASK and changes:
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

    def _messages(self, first_id: int, last_id: int | None) -> list[Message]:
        messages = self.memory.recall.since(self.agent_id, first_id)
        return [
            m for m in messages
            if (last_id is None or m.id <= last_id) and m.kind in READ_KINDS and m.search_text.strip()
        ]

    def _transcript(self, messages: Sequence[Message]) -> str:
        return "\n".join(_line(m) for m in messages)

    def _fitting(self, messages: list[Message]) -> list[Message]:
        """The longest run of messages (oldest first) whose transcript leaves room in the window
        for the instructions, memory, the changes list and the answer; the rest waits for the
        next pass."""
        window = self.runtime.info.context_window
        fixed = self.runtime.count_prompt(self._prompt_without_run())
        budget = int((window - self.settings.params.max_tokens - fixed) * 0.75)
        kept, used = [], 0
        for message in messages:
            cost = self.runtime.count_tokens(_line(message)) + 1
            if kept and used + cost > budget:
                break
            kept.append(message)
            used += cost
        return kept

    def _prompt_without_run(self) -> list[ChatMessage]:
        body = "\n".join(["### Memory now", self.memory.core.render(self.agent_id), "### Changes made in this pass so far", "None yet."])
        return [ChatMessage("system", self._system()), ChatMessage("user", body)]

    def _context(self) -> ToolContext:
        m = self.memory
        return ToolContext(
            agent_id=self.agent_id, agents=m.agents, core=m.core, recall=m.recall, archival=m.archival,
            files=None,  # type: ignore[arg-type] - memory functions touch no files
            http=HttpPolicy(), runtime=self.runtime, params=self.settings.params, plain_assistant_prompt="",
            clock=m.clock, consent=DenyAll(), graph=m.graph,
        )


@dataclass(frozen=True)
class _Conversation:
    """The conversation's prompt a pass builds on, and what of the pass's messages it no longer shows."""

    prefix: tuple[ChatMessage, ...]
    out_of_view: str  # transcript lines of the pass's messages evicted from the context ("" if none)
    first: datetime  # when the pass's first and last messages were sent
    last: datetime


def _line(message: Message) -> str:
    who = "user" if message.kind == "user_message" else "companion"
    text = " ".join(message.search_text.split())
    if len(text) > LINE_CHARS:
        text = text[:LINE_CHARS] + " [...]"
    return f"[{message.created_at:%Y-%m-%d %H:%M}] {who}: {text}"


def _parse(text: str) -> tuple[str, str, dict[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolError(f"Your answer was not valid JSON ({error.msg}). Answer with one function call.") from error
    if not isinstance(data, dict) or not isinstance(data.get("function"), str) or not isinstance(data.get("params", {}), dict):
        raise ToolError('Answer with one JSON object: {"function": NAME, "params": {...}}')
    params = dict(data.get("params", {}))
    thoughts = str(params.pop("inner_thoughts", ""))
    params.pop(HEARTBEAT_PARAM, None)
    return thoughts, data["function"], params


def _counts(changes: Sequence[Change]) -> dict[str, int]:
    counts = {APPLIED: 0, PENDING: 0, FAILED: 0}
    for change in changes:
        if change.status in counts:
            counts[change.status] += 1
        elif change.status in (ACCEPTED, REJECTED):
            counts[PENDING] += 1  # proposed by this pass, decided since
    return counts
