"""The MemGPT step loop.

An input event (user message, login, timed heartbeat) is saved in its own transaction first, so a
failure later never loses what the user sent. Then the agent steps: build the prompt, let the model
produce one function call, run it, and save the call, its result and the next event in one
transaction, so a crash mid-step loses at most that step. After each step the next input is, in
order: the memory-pressure alert (once until the next eviction), a heartbeat because the call
failed, a heartbeat because the model asked for one; otherwise control returns to the user.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from desktop.core.agent import events
from desktop.core.agent.agents import AgentRecord, AgentStore
from desktop.core.agent.context import ContextBudget, PromptParts, measure, render_core_memory, to_chat
from desktop.core.agent.eviction import Summarizer, choose_cut
from desktop.core.agent.observer import AgentObserver, StepRecord
from desktop.core.clock import Clock
from desktop.core.graph.render import render_top_entities
from desktop.core.graph.store import KnowledgeGraph
from desktop.core.memory.archival import ArchivalMemory
from desktop.core.memory.core_memory import CoreMemory
from desktop.core.memory.history import Cause
from desktop.core.memory.recall import RecallMemory
from desktop.core.prompts import Prompts
from desktop.core.runtime.base import CallRequest, CancelToken, ChatMessage, ModelTurn, Runtime, SamplingParams, ToolSpec
from desktop.core.storage import Database
from desktop.core.tools.context import ConsentPolicy, DenyAll, ToolContext
from desktop.core.tools.files import FileSandbox
from desktop.core.tools.http import HttpPolicy
from desktop.core.tools.registry import HEARTBEAT_PARAM, ToolRegistry, validate_arguments
from desktop.errors import ContextOverflowError, MemDeskError, ToolError

log = logging.getLogger("memdesk.agent")


@dataclass(frozen=True)
class AgentSettings:
    max_steps: int = 10  # per input event: stops runaway heartbeat chains
    function_result_chars: int = 6000
    top_entities: int = 8  # knowledge-graph entities shown below the messages (0: none)
    params: SamplingParams = field(default_factory=SamplingParams)
    tool_section: str = "signatures"  # the prompt's tool list style, per model (see models/catalog.py)

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


@dataclass
class TurnResult:
    replies: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    capped: bool = False
    budget: ContextBudget | None = None


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
        self._summarizer = Summarizer(runtime, prompts.summarizer, settings.params, settings.reserve)
        self._last_budget: ContextBudget | None = None

    # --- public API ------------------------------------------------------------------------
    @property
    def record(self) -> AgentRecord:
        return self.memory.agents.get(self.id)

    def send_user_message(self, text: str, cancel: CancelToken | None = None) -> TurnResult:
        now = self.memory.clock.now()
        return self._run("user_message", events.user_message(text, now), search_text=text, cancel=cancel)

    def login(self, cancel: CancelToken | None = None) -> TurnResult:
        now = self.memory.clock.now()
        content = events.login(self.record.last_login, now)
        self.memory.agents.update(self.id, last_login=now)
        return self._run("login", content, cancel=cancel)

    def timed_heartbeat(self, cancel: CancelToken | None = None) -> TurnResult | None:
        """Run on a timer while the user is idle; None when the agent paused its heartbeats."""
        paused_until = self.record.heartbeats_paused_until
        now = self.memory.clock.now()
        if paused_until is not None and paused_until > now:
            return None
        self.observer.on_event("heartbeat", "timed heartbeat")
        return self._run("heartbeat", events.heartbeat(events.HEARTBEAT_TIMED, now), cancel=cancel)

    def prompt_prefix(self) -> list[ChatMessage]:
        """The prompt the next step would send, without its live sections: another call (the
        knowledge graph's fact extraction) that starts with it shares the runtime's KV cache."""
        return replace(self._prompt_parts(), knowledge="").chat_messages()

    def budget(self) -> ContextBudget:
        """The exact context budget of the prompt the next step would send."""
        self._last_budget = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
        return self._last_budget

    # --- the loop --------------------------------------------------------------------------
    def _run(self, kind: str, content: str, *, search_text: str = "", cancel: CancelToken | None) -> TurnResult:
        db = self.memory.db
        with db.transaction():
            self.memory.recall.add(self.id, role="user", kind=kind, content=content, created_at=self.memory.clock.now(), search_text=search_text)
        result = TurnResult()
        for index in range(self.settings.max_steps):
            # The last step a chain may take must answer the user: small models otherwise loop on
            # searches and never reply (a top complaint about local MemGPT).
            reply_now = index == self.settings.max_steps - 1 and not result.replies
            self._ensure_fits(cancel)
            parts = self._prompt_parts()
            turn = self.runtime.generate_call(
                CallRequest(parts.chat_messages(), self._live_specs(reply_only=reply_now), self.settings.params, self.tools.heartbeat_tools()),
                on_event=self.observer.on_stream,
                cancel=cancel,
            )
            with db.transaction():
                step, context = self._apply(turn)
                result.steps.append(step)
                if step.ok and step.function == "send_message":
                    result.replies.append(step.arguments["message"])
                next_event = self._next_event(step)
                if next_event is not None:
                    self.memory.recall.add(
                        self.id, role="user", kind=next_event[0], content=next_event[1], created_at=self.memory.clock.now()
                    )
            self._report(step, context)
            if next_event is None:
                break
        else:
            result.capped = True
            log.warning("agent %s hit the step cap of %s", self.id, self.settings.max_steps)
            self.observer.on_event("step_cap", f"Stopped after {self.settings.max_steps} chained steps")
        result.budget = self._last_budget
        return result

    def _report(self, step: StepRecord, context: ToolContext) -> None:
        self.observer.on_step(step)
        if context.changed_blocks:
            self.observer.on_memory_changed(set(context.changed_blocks))
        if context.last_hits:
            self.observer.on_search_hits(list(context.last_hits))
        self.observer.on_budget(self.budget())

    def _next_event(self, step: StepRecord) -> tuple[str, str] | None:
        budget = measure(self.runtime, self._prompt_parts(), self.settings.reserve)
        now = self.memory.clock.now()
        if budget.used >= budget.warning_at and not self.record.pressure_alert_sent:
            self.memory.agents.update(self.id, pressure_alert_sent=True)
            self.observer.on_event("alert", "memory pressure: the agent was told to save what matters")
            return "system_alert", events.system_alert(events.PRESSURE_ALERT)
        if not step.ok:
            return "heartbeat", events.heartbeat(events.HEARTBEAT_AFTER_FAILURE, now)
        if step.heartbeat:
            return "heartbeat", events.heartbeat(events.HEARTBEAT_AFTER_CALL, now)
        return None

    def _live_specs(self, *, reply_only: bool = False) -> list[ToolSpec]:
        """The tool specs for this step's grammar: core memory functions may name only the blocks
        that exist and are writable, so a small model cannot pick a missing or read-only block;
        with ``reply_only``, send_message alone. (The prompt's tool section stays static, which
        keeps the KV cache warm.)"""
        if reply_only and self.tools.resolve("send_message") is not None:
            return [self.tools.resolve("send_message").spec]
        labels = [b.label for b in self.memory.core.blocks(self.id) if not b.read_only]
        specs = []
        for spec in self.tools.specs():
            properties = spec.parameters.get("properties", {})
            if spec.name.startswith("core_memory_") and "label" in properties:
                if not labels:
                    continue
                label = {**properties["label"], "enum": labels}
                spec = replace(spec, parameters={**spec.parameters, "properties": {**properties, "label": label}})
            specs.append(spec)
        return specs

    # --- one step --------------------------------------------------------------------------
    def _tool_context(self) -> ToolContext:
        m = self.memory
        return ToolContext(
            agent_id=self.id, agents=m.agents, core=m.core, recall=m.recall, archival=m.archival, files=self.files,
            http=self.http, runtime=self.runtime, params=self.settings.params,
            plain_assistant_prompt=self.prompts.plain_assistant, clock=m.clock, consent=self.consent, graph=m.graph,
            cause=Cause(message_id=m.recall.last_id(self.id)),  # the event this step answers
        )

    def _apply(self, turn: ModelTurn) -> tuple[StepRecord, ToolContext]:
        """Parse and run the model's call, saving it and its result (caller holds the transaction)."""
        context = self._tool_context()
        thoughts, function, arguments, heartbeat = "", "", {}, False
        try:
            thoughts, function, arguments, heartbeat = _parse_call(turn.text)
            tool = self.tools.resolve(function)
            if tool is None:
                raise ToolError(f"Unknown function {function!r}. Available functions: {', '.join(self.tools.names())}")
            function = tool.name
            arguments = validate_arguments(tool, arguments)
            output = tool.function(context, **arguments)
            ok, message = True, "None" if output is None else str(output)
        except ToolError as error:
            ok, message = False, error.message
        except MemDeskError:
            raise  # the environment's fault (disk full, store locked): the user must see it
        except Exception as error:  # a bug in a tool must not kill the conversation
            log.exception("function %s raised", function)
            ok, message = False, f"{function} raised {type(error).__name__}: {error}"
        message = _truncate(message, self.settings.function_result_chars)
        now = self.memory.clock.now()
        said = arguments.get("message", "") if ok and function == "send_message" else ""
        call = self.memory.recall.add(
            self.id, role="assistant", kind="assistant_call", content=turn.text, created_at=now,
            search_text=said, function_name=function or None,
        )
        context.cause.settle(call.id)  # memory changes the call made point at it
        self.memory.recall.add(
            self.id, role="user", kind="function_result", content=events.function_result(ok, message, now),
            created_at=now, function_name=function or None, step_id=call.id,
        )
        step = StepRecord(thoughts, function, arguments, ok, message, heartbeat and ok, turn.stats, turn.text)
        return step, context

    # --- context ---------------------------------------------------------------------------
    def _prompt_parts(self) -> PromptParts:
        record = self.record
        m = self.memory
        in_context = m.recall.since(self.id, record.context_start_id)
        core = render_core_memory(m.core.render(self.id), record.evicted_count, m.archival.count(self.id))
        window = self.runtime.info.context_window
        return PromptParts(
            instructions=record.system_prompt,
            tools=self.tools.describe_for_prompt(self.settings.tool_section),
            core_memory=core,
            summary=record.summary or None,
            messages=to_chat(self.runtime, in_context, window),
            knowledge=render_top_entities(m.graph, self.id, self.settings.top_entities) if m.graph is not None else "",
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

    def _evict(self, budget: ContextBudget, cancel: CancelToken | None) -> bool:
        record = self.record
        m = self.memory
        in_context = m.recall.since(self.id, record.context_start_id)
        chats = to_chat(self.runtime, in_context, budget.window)
        counts = [self.runtime.count_tokens(c.content) + 4 for c in chats]
        need = budget.used - budget.eviction_at
        cut = choose_cut(in_context, counts, need=need)
        if cut == 0 and len(in_context) > 1:
            # Not even KEEP_LAST messages fit with room to answer: keep fewer rather than fail.
            for index in range(len(in_context) - 1, 0, -1):
                if in_context[index].kind in ("user_message", "login", "heartbeat", "system_alert"):
                    cut = index
                    break
        if cut == 0:
            return False
        evicted = in_context[:cut]
        previous = _summary_body(record.summary)
        summary = self._summarizer.summarize(previous, evicted, cancel)
        hidden = record.evicted_count + len(evicted)
        total = m.recall.count(self.id)
        with m.db.transaction():
            m.agents.update(
                self.id,
                summary=events.summary_note(hidden, total, summary),
                context_start_id=in_context[cut].id,
                evicted_count=hidden,
                pressure_alert_sent=False,
            )
        log.info("agent %s evicted %s messages (keeping %s)", self.id, len(evicted), len(in_context) - cut)
        self.observer.on_event("eviction", summary)
        return True


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
