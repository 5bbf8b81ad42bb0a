"""Revert a recorded knowledge-graph change (memdesk.core.graph): the change carries the rows it
touched before and after it (``before_meta``/``after_meta``), so the revert puts the "before"
rows back, through the graph store, as a change of its own. When the rows are no longer what the
change left (the extractor closed the fact since, the user merged the entity), the plan is a
conflict the user must confirm; nothing is overwritten silently.

Lives in memory, not in the graph package, because the graph sits below memory in the layers
(.importlinter): the graph only knows an injected recorder; the reverting is memory's business.
"""

from __future__ import annotations

from memdesk.core.base.errors import RevertError
from memdesk.core.graph.changes import rows_problem
from memdesk.core.graph.store import FACT_CHANGE, KnowledgeGraph
from memdesk.core.memory.history import CREATE, DELETE, UPDATE, Cause, Change
from memdesk.core.memory.revert_plan import SET, RevertPlan

GRAPH_KINDS = (FACT_CHANGE, "graph_entity")


class GraphReverter:
    def __init__(self, graph: KnowledgeGraph) -> None:
        self._graph = graph

    def _table(self, change: Change) -> str:
        return "graph_facts" if change.kind == FACT_CHANGE else "graph_entities"

    def plan(self, change: Change, later: list[Change]) -> RevertPlan:
        before = (change.before_meta or {}).get("rows")
        after = (change.after_meta or {}).get("rows")
        if not isinstance(before, list) or not isinstance(after, list) or change.target_id is None:
            return RevertPlan(
                change,
                SET,
                change.after,
                change.before,
                later,
                blocked=(
                    "This graph change was recorded without the rows it touched (an older MemDesk or an import):"
                    " edit the graph in the Knowledge panel"
                ),
            )
        problem = rows_problem(before) or rows_problem(after)
        if problem is not None:  # rows carried by an agent file that do not fit this store's tables
            return RevertPlan(
                change,
                SET,
                change.after,
                change.before,
                later,
                blocked=f"This graph change cannot be reverted: {problem}",
            )
        graph = self._graph
        table = self._table(change)
        current = graph.row_states((t, i) for t, i, _r in before)
        target_now = next((r for t, i, r in current if t == table and i == change.target_id), None)
        target_before = next((r for t, i, r in before if t == table and i == change.target_id), target_now)
        current_text = graph.state_text(table, target_now)
        result_text = graph.state_text(table, target_before) if target_before is not None else None
        if [r[2] for r in current] == [r[2] for r in before]:
            return RevertPlan(
                change,
                SET,
                current_text,
                result_text,
                later,
                blocked="The knowledge graph already holds what this change replaced",
            )
        conflict = [r[2] for r in current] != [r[2] for r in after]
        return RevertPlan(
            change, SET, current_text, result_text, later, conflict=conflict, expected=current, meta={"rows": before}
        )

    def apply(self, plan: RevertPlan, cause: Cause) -> None:
        change = plan.change
        # plan() gives a graph change's plan the rows to put back; a graph change names its row.
        assert plan.meta is not None and change.target_id is not None
        now = self._graph.row_states((t, i) for t, i, _r in plan.expected)
        if now != plan.expected:
            raise RevertError("The knowledge graph changed again while you were deciding", hint="open the change again")
        table = self._table(change)
        target_before = next((r for t, i, r in plan.meta["rows"] if t == table and i == change.target_id), None)
        target_now = next((r for t, i, r in plan.expected if t == table and i == change.target_id), None)
        if target_before is None or target_before.get("deleted"):
            action = DELETE  # undoing a creation (or an undeletion) hides the row again
        elif target_now is None or target_now.get("deleted"):
            action = CREATE
        else:
            action = UPDATE
        self._graph.restore_rows(
            change.agent_id,
            change.kind,
            change.target_id,
            plan.meta["rows"],
            action=action,
            cause=cause,
            label=change.label,
        )
