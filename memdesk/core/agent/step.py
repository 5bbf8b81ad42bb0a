"""One step of the agent: the model's call parsed, checked and run, and the step saved.

A step is split so that nothing slow holds the store's write lock: ``prepare`` parses and
validates the call, applies the chain rules, asks the user's consent and runs every tool that does
not write the store (searches, files, network, message_chatgpt's generation); ``commit`` runs
inside one short transaction: the tools that write the store, then the call, its result and the
memory view. A crash loses at most that step.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdesk.core.agent import events
from memdesk.core.agent.chain import TurnRules
from memdesk.core.agent.memory_section import MemorySection
from memdesk.core.agent.observer import StepRecord
from memdesk.core.base.errors import ConsentDenied, MemDeskError, ToolError
from memdesk.core.base.log_privacy import where_it_failed
from memdesk.core.runtime.base import ModelTurn
from memdesk.core.storage import Database
from memdesk.core.tools.context import ConsentPolicy, ToolContext
from memdesk.core.tools.registry import HEARTBEAT_PARAM, Tool, ToolRegistry, validate_arguments

if TYPE_CHECKING:
    from memdesk.core.memory.services import MemoryServices

log = logging.getLogger("memdesk.agent")


@dataclass
class PendingCall:
    """A parsed call between ``prepare`` and ``commit``; ``outcome`` is (ok, result) once known."""

    turn: ModelTurn
    context: ToolContext
    thoughts: str = ""
    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    heartbeat: bool = False
    tool: Tool | None = None
    refused: bool = False
    outcome: tuple[bool, str] | None = None


def prepare(
    turn: ModelTurn,
    context: ToolContext,
    rules: TurnRules,
    *,
    tools: ToolRegistry,
    consent: ConsentPolicy,
    db: Database,
) -> PendingCall:
    pending = PendingCall(turn, context)
    try:
        pending.thoughts, function, arguments, pending.heartbeat = parse_call(turn.text)
        pending.function = function
        tool = tools.resolve(function)
        if tool is None:
            raise ToolError(f"Unknown function {function!r}. Available functions: {', '.join(tools.names())}")
        pending.tool, pending.function = tool, tool.name
        pending.arguments = validate_arguments(tool, arguments)
        refusal = rules.refusal(tool, pending.arguments)
        if refusal is not None:
            pending.refused = True
            raise ToolError(refusal)
        if tool.check is not None:
            tool.check(pending.context, **pending.arguments)
        if tool.requires_consent:
            _ask_consent(consent, context.agent_id, tool, pending.arguments)
    except ToolError as error:
        pending.outcome = (False, error.message)
        return pending
    if not tool.writes_store:
        pending.outcome = run_tool(pending, db)
    return pending


def _ask_consent(consent: ConsentPolicy, agent_id: int, tool: Tool, arguments: dict[str, Any]) -> None:
    """Every tool that touches the user's machine or network asks first, user tools included."""
    summary = tool.describe_call(arguments)
    if not consent.allow(agent_id, tool.name, summary):
        raise ConsentDenied(f"The user did not allow {tool.name} to {summary}")


def run_tool(pending: PendingCall, db: Database) -> tuple[bool, str]:
    tool = pending.tool
    assert tool is not None
    try:
        if tool.writes_store:
            with db.transaction():  # a savepoint: a failing tool leaves no partial write
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


def commit(
    pending: PendingCall, rules: TurnRules, *, memory: MemoryServices, section: MemorySection, result_chars: int
) -> tuple[StepRecord, ToolContext]:
    """Run a store-writing tool and save the step (the caller holds the transaction)."""
    agent_id = pending.context.agent_id
    archival_before = memory.archival.count(agent_id)
    if pending.outcome is None:
        pending.outcome = run_tool(pending, memory.db)
    ok, message = pending.outcome
    function, arguments, context = pending.function, pending.arguments, pending.context
    rules.record(pending.tool, arguments, ok=ok, refused=pending.refused, page=context.last_page)
    message = _truncate(message, result_chars)
    now = memory.clock.now()
    said = arguments.get("message", "") if ok and function == "send_message" else ""
    call = memory.recall.add(
        agent_id,
        role="assistant",
        kind="assistant_call",
        content=pending.turn.text,
        created_at=now,
        search_text=said,
        function_name=function or None,
    )
    context.cause.settle(call.id)  # memory changes the call made point at it
    memory.recall.add(
        agent_id,
        role="user",
        kind="function_result",
        content=events.function_result(ok, message),
        created_at=now,
        function_name=function or None,
        step_id=call.id,
    )
    section.saw_own_edits(context.changed_blocks, memory.archival.count(agent_id) - archival_before)
    step = StepRecord(
        pending.thoughts,
        function,
        arguments,
        ok,
        message,
        pending.heartbeat and ok,
        pending.turn.stats,
        pending.turn.text,
        pending.refused,
    )
    return step, context


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated: the result had {len(text)} characters; only the first {limit} are shown]"


def parse_call(text: str) -> tuple[str, str, dict[str, Any], bool]:
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
