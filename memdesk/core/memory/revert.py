"""Undo any recorded memory change. A revert is itself a change (source ``user``, ``reverts`` set),
written through the owner's write methods, so it shows in the history and can be reverted too.

A revert is planned first (``Reverter.plan``) and then applied (``Reverter.apply``), so a front end
can show what will happen. When the target changed after the change being reverted (the agent
edited the block since), the revert is applied around the later edit if it can be (the changed
text is found once in the current text: like ``git revert``); otherwise the plan is a conflict,
which ``apply`` refuses unless the user confirmed it (``force=True``). Nothing is overwritten
silently. Other kinds (the knowledge graph: graph_revert.py) plug in with ``Reverter.register``;
the plan they all return is revert_plan.py's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdesk.core.base.clock import parse_iso
from memdesk.core.base.errors import RevertError
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.memory.core_memory import CoreMemory, StaleBlockError
from memdesk.core.memory.graph_revert import GRAPH_KINDS, GraphReverter
from memdesk.core.memory.history import (
    BLOCK,
    CONFIGURE,
    CREATE,
    DELETE,
    DOCUMENT,
    FORGET,
    PASSAGE,
    UPDATE,
    USER,
    Cause,
    Change,
    MemoryHistory,
)
from memdesk.core.memory.revert_plan import RECONFIGURE, REMOVE, RESTORE, SET, KindReverter, RevertPlan

__all__ = ["BlockReverter", "PassageReverter", "RevertPlan", "Reverter", "revert_text"]

_CONTEXTS = (40, 16, 0)  # characters of context around a hunk, tried widest first


def revert_text(current: str, after: str, before: str) -> str | None:
    """Turn the edit ``before`` -> ``after`` back inside ``current``, which may hold later edits
    elsewhere; None when the edited text is not found exactly once (a conflict)."""
    if current == after:
        return before
    prefix = 0
    while prefix < min(len(after), len(before)) and after[prefix] == before[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(after), len(before)) - prefix and after[-1 - suffix] == before[-1 - suffix]:
        suffix += 1
    added = after[prefix : len(after) - suffix]
    removed = before[prefix : len(before) - suffix]
    for context in _CONTEXTS:
        left = after[max(0, prefix - context) : prefix]
        right = after[len(after) - suffix : len(after) - suffix + context]
        anchor = left + added + right
        if not anchor:
            return None
        found = current.count(anchor)
        if found > 1:
            return None  # ambiguous: more context cannot be had at a narrower width
        if found == 1:
            at = current.index(anchor)
            return current[:at] + left + removed + right + current[at + len(anchor) :]
    return None


def _plan_text(change: Change, later: list[Change], current: str | None, expected: Any) -> RevertPlan:
    """An update's revert: the text before, merged around later edits when possible."""
    if current is None:
        return RevertPlan(
            change, SET, None, None, later, blocked=f"Cannot revert: {change.label or 'the target'} was deleted since"
        )
    assert change.before is not None and change.after is not None
    result = revert_text(current, change.after, change.before)
    if result is not None:
        return RevertPlan(change, SET, current, result, later, merged=current != change.after, expected=expected)
    return RevertPlan(change, SET, current, change.before, later, conflict=True, expected=expected)


