"""The consolidation pass (see the package's overview): when one is due, the pass itself (steps
that apply or propose memory changes, resumable), and the user's review of proposals."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memdesk.core.base.errors import GenerationCancelled, MemDeskError, StoreBusyError, ToolError
from memdesk.core.consolidation.modes import APPLY, OFF, ConsolidationSettings, parse_mode
from memdesk.core.consolidation.prompt import FINISH, PassPrompt, allowed, transcript
from memdesk.core.consolidation.store import (
    ACCEPTED,
    APPLIED,
    FAILED,
    PENDING,
    REJECTED,
    Change,
    ConsolidationStore,
    Run,
)
from memdesk.core.memory.history import CONSOLIDATION, Cause
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.core.runtime.base import CallRequest, CancelToken, ChatMessage, Runtime
from memdesk.core.tools.context import DenyAll, ToolContext
from memdesk.core.tools.http import HttpPolicy
from memdesk.core.tools.registry import HEARTBEAT_PARAM, ToolRegistry, validate_arguments

log = logging.getLogger("memdesk.consolidation")

#: Below this many words from the user there is nothing worth a model call.
MIN_USER_WORDS = 12
#: Message kinds a pass reads: what the user said and what the agent said back.
READ_KINDS = ("user_message", "assistant_call")


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
        memory: MemoryServices,
        runtime: Runtime | None,  # None: review proposals only (``run`` needs a model)
        tools: ToolRegistry,
        instructions: str,
        settings: ConsolidationSettings,
        store: ConsolidationStore | None = None,
        prefix: Callable[[], Sequence[ChatMessage]] | None = None,
        before_apply: Callable[[], object] | None = None,
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
            run, reason = self._start(self.runtime)
            if run is None:
                return PassResult("skipped", reason)
        messages = self._messages(run.first_message_id, run.last_message_id)
        pass_prompt = self._prompt(self.runtime)
        text = transcript(messages)
        # Taken once: the agent's prompt gains a memory_update event after each applied change,
        # but the pass keeps to what the cache holds and lists its changes below it instead.
        conversation = pass_prompt.conversation(messages)
        changed: set[str] = set()
        cancelled = False
        try:
            while run.steps < self.settings.max_steps:
                if cancel is not None and cancel.cancelled:
                    raise GenerationCancelled("Consolidation stopped")
                request = CallRequest(
                    pass_prompt.prompt(run, text, conversation), pass_prompt.specs(), self.settings.params
                )  # no heartbeats
                turn = self.runtime.generate_call(request, cancel=cancel)
                finished, blocks = self._step(run, turn.text)
                changed |= blocks
                run = self.store.run(run.id)
                if finished:
                    break
        except GenerationCancelled:
            cancelled = True
            log.info(
                "consolidation of agent %s cancelled after %s step(s); it resumes next time", self.agent_id, run.steps
            )
        if not cancelled:
            with self.memory.db.transaction():
                run = self.store.finish(run.id)
        counts = _counts(self.store.changes(run.id))
        return PassResult(
            "cancelled" if cancelled else "done",
            run_id=run.id,
            applied=counts[APPLIED],
            proposed=counts[PENDING],
            failed=counts[FAILED],
            changed_blocks=frozenset(changed),
            resumed=resumed,
        )

    def run_when_idle(self, cancel: CancelToken | None = None) -> PassResult:
        """A pass the user did not ask for. The store held by another writer past the busy timeout
        (the graph extractor catching up, an ingestion) is no error to show: each step commits on
        its own, so the pass keeps what it finished and resumes there at the next idle moment."""
        try:
            return self.run(cancel)
        except StoreBusyError as error:
            log.info(
                "consolidation of agent %s met a busy store (%s); it resumes at the next idle moment",
                self.agent_id,
                error,
            )
            return PassResult(BUSY, "the memory store was busy; it resumes the next time you are away")

    def _prompt(self, runtime: Runtime) -> PassPrompt:
        return PassPrompt(
            self.agent_id,
            memory=self.memory,
            runtime=runtime,
            tools=self.tools,
            store=self.store,
            instructions=self.instructions,
            answer_tokens=self.settings.params.max_tokens,
            mode=self.settings.mode,
            prefix=self.prefix,
        )

    def _start(self, runtime: Runtime) -> tuple[Run | None, str]:
        watermark = self.store.watermark(self.agent_id)
        messages = self._messages(watermark + 1, None)
        if not messages:
            return None, "nothing new since the last pass"
        words = sum(len(m.search_text.split()) for m in messages if m.kind == "user_message")
        if words < MIN_USER_WORDS:
            return None, "too little conversation to consolidate"
        messages = self._prompt(runtime).fitting(messages)
        with self.memory.db.transaction():
            run = self.store.start(self.agent_id, watermark + 1, messages[-1].id, self.settings.mode)
        return run, ""

    def _step(self, run: Run, text: str) -> tuple[bool, set[str]]:
        """Parse and carry out one call; returns (the pass is finished, blocks changed)."""
        thoughts, function = "", "?"
        arguments: dict[str, Any] = {}
        db = self.memory.db
        try:
            thoughts, function, arguments = _parse(text)
            if function == FINISH:
                with db.transaction():
                    self.store.count_step(run.id)
                return True, set()
            tool = self.tools.resolve(function) if function in allowed(self.tools) else None
            if tool is None:
                names = ", ".join(allowed(self.tools))
                raise ToolError(f"{function} is not available during consolidation; use {names} or {FINISH}")
            arguments = validate_arguments(tool, arguments)
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
        if tool is None:
            raise ToolError(f"{function} is not available during consolidation")
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

    def _messages(self, first_id: int, last_id: int | None) -> list[Message]:
        messages = self.memory.recall.since(self.agent_id, first_id)
        return [
            m
            for m in messages
            if (last_id is None or m.id <= last_id) and m.kind in READ_KINDS and m.search_text.strip()
        ]

    def _context(self) -> ToolContext:
        m = self.memory
        return ToolContext(
            agent_id=self.agent_id,
            agents=m.agents,
            core=m.core,
            recall=m.recall,
            archival=m.archival,
            files=None,  # memory functions touch no files
            http=HttpPolicy.off(),  # memory functions make no requests
            runtime=self.runtime,
            params=self.settings.params,
            plain_assistant_prompt="",
            clock=m.clock,
            consent=DenyAll(),
            graph=m.graph,
        )


def _parse(text: str) -> tuple[str, str, dict[str, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolError(f"Your answer was not valid JSON ({error.msg}). Answer with one function call.") from error
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("function"), str)
        or not isinstance(data.get("params", {}), dict)
    ):
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
