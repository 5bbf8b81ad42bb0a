"""What a revert will do, as every kind's reverter plans it (revert.py for blocks and passages,
graph_revert.py for the knowledge graph): the plan a front end shows before the revert is applied."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from memdesk.core.memory.history import Cause, Change

#: What applying a plan does to the target.
SET, REMOVE, RESTORE, RECONFIGURE = "set", "remove", "restore", "reconfigure"


@dataclass(frozen=True)
class RevertPlan:
    change: Change
    operation: str  # set | remove | restore | reconfigure
    current: str | None  # the target's text now (None: it does not exist)
    result: str | None  # its text after the revert (None: it will not exist)
    later: list[Change] = field(default_factory=list)  # changes to the target since, oldest first
    conflict: bool = False  # the revert would overwrite ``later``: apply only when the user confirms
    merged: bool = False  # ``later`` exist and are kept: the revert applies around them
    blocked: str | None = None  # why the revert cannot be done at all
    expected: Any = None  # what the target must still be when applied (block version, passage text)
    meta: dict[str, Any] | None = None  # settings restored by a reconfigure or restore

    @property
    def possible(self) -> bool:
        return self.blocked is None

    def explain(self) -> str:
        """What the user reads before confirming."""
        if self.blocked:
            return self.blocked
        what = self.change.describe()
        if self.conflict and not self.later:
            return "Other changes touched the same memory since this change. Reverting now would overwrite them."
        if self.conflict:
            sources = ", ".join(sorted({c.source for c in self.later}))
            return (
                f"Since this change, the {sources} changed it {len(self.later)} more time(s). Reverting now would also "
                "overwrite those changes."
            )
        if self.merged:
            return f"Reverting '{what}'; the {len(self.later)} later change(s) are kept."
        return f"Reverting '{what}'."


class KindReverter(Protocol):
    def plan(self, change: Change, later: list[Change]) -> RevertPlan: ...

    def apply(self, plan: RevertPlan, cause: Cause) -> None: ...
