"""A core memory block's versions as a graph, and the one text every device computes from it.

Each edit a device exports is a version naming its parents (the versions its text was made from).
Several heads mean devices edited concurrently: the text is the heads merged by line in the order
of their edit ids, each against their best common ancestor. The result depends only on the set of
versions, never on the order they arrived in, so devices that hold the same versions agree; a local
edit after that names all the heads as its parents, and the graph has one head again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from memdesk.core.sync.linemerge import merge3


@dataclass(frozen=True)
class Version:
    edit_id: str
    parents: tuple[str, ...]
    value: str | None  # None: the block was deleted
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Resolved:
    value: str | None
    meta: dict
    heads: tuple[str, ...]
    conflict: bool
    #: what each head said, for the history's "both parents" and a conflict's view
    sides: tuple[tuple[str, str | None], ...] = ()


def heads(versions: dict[str, Version]) -> list[str]:
    named = {parent for version in versions.values() for parent in version.parents}
    return sorted(edit_id for edit_id in versions if edit_id not in named)


def ancestors(versions: dict[str, Version], edit_id: str) -> set[str]:
    seen: set[str] = set()
    stack = list(versions[edit_id].parents) if edit_id in versions else []
    while stack:
        current = stack.pop()
        if current in seen or current not in versions:
            continue
        seen.add(current)
        stack.extend(versions[current].parents)
    return seen


def resolve(versions: dict[str, Version]) -> Resolved:
    tips = heads(versions)
    if not tips:
        return Resolved(None, {}, (), False)
    live = [tip for tip in tips if versions[tip].value is not None]
    # A delete loses to a concurrent edit: the edit's lines are not lost.
    order = live or tips
    newest = versions[max(tips)]
    if not live:
        return Resolved(None, newest.meta, tuple(tips), False)
    text = versions[order[0]].value or ""
    merged_set = ancestors(versions, order[0]) | {order[0]}
    conflict = False
    for tip in order[1:]:
        theirs = ancestors(versions, tip) | {tip}
        common = merged_set & theirs
        best = [c for c in common if not any(c in ancestors(versions, other) for other in common if other != c)]
        base = versions[max(best)].value or "" if best else ""
        merged = merge3(base, text, versions[tip].value or "")
        text, conflict = merged.text, conflict or merged.conflict
        merged_set |= theirs
    meta = versions[max(live)].meta
    return Resolved(text, meta, tuple(tips), conflict, tuple((tip, versions[tip].value) for tip in tips))


def version_from_row(row) -> Version:
    """From ``sync_block_versions``' (edit_id, parents, value, meta)."""
    return Version(row[0], tuple(json.loads(row[1])), row[2], json.loads(row[3]))