class BlockReverter:
    def __init__(self, core: CoreMemory) -> None:
        self._core = core

    def plan(self, change: Change, later: list[Change]) -> RevertPlan:
        block = self._core.get(change.agent_id, change.label)
        current = block.value if block else None
        version = block.version if block else None
        if change.action == UPDATE:
            plan = _plan_text(change, later, current, version)
            if plan.possible and plan.result is not None and block is not None and len(plan.result) > block.limit:
                return RevertPlan(
                    change,
                    SET,
                    current,
                    plan.result,
                    later,
                    blocked=(
                        f"Cannot revert: the {block.label} block would hold {len(plan.result)} characters,"
                        f" over its limit of {block.limit}"
                    ),
                )
            return plan
        if change.action == CREATE:
            if block is None:
                return RevertPlan(
                    change, REMOVE, None, None, later, blocked=f"The {change.label} block is already gone"
                )
            return RevertPlan(change, REMOVE, current, None, later, conflict=current != change.after, expected=version)
        if change.action == DELETE:
            if block is not None:
                return RevertPlan(
                    change, RESTORE, current, change.before, later, blocked=f"A block named {change.label} exists again"
                )
            return RevertPlan(change, RESTORE, None, change.before, later, meta=change.before_meta)
        if change.action == CONFIGURE:
            if block is None:
                return RevertPlan(
                    change, RECONFIGURE, None, None, later, blocked=f"The {change.label} block was deleted since"
                )
            meta = change.before_meta or {}
            if int(meta.get("limit", block.limit)) < len(block.value):
                return RevertPlan(
                    change,
                    RECONFIGURE,
                    current,
                    current,
                    later,
                    blocked=(
                        f"Cannot revert: the {block.label} block now holds more than {meta.get('limit')} characters"
                    ),
                )
            now = {"limit": block.limit, "description": block.description, "read_only": block.read_only}
            return RevertPlan(
                change,
                RECONFIGURE,
                current,
                current,
                later,
                conflict=now != change.after_meta,
                expected=version,
                meta=meta,
            )
        return RevertPlan(change, SET, current, current, later, blocked=f"Cannot revert a {change.action} change")

    def apply(self, plan: RevertPlan, cause: Cause) -> None:
        change = plan.change
        core = self._core
        if plan.operation == SET:
            core.set_value(
                change.agent_id,
                change.label,
                plan.result or "",
                expected_version=plan.expected,
                source=USER,
                cause=cause,
            )
        elif plan.operation == REMOVE:
            block = core.get(change.agent_id, change.label)
            if block is not None and block.version != plan.expected:
                raise StaleBlockError(block)
            core.delete(change.agent_id, change.label, source=USER, cause=cause)
        elif plan.operation == RESTORE:
            meta = plan.meta or {}
            core.create(
                change.agent_id,
                change.label,
                plan.result or "",
                limit=int(meta.get("limit", 2000)),
                description=str(meta.get("description", "")),
                read_only=bool(meta.get("read_only", False)),
                source=USER,
                cause=cause,
            )
        elif plan.operation == RECONFIGURE:
            meta = plan.meta or {}
            core.configure(
                change.agent_id,
                change.label,
                limit=meta.get("limit"),
                read_only=meta.get("read_only"),
                description=meta.get("description"),
                source=USER,
                cause=cause,
            )


class PassageReverter:
    def __init__(self, archival: ArchivalMemory) -> None:
        self._archival = archival

    def plan(self, change: Change, later: list[Change]) -> RevertPlan:
        passage = self._archival.get(change.target_id) if change.target_id is not None else None
        current = passage.text if passage else None
        if change.action == UPDATE:
            return _plan_text(change, later, current, current)
        if change.action == CREATE:
            if passage is None:
                return RevertPlan(change, REMOVE, None, None, later, blocked="The passage is already deleted")
            return RevertPlan(change, REMOVE, current, None, later, conflict=current != change.after, expected=current)
        if change.action == DELETE:
            return RevertPlan(change, RESTORE, None, change.before, later, meta=change.before_meta)
        return RevertPlan(change, SET, current, current, later, blocked=f"Cannot revert a {change.action} change")

    def apply(self, plan: RevertPlan, cause: Cause) -> None:
        change = plan.change
        archival = self._archival
        if plan.operation == SET:
            assert change.target_id is not None  # a passage's change names it
            archival.update_text(
                change.target_id, plan.result or "", source=USER, cause=cause, expected_text=plan.expected
            )
        elif plan.operation == REMOVE:
            assert change.target_id is not None  # plan() found the passage by it
            passage = archival.get(change.target_id)
            if passage is not None and passage.text != plan.expected:
                raise RevertError("The passage changed again while you were deciding", hint="open its history again")
            archival.delete([change.target_id], source=USER, cause=cause)
        elif plan.operation == RESTORE:
            meta = dict(plan.meta or {})
            text = plan.result or ""
            vector = archival.embedder.embed([text])
            document_id = meta.get("document_id")
            if document_id is not None and not archival.has_document(document_id):
                document_id = None  # the document went too: the passage comes back on its own
            created = parse_iso(meta["created_at"]) if meta.get("created_at") else change.at
            restored = NewPassage(
                text,
                created if isinstance(created, datetime) else change.at,
                list(meta.get("tags", [])),
                document_id,
                meta.get("chunk_index") if document_id else None,
                meta.get("page"),
                meta.get("section"),
                meta.get("char_start") if document_id else None,
                meta.get("char_end") if document_id else None,
            )
            archival.add(change.agent_id, [restored], vector, source=USER, cause=cause)


