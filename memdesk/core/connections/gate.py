"""What an app connected over MCP may do, decided for every request, and accounted for.

Reads need a grant of the agent; writes need a grant with write access, a reason, and no secret in
what is written; then a trusted app's write is applied at once, any other app's waits for the
user (approvals.py). Every request that reaches an agent is in the access log, refusals included.
Grants are read again at each request, so a revoke takes effect on the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memdesk.core.base.clock import Clock
from memdesk.core.base.errors import ConnectionRefused, MemDeskError, SecretInWrite, ToolError
from memdesk.core.connections.access_log import PENDING, READ, REFUSED, WRITE, AccessLog
from memdesk.core.connections.approvals import APPLIED, FAILED, REJECTED, Approval, Approvals
from memdesk.core.connections.apps import App, Apps, Grant
from memdesk.core.connections.memory_access import MemoryAccess, reason_cause
from memdesk.core.connections.secrets import find_secrets
from memdesk.core.memory.history import Cause
from memdesk.core.memory.services import MemoryServices

#: Most characters of a reason kept (the history's note cuts it further).
REASON_CHARS = 500
#: Most refs a log summary names.
SUMMARY_REFS = 12


def _write_append(access: MemoryAccess, agent_id: int, args: dict[str, Any], cause: Cause) -> dict[str, Any]:
    return access.append(agent_id, str(args["label"]), str(args["content"]), cause)


def _write_replace(access: MemoryAccess, agent_id: int, args: dict[str, Any], cause: Cause) -> dict[str, Any]:
    return access.replace(agent_id, str(args["label"]), str(args["old_content"]), str(args["new_content"]), cause)


def _write_insert(access: MemoryAccess, agent_id: int, args: dict[str, Any], cause: Cause) -> dict[str, Any]:
    return access.insert(agent_id, str(args["content"]), [str(t) for t in args.get("tags") or []], cause)


#: The writes an app may ask for, by operation (MemGPT's function names): what each runs, and which
#: of its arguments are text to scan for secrets.
WRITES: dict[str, tuple[Callable[[MemoryAccess, int, dict[str, Any], Cause], dict[str, Any]], tuple[str, ...]]] = {
    "core_memory_append": (_write_append, ("content",)),
    "core_memory_replace": (_write_replace, ("new_content",)),
    "archival_memory_insert": (_write_insert, ("content", "tags")),
}


@dataclass(frozen=True)
class Caller:
    """An app, with the grants it holds as of this request."""

    app: App
    grants: tuple[Grant, ...]

    def agent(self, name: str | None) -> Grant:
        """The granted agent ``name``, or the only one when none is named."""
        if self.app.revoked:
            raise ConnectionRefused(f"{self.app.name} was disconnected from memory", hint="reconnect it in MemDesk")
        if not self.grants:
            raise ConnectionRefused(
                f"{self.app.name} has not been given any agent's memory yet",
                hint=f"give it one in MemDesk: memdesk mcp grant {self.app.name!r} AGENT",
            )
        if not name:
            if len(self.grants) == 1:
                return self.grants[0]
            raise ToolError(f"name the agent: one of {', '.join(g.agent for g in self.grants)}")
        for grant in self.grants:
            if grant.agent.casefold() == name.casefold():
                return grant
        raise ConnectionRefused(f"{self.app.name} may not reach an agent named {name!r}")


def summary_of(result: dict[str, Any]) -> str:
    """Counts and refs of a result, for the access log: never a text."""
    refs: list[str] = []
    for key in ("hits", "facts", "memories"):
        for item in result.get(key) or []:
            if isinstance(item, dict) and item.get("ref"):
                refs.append(str(item["ref"]))
    parts = []
    if refs:
        shown = ", ".join(refs[:SUMMARY_REFS]) + (
            f" and {len(refs) - SUMMARY_REFS} more" if len(refs) > SUMMARY_REFS else ""
        )
        parts.append(f"{len(refs)} item(s): {shown}")
    for key in ("label", "status", "approval"):
        if key in result:
            parts.append(f"{key} {result[key]}")
    if "blocks" in result:
        parts.append(f"{len(result['blocks'])} block(s)")
    if result.get("changes"):
        parts.append("change(s) " + ", ".join(str(c) for c in result["changes"]))
    return "; ".join(parts)


class Connections:
    """The apps, their grants, approvals and access log over one connection to the store, and
    memory's operations on the same connection."""

    def __init__(self, memory: MemoryServices, clock: Clock, *, keep_days: Callable[[], int]) -> None:
        db = memory.db
        self.db = db
        self.apps = Apps(db, clock)
        self.log = AccessLog(db, clock, keep_days)
        self.approvals = Approvals(db, clock)
        self.access = MemoryAccess(memory)

    def caller(self, app: App) -> Caller:
        current = self.apps.get(app.id) or app
        return Caller(current, tuple(self.apps.grants(current.id)) if not current.revoked else ())

    # --- reading ---------------------------------------------------------------------------
    def read(
        self, caller: Caller, agent: str | None, operation: str, work: Callable[[int], dict[str, Any]]
    ) -> dict[str, Any]:
        grant = self._granted(caller, agent, operation)
        result = work(grant.agent_id)
        self.log.record(caller.app.id, caller.app.name, grant.agent_id, operation, READ, summary_of(result))
        return {"agent": grant.agent, **result}

    def visible_agents(self, caller: Caller) -> list[dict[str, Any]]:
        self.log.record(caller.app.id, caller.app.name, None, "list_agents", READ, f"{len(caller.grants)} agent(s)")
        return [{"name": g.agent, "access": "read and write" if g.can_write else "read"} for g in caller.grants]

    # --- writing ---------------------------------------------------------------------------
    def write(
        self, caller: Caller, agent: str | None, operation: str, arguments: dict[str, Any], reason: str
    ) -> dict[str, Any]:
        """Apply a trusted app's write now, or keep another's for the user's approval."""
        run, texts = WRITES[operation]
        grant = self._granted(caller, agent, operation)
        app = caller.app
        if not grant.can_write:
            self._refuse(caller, grant.agent_id, operation, "no write access")
            raise ConnectionRefused(
                f"{app.name} may read {grant.agent}'s memory but not change it",
                hint=f"allow writes in MemDesk: memdesk mcp grant {app.name!r} {grant.agent!r} --write",
            )
        reason = " ".join(str(reason or "").split())[:REASON_CHARS]
        if not reason:
            raise ToolError("say why in reason: the user reads it in the memory history and the approval list")
        for name in texts:
            value = arguments.get(name)
            text = " ".join(value) if isinstance(value, list) else str(value or "")
            found = find_secrets(text)
            if found:
                kinds = ", ".join(sorted({f.kind for f in found}))
                self._refuse(caller, grant.agent_id, operation, f"secret in {name}: {kinds}")
                raise SecretInWrite(
                    f"Refused: {name} seems to hold {kinds}; secrets are not written into memory from another app",
                    hint="leave the secret out, or let the user write it in MemDesk themselves",
                )
        if app.trusted:
            result = run(self.access, grant.agent_id, arguments, reason_cause(app.name, reason))
            self.log.record(app.id, app.name, grant.agent_id, operation, WRITE, summary_of(result))
            return {"agent": grant.agent, **result}
        self._check_would_apply(grant.agent_id, operation, arguments)
        approval = self.approvals.add(app.id, app.name, grant.agent_id, operation, arguments, reason)
        self.log.record(app.id, app.name, grant.agent_id, operation, PENDING, f"approval {approval.id}")
        return {
            "agent": grant.agent,
            "status": "pending",
            "approval": approval.id,
            "message": "Waiting for the user's approval in MemDesk; nothing is written until they accept it.",
        }

    def _check_would_apply(self, agent_id: int, operation: str, arguments: dict[str, Any]) -> None:
        """A core memory write that could not apply now (no such block, read-only, over its limit,
        text not found) is refused at once, not queued for the user to find it fails."""
        if operation == "archival_memory_insert":
            if not str(arguments.get("content") or "").strip():
                raise ToolError("content must not be empty")
            return
        run, _texts = WRITES[operation]
        with self.db.dry_run():
            run(self.access, agent_id, arguments, Cause())

    # --- the user's decisions ----------------------------------------------------------------
    def apply(self, approval_id: int, *, arguments: dict[str, Any] | None = None) -> Approval:
        """Apply a pending write, as asked or with the user's ``arguments``; the history names the
        app and its reason. A write that no longer applies (the block changed) is marked failed."""
        approval = self.approvals.get(approval_id)
        chosen = {**approval.arguments, **(arguments or {})}
        run, _texts = WRITES[approval.operation]
        cause = reason_cause(approval.app, approval.reason, approved=True)
        if approval.operation == "archival_memory_insert":
            # The embedding model loads (seconds, the first time) before the write lock is taken,
            # which the window's agent waits on: inside, only the passages' own vectors are made.
            self.access.memory.archival.embedder.embed([str(chosen.get("content", ""))[:500]])
        try:
            with self.db.transaction():
                result = run(self.access, approval.agent_id, chosen, cause)
                decided = self.approvals.decide(
                    approval_id, APPLIED, summary_of(result), arguments=chosen if arguments else None
                )
        except ToolError as error:
            self.approvals.decide(approval_id, FAILED, error.message)
            raise
        self.log.record(
            approval.app_id,
            approval.app,
            approval.agent_id,
            approval.operation,
            WRITE,
            f"approval {approval_id} applied",
        )
        return decided

    def revoke(self, app_id: int) -> int:
        """Disconnect an app: it reaches nothing from now on, and its writes still waiting are
        rejected (the user took its access away). Returns how many were."""
        with self.db.transaction():
            self.apps.revoke(app_id)
            waiting = [a for a in self.approvals.pending() if a.app_id == app_id]
            for approval in waiting:
                self.approvals.decide(approval.id, REJECTED, "the app was disconnected")
        return len(waiting)

    def reject(self, approval_id: int) -> Approval:
        approval = self.approvals.decide(approval_id, REJECTED, "rejected by the user")
        self.log.record(
            approval.app_id,
            approval.app,
            approval.agent_id,
            approval.operation,
            REFUSED,
            f"approval {approval_id} rejected",
        )
        return approval

    # --- helpers -----------------------------------------------------------------------------
    def _granted(self, caller: Caller, agent: str | None, operation: str) -> Grant:
        try:
            return caller.agent(agent)
        except MemDeskError as error:
            self._refuse(caller, None, operation, error.message)
            raise

    def _refuse(self, caller: Caller, agent_id: int | None, operation: str, why: str) -> None:
        self.log.record(caller.app.id, caller.app.name, agent_id, operation, REFUSED, why)
