"""The MemGPT step loop.

An input event (user message, login, timed heartbeat) is saved in its own transaction first, so a
failure later never loses what the user sent (a front end saves a user message the moment it is
sent, before it preempts a background turn: ``accept_user_message``, then ``answer_user_message``).
Then the agent steps: build the prompt, let the model produce one function call, check it (chain
rules, consent) and run it, and save the call, its result and the next event in one short
transaction, so a crash mid-step loses at most that step and nothing slow (a consent dialog, the
network, a generation) holds the store's write lock. After each step the next input is, in order:
the memory-pressure alert (once until the next eviction), a heartbeat because the call failed or
was refused, a heartbeat because the model asked for one or has a search result to read, a
heartbeat because the user has not been answered yet (then the next step may only answer);
otherwise control returns to the user. A cancelled token stops the turn between steps (a user
message preempting a background turn) or inside a generation; a step whose call was already running
when it was cancelled is saved, with no next event queued.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from desktop.core.agent import events, unanswered
from desktop.core.agent.accept import accept_user_message
from desktop.core.agent.agents import AgentRecord, AgentStore
from desktop.core.agent.auto_recall import EVENT_KIND as MEMORIES
from desktop.core.agent.auto_recall import AutoRecall, RecallResult, ShownMemories, Visible, expired_view, memories_text, newest_event_id
from desktop.core.agent.recall_budget import section_tokens
from desktop.core.agent.chain import ONCE_PER_TURN, ChainLimits, TurnRules
from desktop.core.agent.context import ContextBudget, PromptParts, measure, to_chat, tool_costs, truncate_for_context
from desktop.core.agent.eviction import Summarizer, choose_cut
from desktop.core.agent.failure_log import where_it_failed
from desktop.core.agent.memory_view import MemoryView, render_memory
from desktop.core.agent.observer import AgentObserver, StepRecord, TurnResult
from desktop.core.clock import Clock
from desktop.core.graph.render import render_top_entities
from desktop.core.graph.store import KnowledgeGraph
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.memory.core_memory import CoreMemory
from desktop.core.memory.history import Cause
from desktop.core.memory.recall import Message, RecallMemory
from desktop.core.prompts import Prompts
from desktop.core.runtime.base import CallRequest, CancelToken, ChatMessage, ModelTurn, Runtime, SamplingParams, ToolSpec
from desktop.core.storage import Database
from desktop.core.tools.builtin import HUMAN, REMEMBER
from desktop.core.tools.context import ConsentPolicy, DenyAll, ToolContext
from desktop.core.tools.files import FileSandbox
from desktop.core.tools.http import HttpPolicy
from desktop.core.tools.registry import HEARTBEAT_PARAM, Tool, ToolRegistry, validate_arguments
from desktop.errors import ConsentDenied, ContextOverflowError, GenerationCancelled, MemDeskError, ToolError

log = logging.getLogger("memdesk.agent")

#: The longest note send_message may add to the human block in one call.
REMEMBER_CHARS = 200


@dataclass(frozen=True)
class AgentSettings:
    max_steps: int = 4  # per input event: stops runaway chains (a capable model's catalog entry may raise it)
    searches_per_turn: int = 2  # new searches per search function and turn (paging does not count)
    heartbeat_minutes: int = 0  # timed heartbeats while idle (0: off); the instructions say which
    login_after_minutes: int = 60  # a login event when the agent opens after this gap (0: never)
    function_result_chars: int = 6000
    top_entities: int = 8  # knowledge-graph entities shown with the memory section (0: none)
    params: SamplingParams = field(default_factory=SamplingParams)
    tool_section: str = "signatures"  # the prompt's tool list style, per model (see models/catalog.py)
    #: inner_thoughts' bound, kept by the grammar: each character is time before the reply starts
    #: (None: the runtime's default). Per model (see models/catalog.py), stated in the instructions.
    thoughts_chars: int | None = None
    #: Functions the model is not offered, per model (see models/catalog.py): left out of the
    #: grammar and of the prompt's tool section.
    hidden_functions: frozenset[str] = frozenset()

    @property
    def reserve(self) -> int:
        """Tokens kept free for the model's answer."""
        return self.params.max_tokens


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