class Reverter:
    def __init__(
        self, history: MemoryHistory, core: CoreMemory, archival: ArchivalMemory, graph: KnowledgeGraph | None = None
    ) -> None:
        """With ``graph``, knowledge-graph changes are revertible too (graph_revert)."""
        self._history = history
        self._kinds: dict[str, KindReverter] = {BLOCK: BlockReverter(core), PASSAGE: PassageReverter(archival)}
        if graph is not None:
            for kind in GRAPH_KINDS:
                self.register(kind, GraphReverter(graph))

    def register(self, kind: str, reverter: KindReverter) -> None:
        """Let another memory kind (the knowledge graph) be reverted from the same views."""
        self._kinds[kind] = reverter

    @property
    def history(self) -> MemoryHistory:
        return self._history

    def supports(self, kind: str) -> bool:
        return kind in self._kinds

    def plan(self, change_id: int) -> RevertPlan:
        change = self._history.get(change_id)
        if change is None:
            raise RevertError(
                "That change is no longer in the history",
                hint="the oldest changes are dropped; see the history_max_changes setting",
            )
        later = self._history.later_changes(change)
        kind = self._kinds.get(change.kind)
        if change.kind == FORGET:
            return RevertPlan(
                change,
                SET,
                None,
                None,
                later,
                blocked="What was forgotten is gone: restore the backup taken before it (File > Backups…)",
            )
        if change.kind == DOCUMENT:
            return RevertPlan(
                change,
                SET,
                None,
                None,
                later,
                blocked="A document's passages come and go with it: add or remove it in the Documents panel",
            )
        if kind is None and change.kind.startswith("graph"):
            return RevertPlan(
                change,
                SET,
                None,
                None,
                later,
                blocked="Knowledge-graph changes cannot be reverted here: this view has no knowledge graph",
            )
        if kind is None:
            return RevertPlan(
                change,
                SET,
                None,
                None,
                later,
                blocked=f"Changes to {change.kind.replace('_', ' ')}s cannot be reverted here",
            )
        return kind.plan(change, later)

    def apply(self, plan: RevertPlan, *, force: bool = False) -> Change:
        """Make the revert (one recorded change). A conflict needs ``force``: the user saw it."""
        if plan.blocked:
            raise RevertError(plan.blocked)
        if plan.conflict and not force:
            raise RevertError(plan.explain(), hint="confirm to overwrite them, or edit the text by hand")
        cause = Cause(reverts=plan.change.id, note=f"revert of change {plan.change.id}")
        self._kinds[plan.change.kind].apply(plan, cause)
        if not cause.recorded:
            raise RevertError("Nothing changed: the memory already holds what the revert would write")
        recorded = self._history.get(cause.recorded[-1])
        assert recorded is not None  # the change this revert just recorded
        return recorded

    def revert(self, change_id: int, *, force: bool = False) -> Change:
        return self.apply(self.plan(change_id), force=force)

    def undo_last_of(self, agent_id: int, kinds: tuple[str, ...], *, source: str = USER) -> Change:
        """Undo the newest change of ``kinds`` by ``source`` not undone yet: the Knowledge panel's
        Ctrl+Z, pressed again, goes further back (the reverts themselves are not undone). Never
        forced: a later change in the way is a RevertError."""
        change = self._history.newest_unreverted(agent_id, kinds, source=source)
        if change is None:
            raise RevertError("There is nothing to undo")
        return self.revert(change.id)

    def undo_last(self, agent_id: int, *, kind: str | None = None, label: str | None = None) -> Change:
        """Revert the newest change (of a block, with ``label``)."""
        changes = (
            self._history.for_block(agent_id, label, limit=1)
            if label
            else self._history.for_agent(agent_id, kind=kind, limit=1)
        )
        if not changes:
            raise RevertError("There is nothing to undo")
        return self.revert(changes[0].id)
