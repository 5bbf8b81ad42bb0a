"""The MemGPT step loop.

An input event (user message, login, timed heartbeat) is saved in its own transaction first, so a
failure later never loses what the user sent (a front end saves a user message the moment it is
sent, before it preempts a background turn: ``accept.accept_user_message``, then ``answer_user_message``).
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

This module is the turn: its order of steps and what comes next. The parts it calls each have a
module: the next prompt's state (prompt_state.py), one step (step.py), the memory section
(memory_section.py), fitting the context and eviction (fitting.py), automatic recall's place in a
turn (recall/turn.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from memdesk.core.agent import events, unanswered
from memdesk.core.agent import step as one_step
from memdesk.core.agent.accept import accept_user_message
from memdesk.core.agent.chain import ONCE_PER_TURN, ChainLimits, TurnRules
from memdesk.core.agent.context import ContextBudget, tool_costs
from memdesk.core.agent.eviction import Summarizer
from memdesk.core.agent.fitting import ContextFitting
from memdesk.core.agent.observer import AgentObserver, StepRecord, TurnResult
from memdesk.core.agent.prompt_state import PromptState
from memdesk.core.agent.recall.search import AutoRecall, RecallResult
from memdesk.core.agent.recall.shown import ShownMemories
from memdesk.core.agent.recall.turn import recall_for
from memdesk.core.agent.repetition import REPEATED, copied, reply_of
from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.memory.agents import AgentRecord
from memdesk.core.memory.history import Cause
from memdesk.core.memory.recall import Message
from memdesk.core.memory.services import MemoryServices
from memdesk.core.memory.user_name import follow_user_name
from memdesk.core.prompts import Prompts
from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    ModelTurn,
    Runtime,
)
from memdesk.core.tools.context import ConsentPolicy, DenyAll, ToolContext
from memdesk.core.tools.files import FileSandbox
from memdesk.core.tools.http import HttpPolicy
from memdesk.core.tools.registry import ToolRegistry

log = logging.getLogger("memdesk.agent")


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
        http: HttpPolicy,
        consent: ConsentPolicy | None = None,
        settings: AgentSettings,
        observer: AgentObserver | None = None,
        recall: AutoRecall | None = None,
        user_name: Callable[[], str] = lambda: "",
    ) -> None:
        """``user_name``: the name the user gave MemDesk (the setting, read at each user turn),
        which the human block then holds (memory/user_name.py)."""
        self.id = agent_id
        self._user_name = user_name
        self.memory = memory
        self.runtime = runtime
        self.prompts = prompts
        self.files = files
        self.http = http
        self.consent = consent or DenyAll()
        self.observer = observer or AgentObserver()
        self.recall = recall  # automatic recall before each user message (None: off)
        self.shown = ShownMemories(memory.db)
        self.last_recall: RecallResult | None = None
        #: The next prompt: what is in context, the memory section, the prompt's parts.
        self.prompt = PromptState(agent_id, memory=memory, runtime=runtime, tools=tools, settings=settings)
        summarizer = Summarizer(runtime, prompts.summarizer, settings.params, settings.reserve)
        self.fitting = ContextFitting(self.prompt, summarizer, self.observer)
        self._last_budget: ContextBudget | None = None
        self._synced_at: int | None = None  # the message this object sent right after a memory check

    # The prompt is built with the agent's tools and settings: the prompt state holds the one copy.
    @property
    def tools(self) -> ToolRegistry:
        return self.prompt.tools

    @tools.setter
    def tools(self, tools: ToolRegistry) -> None:
        self.prompt.tools = tools

    @property
    def settings(self) -> AgentSettings:
        return self.prompt.settings

    @settings.setter
    def settings(self, settings: AgentSettings) -> None:
        self.prompt.settings = settings

    # --- public API ------------------------------------------------------------------------
    @property
    def record(self) -> AgentRecord:
        return self.memory.agents.get(self.id)

    def send_user_message(self, text: str, cancel: CancelToken | None = None) -> TurnResult:
        """Accept ``text`` (memdesk.core.agent.accept) and answer it. A memory change made before it
        is reported before it: the check runs in the transaction that saves it."""
        message = accept_user_message(self.memory, self.id, text, before=self.prompt.sync_memory)
        self._synced_at = message.id
        return self.answer_user_message(message.id, cancel)

    def answer_user_message(self, message_id: int, cancel: CancelToken | None = None) -> TurnResult:
        """Run the turn that answers an accepted (already saved) user message."""
        started = time.perf_counter()
        message = self.memory.recall.get(message_id)
        if message is None or message.agent_id != self.id or message.kind != "user_message":
            raise ValueError(f"message {message_id} is not a user message to agent {self.id}")
        with self.memory.db.transaction():
            if follow_user_name(self.memory.core, self.memory.agents, self.id, self._user_name()):
                self._synced_at = None  # the human block changed: the model is told below
        if self._synced_at != message_id or self.memory.recall.last_id(self.id) != message_id:
            # Saved without the memory check (through another connection), or a preempted
            # background step came after it: what changed meanwhile is reported now. Not twice
            # in a row, which would render a stale section one turn early.
            with self.memory.db.transaction():
                self.prompt.sync_memory()
        self.last_recall = None
        if self.recall is not None:
            self.last_recall = recall_for(
                self.recall,
                message.search_text,
                cancel,
                prompt=self.prompt,
                fitting=self.fitting,
                shown=self.shown,
                observer=self.observer,
            )
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
        self.observer.on_event("heartbeat", "it checked in on its own")
        return self._run("heartbeat", events.heartbeat(events.HEARTBEAT_TIMED, now), cancel=cancel)

    def prompt_prefix(self) -> list[ChatMessage]:
        """The prompt the next step would send, before the model's turn: another call that starts
        with it (the knowledge graph's fact extraction) shares the runtime's KV cache. The layout
        has no live section below the messages, so that is the whole prompt."""
        return self.prompt.parts().chat_messages()

    def budget(self) -> ContextBudget:
        """The exact context budget of the prompt the next step would send."""
        self._last_budget = self.prompt.budget()
        return self._last_budget

    def static_prefix(self) -> list[ChatMessage]:
        """The messages every prompt of this agent starts with and that never change between turns
        (instructions and tools): a runtime can evaluate them once and keep their KV state."""
        return self.prompt.parts().static_messages()

    def memory_prefix(self) -> list[ChatMessage]:
        """The static prefix and the memory section after it, which stays as rendered until the
        next refresh: warming it too leaves a first message only its own tokens to evaluate."""
        parts = self.prompt.parts()
        return [*parts.static_messages(), parts.memory_message()]

    def tool_costs(self) -> dict[str, int]:
        """Tokens each tool adds to the prompt's tools section."""
        return tool_costs(self.runtime, self.tools.describe_each())

    # --- the loop --------------------------------------------------------------------------
    def _run(self, kind: str, content: str, *, cancel: CancelToken | None) -> TurnResult:
        """A turn on an event the agent makes itself (login, heartbeat), saved first."""
        started = time.perf_counter()
        with self.memory.db.transaction():
            self.prompt.sync_memory()  # a change made before this event is reported before it
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
                self.fitting.ensure_fits(cancel)
                if rules.steps:
                    with db.transaction():
                        self.prompt.sync_memory()
                rules.idle = (
                    {} if rules.edited else self._idle_functions(kind)
                )  # an edit may have made a search worth it
                parts = self.prompt.parts()
                request = CallRequest(
                    parts.chat_messages(),
                    rules.offered(self.prompt.live_specs()),
                    self.settings.params,
                    self.tools.heartbeat_tools(),
                    thoughts_chars=self.settings.thoughts_chars,
                )
                turn = self.runtime.generate_call(request, on_event=self.observer.on_stream, cancel=cancel)
                turn = self._not_a_copy(turn, request, cancel)
                pending = one_step.prepare(  # outside any transaction: may be slow
                    turn, self._tool_context(cancel), rules, tools=self.tools, consent=self.consent, db=db
                )
                with db.transaction():  # short: what the step changed, saved all or nothing
                    step, context = one_step.commit(
                        pending,
                        rules,
                        memory=self.memory,
                        section=self.prompt.section,
                        result_chars=self.settings.function_result_chars,
                    )
                    result.steps.append(step)
                    if step.ok and step.function == "send_message":
                        result.replies.append(step.arguments["message"])
                    # Cancelled while the call ran (a user message preempting a background turn,
                    # already saved): the step stands, but no event is queued after the user's.
                    stopped = cancel is not None and cancel.cancelled
                    next_event = None if stopped else self._next_event(step, rules, kind)
                    if next_event is not None:
                        self.memory.recall.add(
                            self.id,
                            role="user",
                            kind=next_event[0],
                            content=next_event[1],
                            created_at=self.memory.clock.now(),
                        )
                self._report(step, context)
                if stopped:
                    raise GenerationCancelled("Stopped after the step")
                if next_event is None:
                    break
            else:
                result.capped = True
                log.warning("agent %s hit the step cap of %s", self.id, self.settings.max_steps)
                self.observer.on_event("step_cap", f"it stopped after {self.settings.max_steps} steps in a row")
        finally:
            result.budget = self._last_budget
            result.seconds = time.perf_counter() - started
            self.observer.on_turn_end(result)
        return result

    def _not_a_copy(self, turn: ModelTurn, request: CallRequest, cancel: CancelToken | None) -> ModelTurn:
        """A reply that copies a recent message is generated once more, the copy penalised
        (repetition.py); the step costs both generations."""
        limit = self.settings.repeat_check_messages
        reply = reply_of(turn.text) if limit > 0 else None
        recent = self.memory.recall.said(self.id, limit) if reply else []
        copy = copied(reply, recent) if reply else None
        if copy is None:
            return turn
        log.info("a reply copied %s words of a recent message: generating it once more", copy.words)
        self.observer.on_event(REPEATED, "its reply repeated an earlier message, so it answered again")
        # The copied run first; the other recent messages too, so the new answer copies none of them.
        avoid = (copy.span, *(text for text in recent if text != copy.source))
        again = self.runtime.generate_call(
            replace(request, avoid=avoid), on_event=self.observer.on_stream, cancel=cancel
        )
        return ModelTurn(again.text, turn.stats.then(again.stats))

    def _report(self, step: StepRecord, context: ToolContext) -> None:
        self.observer.on_step(step)
        if context.changed_blocks:
            self.observer.on_memory_changed(set(context.changed_blocks))
        if context.last_hits:
            self.observer.on_search_hits(list(context.last_hits))
        self.observer.on_budget(self.budget())

    def _next_event(self, step: StepRecord, rules: TurnRules, kind: str) -> tuple[str, str] | None:
        budget = self.prompt.budget()
        if budget.used >= budget.warning_at and not self.record.pressure_alert_sent:
            self.memory.agents.update(self.id, pressure_alert_sent=True)
            self.observer.on_event("alert", "the conversation grew long: it was asked to save what matters")
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

    # --- one step (step.py) -----------------------------------------------------------------
    def _tool_context(self, cancel: CancelToken | None = None) -> ToolContext:
        m = self.memory
        return ToolContext(
            agent_id=self.id,
            agents=m.agents,
            core=m.core,
            recall=m.recall,
            archival=m.archival,
            files=self.files,
            http=self.http,
            runtime=self.runtime,
            params=self.settings.params,
            plain_assistant_prompt=self.prompts.plain_assistant,
            clock=m.clock,
            consent=self.consent,
            cancel=cancel,
            graph=m.graph,
            cause=Cause(message_id=m.recall.last_id(self.id)),  # the event this step answers
        )