class Agent:
    def __init__(
        self,
        agent_id: int,
        *,
        memory: MemoryServices,
        runtime: Runtime,
        tools: ToolRegistry,
        prompts: Prompts,
        files: FileSandbox,
        http: HttpPolicy = HttpPolicy(),
        consent: ConsentPolicy | None = None,
        settings: AgentSettings = AgentSettings(),
        observer: AgentObserver | None = None,
        recall: AutoRecall | None = None,
    ) -> None:
        self.id = agent_id
        self.memory = memory
        self.runtime = runtime
        self.tools = tools
        self.prompts = prompts
        self.files = files
        self.http = http
        self.consent = consent or DenyAll()
        self.settings = settings
        self.observer = observer or AgentObserver()
        self.recall = recall  # automatic recall before each user message (None: off)
        self.shown = ShownMemories(memory.db)
        self.last_recall: RecallResult | None = None
        self._summarizer = Summarizer(runtime, prompts.summarizer, settings.params, settings.reserve)
        self._last_budget: ContextBudget | None = None
        # The memory section is rendered again on this object's first step: a new process or a
        # switched agent means the runtime's cache holds something else, so it costs nothing.
        self._view_checked = False
        self._synced_at: int | None = None  # the message this object accepted right after a memory check

    # --- public API ------------------------------------------------------------------------
    @property
    def record(self) -> AgentRecord:
        return self.memory.agents.get(self.id)

    def send_user_message(self, text: str, cancel: CancelToken | None = None) -> TurnResult:
        return self.answer_user_message(self.accept_user_message(text).id, cancel)

    def accept_user_message(self, text: str) -> Message:
        """Save what the user sent, committed on its own, before anything is cancelled or waited
        for (see desktop.core.agent.accept); ``answer_user_message`` then runs the turn."""
        with self.memory.db.transaction():
            self._sync_memory()  # a change made before this message is reported before it
            message = accept_user_message(self.memory, self.id, text)
        self._synced_at = message.id
        return message

    def answer_user_message(self, message_id: int, cancel: CancelToken | None = None) -> TurnResult:
        """Run the turn that answers an accepted (already saved) user message."""
        started = time.perf_counter()
        message = self.memory.recall.get(message_id)
        if message is None or message.agent_id != self.id or message.kind != "user_message":
            raise ValueError(f"message {message_id} is not a user message to agent {self.id}")
        if self._synced_at != message_id or self.memory.recall.last_id(self.id) != message_id:
            # Saved without the memory check (through another connection), or a preempted
            # background step came after it: what changed meanwhile is reported now. Not twice
            # in a row, which would render a stale section one turn early.
            with self.memory.db.transaction():
                self._sync_memory()
        self._recall_for(message.search_text, cancel)
        return self._steps("user_message", cancel, started)

    def unanswered(self) -> Message | None:
        """The newest user message with no reply of this agent after it (see ``unanswered.py``)."""
        return unanswered.newest(self.memory.db, self.memory.recall, self.id)

    def answer_if_unanswered(self, message_id: int, cancel: CancelToken | None = None) -> TurnResult | None:
        """``answer_user_message`` unless a reply came after the message meanwhile (None then):
        a message queued twice, or found unanswered on open and also sent, is answered once."""
        if not unanswered.is_unanswered(self.memory.db, self.id, message_id):
            return None
        return self.answer_user_message(message_id, cancel)

    def login(self, cancel: CancelToken | None = None) -> TurnResult:
        now = self.memory.clock.now()
        content = events.login(self.record.last_login, now)
        self.memory.agents.update(self.id, last_login=now)
        return self._run("login", content, cancel=cancel)

    def login_due(self) -> bool:
        """Whether opening the agent now should send a login event: after a gap without any
        message (or before the first one), as MemGPT greets a returning user."""
        gap = self.settings.login_after_minutes
        if gap <= 0:
            return False
        last = self.memory.recall.last_activity(self.id)
        return last is None or self.memory.clock.now() - last >= timedelta(minutes=gap)

    def timed_heartbeat(self, cancel: CancelToken | None = None) -> TurnResult | None:
        """Run on a timer while the user is idle; None when the agent paused its heartbeats."""
        paused_until = self.record.heartbeats_paused_until
        now = self.memory.clock.now()
        if paused_until is not None and paused_until > now:
            return None
        self.observer.on_event("heartbeat", "timed heartbeat")
        return self._run("heartbeat", events.heartbeat(events.HEARTBEAT_TIMED, now), cancel=cancel)

    def prompt_prefix(self) -> list[ChatMessage]:
        """The prompt the next step would send, before the model's turn: another call that starts
        with it (the knowledge graph's fact extraction) shares the runtime's KV cache. The layout
        has no live section below the messages, so that is the whole prompt."""
        return self._prompt_parts().chat_messages()

    def budget(self) -> ContextBudget:
        """The exact context budget of the prompt the next step would send."""
        self._last_budget = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
        return self._last_budget

    def static_prefix(self) -> list[ChatMessage]:
        """The messages every prompt of this agent starts with and that never change between turns
        (instructions and tools): a runtime can evaluate them once and keep their KV state."""
        return self._prompt_parts().static_messages()

    def memory_prefix(self) -> list[ChatMessage]:
        """The static prefix and the memory section after it, which stays as rendered until the
        next refresh: warming it too leaves a first message only its own tokens to evaluate."""
        parts = self._prompt_parts()
        return [*parts.static_messages(), parts.memory_message()]

    def tool_costs(self) -> dict[str, int]:
        """Tokens each tool adds to the prompt's tools section."""
        return tool_costs(self.runtime, self.tools.describe_each())

    # --- the loop --------------------------------------------------------------------------
    def _run(self, kind: str, content: str, *, cancel: CancelToken | None) -> TurnResult:
        """A turn on an event the agent makes itself (login, heartbeat), saved first."""
        started = time.perf_counter()
        with self.memory.db.transaction():
            self._sync_memory()  # a change made before this event is reported before it
            self.memory.recall.add(self.id, role="user", kind=kind, content=content, created_at=self.memory.clock.now())
        return self._steps(kind, cancel, started)

    def _steps(self, kind: str, cancel: CancelToken | None, started: float) -> TurnResult:
        db = self.memory.db
        result = TurnResult(kind=kind)
        rules = TurnRules(self.tools, ChainLimits(self.settings.max_steps, self.settings.searches_per_turn))
        try:
            while rules.steps < self.settings.max_steps:
                if cancel is not None and cancel.cancelled:
                    raise GenerationCancelled("Stopped between steps")
                self._ensure_fits(cancel)
                if rules.steps:
                    with db.transaction():
                        self._sync_memory()
                rules.idle = {} if rules.edited else self._idle_functions(kind)  # an edit may have made a search worth it
                parts = self._prompt_parts()
                request = CallRequest(
                    parts.chat_messages(), rules.offered(self._live_specs()), self.settings.params, self.tools.heartbeat_tools(),
                    thoughts_chars=self.settings.thoughts_chars,
                )
                turn = self.runtime.generate_call(request, on_event=self.observer.on_stream, cancel=cancel)
                pending = self._prepare(turn, rules, cancel)  # outside any transaction: may be slow
                with db.transaction():  # short: what the step changed, saved all or nothing
                    step, context = self._commit(pending, rules)
                    result.steps.append(step)
                    if step.ok and step.function == "send_message":
                        result.replies.append(step.arguments["message"])
                    # Cancelled while the call ran (a user message preempting a background turn,
                    # already saved): the step stands, but no event is queued after the user's.
                    stopped = cancel is not None and cancel.cancelled
                    next_event = None if stopped else self._next_event(step, rules, kind)
                    if next_event is not None:
                        self.memory.recall.add(
                            self.id, role="user", kind=next_event[0], content=next_event[1], created_at=self.memory.clock.now()
                        )
                self._report(step, context)
                if stopped:
                    raise GenerationCancelled("Stopped after the step")
                if next_event is None:
                    break
            else:
                result.capped = True
                log.warning("agent %s hit the step cap of %s", self.id, self.settings.max_steps)
                self.observer.on_event("step_cap", f"Stopped after {self.settings.max_steps} chained steps")
        finally:
            result.budget = self._last_budget
            result.seconds = time.perf_counter() - started
            self.observer.on_turn_end(result)
        return result

    def _recall_for(self, text: str, cancel: CancelToken | None = None) -> None:
        """Automatic recall: memories out of view that may matter for ``text``, placed right after
        it (never above: the conversation's KV cache stays valid)."""
        self.last_recall = None
        if self.recall is None:
            return
        # sized by what the message needs and the room the window leaves (agent.recall_budget)
        budget_tokens = section_tokens(text, measure(self.runtime, self._prompt_parts(), self.settings.reserve), self.recall.settings.budget_fraction)
        result = self._gather(text, budget_tokens)
        if result.content is not None and self._make_room(self.runtime.count_prompt([ChatMessage("user", result.content)]), cancel):
            # The section needed an eviction, which took out of view messages the search left out
            # because they were in view: search again, so they may come back.
            again = self._gather(text, budget_tokens)
            result = result if again.status in ("timeout", "failed") else again  # the first still holds
        self.last_recall = result
        if result.content is not None:
            with self.memory.db.transaction():
                event = self.memory.recall.add(self.id, role="user", kind=MEMORIES, content=result.content, created_at=self.memory.clock.now())
                self.shown.record(self.id, event.id, result.memories)
            self.observer.on_search_hits([("automatic", m.item if m.item is not None else m.line()) for m in result.memories])
            self.observer.on_event("memories", memories_text(json.loads(result.content)["memories"]))
        elif result.status in ("timeout", "failed"):
            self.observer.on_event("recall", f"automatic recall {'timed out' if result.status == 'timeout' else 'failed'}; the reply went ahead without it")

    def _gather(self, text: str, budget_tokens: int) -> RecallResult:
        assert self.recall is not None
        record = self.record
        in_context = self._in_context(record)
        view, _update = self._planned_view(record)
        shown_from = max(record.context_start_id, record.recall_expired_before)  # expired events show nothing
        visible = Visible(_visible_text([view.text, *(m.content for m in in_context)]), self.shown.refs_since(self.id, shown_from))
        return self.recall.gather(
            self.id, text, first_in_context=record.context_start_id, visible=visible,
            budget_tokens=budget_tokens, count_tokens=self.runtime.count_tokens,
            truncate=lambda passage, tokens: truncate_for_context(self.runtime, passage, tokens),
            inline=self.memory.db.in_transaction,  # a search thread would wait for the caller's transaction
        )

    def _report(self, step: StepRecord, context: ToolContext) -> None:
        self.observer.on_step(step)
        if context.changed_blocks:
            self.observer.on_memory_changed(set(context.changed_blocks))
        if context.last_hits:
            self.observer.on_search_hits(list(context.last_hits))
        self.observer.on_budget(self.budget())

    def _next_event(self, step: StepRecord, rules: TurnRules, kind: str) -> tuple[str, str] | None:
        budget = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
        if budget.used >= budget.warning_at and not self.record.pressure_alert_sent:
            self.memory.agents.update(self.id, pressure_alert_sent=True)
            self.observer.on_event("alert", "memory pressure: the agent was told to save what matters")
            return "system_alert", events.system_alert(events.PRESSURE_ALERT)
        if step.refused:
            return "heartbeat", events.heartbeat(events.HEARTBEAT_AFTER_REFUSAL)
        if not step.ok:
            return "heartbeat", events.heartbeat(events.HEARTBEAT_AFTER_FAILURE)
        if step.heartbeat:
            return "heartbeat", events.heartbeat(events.HEARTBEAT_AFTER_CALL)
        tool = self.tools.resolve(step.function)
        if tool is not None and tool.kind in ("search", "read"):
            # A result is only worth something once read: small models often search and yield.
            return "heartbeat", events.heartbeat(events.HEARTBEAT_TO_READ)
        if kind == "user_message" and not rules.replied:
            # The user asked something: the turn does not end in silence. The next step may only answer.
            rules.require_answer()
            return "heartbeat", events.heartbeat(events.HEARTBEAT_UNANSWERED)
        return None

    def _idle_functions(self, kind: str) -> dict[str, str]:
        """Functions that can bring nothing new to this step, with why (see chain.py): when
        automatic recall has just placed what memory holds for the user's message, a search or
        message_chatgpt would only cost a step before the reply."""
        recalled = self.last_recall is not None and self.last_recall.status == "placed"
        if kind != "user_message" or not recalled:
            return {}
        placed = "the memories automatic recall found for this message are in view"
        return {tool.name: placed for tool in self.tools.tools() if tool.kind == "search" or tool.name in ONCE_PER_TURN}

    def _live_specs(self) -> list[ToolSpec]:
        """The tool specs for this step's grammar, before the chain rules narrow them: core memory
        functions may name only the blocks that exist and are writable, so a small model cannot
        pick a missing or read-only block. (The prompt's tool section stays static, which keeps
        the KV cache warm.)"""
        labels = [b.label for b in self.memory.core.blocks(self.id) if not b.read_only]
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

    # --- one step --------------------------------------------------------------------------
    # A step is split so that nothing slow holds the store's write lock: ``_prepare`` parses and
    # validates the call, applies the chain rules, asks the user's consent and runs every tool
    # that does not write the store (searches, files, network, message_chatgpt's generation);
    # ``_commit`` runs inside one short transaction: the tools that write the store, then the
    # call, its result, the memory view and the next event. A crash loses at most that step.
    def _tool_context(self, cancel: CancelToken | None = None) -> ToolContext:
        m = self.memory
        return ToolContext(
            agent_id=self.id, agents=m.agents, core=m.core, recall=m.recall, archival=m.archival, files=self.files,
            http=self.http, runtime=self.runtime, params=self.settings.params,
            plain_assistant_prompt=self.prompts.plain_assistant, clock=m.clock, consent=self.consent, cancel=cancel, graph=m.graph,
            cause=Cause(message_id=m.recall.last_id(self.id)),  # the event this step answers
        )

    def _prepare(self, turn: ModelTurn, rules: TurnRules, cancel: CancelToken | None) -> _PendingCall:
        pending = _PendingCall(turn, self._tool_context(cancel))
        try:
            pending.thoughts, function, arguments, pending.heartbeat = _parse_call(turn.text)
            pending.function = function
            tool = self.tools.resolve(function)
            if tool is None:
                raise ToolError(f"Unknown function {function!r}. Available functions: {', '.join(self.tools.names())}")
            pending.tool, pending.function = tool, tool.name
            pending.arguments = validate_arguments(tool, arguments)
            refusal = rules.refusal(tool, pending.arguments)
            if refusal is not None:
                pending.refused = True
                raise ToolError(refusal)
            if tool.check is not None:
                tool.check(pending.context, **pending.arguments)
            if tool.requires_consent:
                self._ask_consent(tool, pending.arguments)
        except ToolError as error:
            pending.outcome = (False, error.message)
            return pending
        if not tool.writes_store:
            pending.outcome = self._run_tool(pending)
        return pending

    def _ask_consent(self, tool: Tool, arguments: dict[str, Any]) -> None:
        """Every tool that touches the user's machine or network asks first, user tools included."""
        summary = tool.describe_call(arguments)
        if not self.consent.allow(self.id, tool.name, summary):
            raise ConsentDenied(f"The user did not allow {tool.name} to {summary}")

    def _run_tool(self, pending: _PendingCall) -> tuple[bool, str]:
        tool = pending.tool
        assert tool is not None
        try:
            if tool.writes_store:
                with self.memory.db.transaction():  # a savepoint: a failing tool leaves no partial write
                    output = tool.function(pending.context, **pending.arguments)
            else:
                output = tool.function(pending.context, **pending.arguments)
        except ToolError as error:
            return False, error.message
        except MemDeskError:
            raise  # the environment's fault (disk full, store locked, stopped by the user): the user must see it
        except Exception as error:  # a bug in a tool must not kill the conversation
            log.error("function %s raised %s", tool.name, where_it_failed(error))
            return False, f"{tool.name} raised {type(error).__name__}: {error}"
        return True, "None" if output is None else str(output)

    def _commit(self, pending: _PendingCall, rules: TurnRules) -> tuple[StepRecord, ToolContext]:
        """Run a store-writing tool and save the step (the caller holds the transaction)."""
        archival_before = self.memory.archival.count(self.id)
        if pending.outcome is None:
            pending.outcome = self._run_tool(pending)
        ok, message = pending.outcome
        function, arguments, context = pending.function, pending.arguments, pending.context
        rules.record(pending.tool, arguments, ok=ok, refused=pending.refused, page=context.last_page)
        message = _truncate(message, self.settings.function_result_chars)
        now = self.memory.clock.now()
        said = arguments.get("message", "") if ok and function == "send_message" else ""
        call = self.memory.recall.add(
            self.id, role="assistant", kind="assistant_call", content=pending.turn.text, created_at=now,
            search_text=said, function_name=function or None,
        )
        context.cause.settle(call.id)  # memory changes the call made point at it
        self.memory.recall.add(
            self.id, role="user", kind="function_result", content=events.function_result(ok, message),
            created_at=now, function_name=function or None, step_id=call.id,
        )
        self._saw_own_edits(context, self.memory.archival.count(self.id) - archival_before)
        step = StepRecord(
            pending.thoughts, function, arguments, ok, message, pending.heartbeat and ok, pending.turn.stats, pending.turn.text, pending.refused
        )
        return step, context

    # --- the memory section ----------------------------------------------------------------
    def _planned_view(self, record: AgentRecord) -> tuple[MemoryView, str | None]:
        """The memory view the next step uses, and the memory_update event it needs (if any)."""
        m = self.memory
        view = MemoryView.from_json(record.memory_view)
        blocks = m.core.blocks(self.id)
        archival = m.archival.count(self.id)
        if not view.rendered or view.stale or not self._view_checked:
            text = render_memory(m.core.render(self.id), record.evicted_count, archival)
            knowledge = render_top_entities(m.graph, self.id, self.settings.top_entities) if m.graph is not None else ""
            return MemoryView.fresh(text, blocks, archival, knowledge), None
        changes = view.updates(blocks, archival)
        if not changes:
            return view, None
        return view.knows(blocks, archival), events.memory_update(changes)

    def _sync_memory(self) -> None:
        """Save what ``_planned_view`` plans (the caller holds the transaction)."""
        record = self.record
        view, update = self._planned_view(record)
        if update is not None:
            self.memory.recall.add(self.id, role="user", kind="memory_update", content=update, created_at=self.memory.clock.now())
        if view.to_json() != record.memory_view:
            self.memory.agents.update(self.id, memory_view=view.to_json())
        self._view_checked = True

    def _saw_own_edits(self, context: ToolContext, archival_added: int) -> None:
        """The agent knows what its own call changed: no update event for it."""
        if not context.changed_blocks and not archival_added:
            return
        record = self.record
        blocks = [b for b in self.memory.core.blocks(self.id) if b.label in context.changed_blocks]
        view = MemoryView.from_json(record.memory_view).edited(blocks, archival_added)
        self.memory.agents.update(self.id, memory_view=view.to_json())

    # --- context ---------------------------------------------------------------------------
    def _in_context(self, record: AgentRecord) -> list[Message]:
        """The messages in the context window as the model sees them (expired memories events as
        their stub)."""
        return expired_view(self.memory.recall.since(self.id, record.context_start_id), record.recall_expired_before)

    def _prompt_parts(self) -> PromptParts:
        record = self.record
        m = self.memory
        in_context = self._in_context(record)
        window = self.runtime.info.context_window
        view, update = self._planned_view(record)
        messages = to_chat(self.runtime, in_context, window)
        recall = frozenset(n for n, m in enumerate(in_context) if m.kind == MEMORIES)
        if update is not None:  # not saved yet: the next step will save it
            messages += (ChatMessage("user", update),)
        return PromptParts(
            instructions="\n\n".join([record.system_prompt, *thoughts_note(self.settings.thoughts_chars), heartbeat_note(self.settings.heartbeat_minutes)]),
            tools=self.tools.describe_for_prompt(self.settings.tool_section, without=self.settings.hidden_functions),
            core_memory=view.text,
            summary=record.summary or None,
            messages=messages,
            knowledge=view.knowledge,
            recall=recall,
        )

    def _ensure_fits(self, cancel: CancelToken | None) -> None:
        """Evict (and summarize) until the prompt leaves room for the answer."""
        for _attempt in range(4):
            parts = self._prompt_parts()
            budget = measure(self.runtime, parts, self.settings.reserve)
            if budget.used <= budget.eviction_at:
                return
            if not self._evict(budget, cancel):
                break
        budget = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
        if budget.used > budget.eviction_at:
            raise ContextOverflowError(
                f"The prompt needs {budget.used} tokens but the context window is {budget.window} "
                f"with {budget.reserve} kept for the answer",
                hint="raise the context size in Settings or shorten the core memory blocks",
            )

    def _make_room(self, room: int, cancel: CancelToken | None) -> bool:
        """Evict until a new memories section of ``room`` tokens fits before the eviction point, if
        possible (the loop's own check still runs before each step); whether anything was evicted.
        Every memories event already in context expires: the new one will be the newest."""
        evicted = False
        for _attempt in range(4):
            budget = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
            if budget.used + room <= budget.eviction_at or not self._evict(budget, cancel, room=room):
                break
            evicted = True
        return evicted

    def _evict(self, budget: ContextBudget, cancel: CancelToken | None, *, room: int = 0) -> bool:
        record = self.record
        m = self.memory
        shown = self._in_context(record)
        # The cache below the memory section is evaluated again after an eviction anyway: every
        # memories event but the newest expires now (all of them when a new one is about to be
        # placed, ``room``), and what it frees counts toward the need.
        newest = newest_event_id(shown, record.recall_expired_before)
        expire = max(record.recall_expired_before, newest + 1 if room and newest >= record.recall_expired_before else newest)
        in_context = expired_view(shown, expire)
        chats = to_chat(self.runtime, in_context, budget.window)
        counts = [self.runtime.count_tokens(c.content) + 4 for c in chats]
        before = to_chat(self.runtime, [m for m, a in zip(shown, in_context) if m.content != a.content], budget.window)
        after = to_chat(self.runtime, [a for m, a in zip(shown, in_context) if m.content != a.content], budget.window)
        freed = sum(self.runtime.count_tokens(c.content) for c in before) - sum(self.runtime.count_tokens(c.content) for c in after)
        need = budget.used + room - freed - budget.eviction_at
        cut = choose_cut(in_context, counts, need=need)
        if cut == 0 and len(in_context) > 1 and not room:
            # Not even KEEP_LAST messages fit with room to answer: keep fewer rather than fail.
            for index in range(len(in_context) - 1, 0, -1):
                if in_context[index].kind in ("user_message", "login", "heartbeat", "system_alert"):
                    cut = index
                    break
        if cut == 0 and freed <= 0:
            return False
        evicted = in_context[:cut]
        previous = _summary_body(record.summary)
        # Memories events repeat older messages (already summarized when they left): not conversation.
        conversation = [e for e in evicted if e.kind != MEMORIES]
        summary = self._summarizer.summarize(previous, conversation, cancel) if conversation else previous
        hidden = record.evicted_count + len(evicted)
        total = m.recall.count(self.id)
        with m.db.transaction():
            m.agents.update(
                self.id,
                summary=events.summary_note(hidden, total, summary) if evicted else record.summary,
                context_start_id=in_context[cut].id,
                evicted_count=hidden,
                recall_expired_before=expire,
                pressure_alert_sent=False,
                # Everything below the memory section is evaluated again anyway: render it afresh.
                memory_view="",
            )
            self._sync_memory()
            # The alert comes again only once the context has room again: when what stays is
            # still above the warning line (a small window), another alert would only add a step.
            after = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
            m.agents.update(self.id, pressure_alert_sent=after.used >= after.warning_at)
        log.info("agent %s evicted %s messages (keeping %s)", self.id, len(evicted), len(in_context) - cut)
        self.observer.on_event("eviction", summary)
        return True


@dataclass
class _PendingCall:
    """A parsed call between ``_prepare`` and ``_commit``; ``outcome`` is (ok, result) once known."""

    turn: ModelTurn
    context: ToolContext
    thoughts: str = ""
    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    heartbeat: bool = False
    tool: Tool | None = None
    refused: bool = False
    outcome: tuple[bool, str] | None = None


def _visible_text(contents: list[str]) -> str:
    """The text the model sees, normalised, with JSON events decoded (their strings are escaped)."""
    pieces: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            pieces.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    for content in contents:
        try:
            collect(json.loads(content))
        except (ValueError, TypeError):
            pieces.append(content)
    return " ".join(" ".join(pieces).split()).casefold()


def thoughts_note(chars: int | None) -> list[str]:
    """What the instructions say about inner_thoughts' bound (nothing without one): the grammar
    ends the thoughts there, so a model that knows it plans within it rather than being cut off."""
    return [] if chars is None else [f"inner_thoughts holds at most {chars} characters: a few words of plan."]


def heartbeat_note(minutes: int) -> str:
    """What the instructions promise about timed heartbeats: exactly what the setting does."""
    if minutes <= 0:
        return "Timed heartbeats are off: you run only when an event arrives."
    return f"Timed heartbeats: every {minutes} minutes while the user is idle, you run with a heartbeat event."


def _summary_body(note: str) -> str:
    marker = "summary of the previous"
    if marker in note:
        return note.split(":\n", 1)[-1]
    return note


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated: the result had {len(text)} characters; only the first {limit} are shown]"


def _parse_call(text: str) -> tuple[str, str, dict[str, Any], bool]:
    """Split the model's JSON into (thoughts, function, arguments, request_heartbeat)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolError(
            f"Your answer was not valid JSON ({error.msg} at character {error.pos}). "
            'Answer with one object: {"function": NAME, "params": {"inner_thoughts": ..., ...}}'
        ) from error
    if not isinstance(data, dict) or not isinstance(data.get("function"), str):
        raise ToolError('Your answer must be one JSON object with a "function" name and a "params" object')
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise ToolError('"params" must be a JSON object')
    params = dict(params)
    thoughts = params.pop("inner_thoughts", "")
    heartbeat = params.pop(HEARTBEAT_PARAM, False)
    if not isinstance(thoughts, str):
        thoughts = str(thoughts)
    if isinstance(heartbeat, str):
        heartbeat = heartbeat.strip().lower() == "true"
    return thoughts, data["function"], params, bool(heartbeat)
