"""The memory section as the model sees it, kept stable so memory edits keep the KV cache.

A runtime reuses the KV cache up to the first token that differs from its previous prompt. If
core memory were re-rendered in place after every edit, everything below it (the whole message
queue) would be evaluated again: 1,685 tokens for 114 new ones after one edit on the bundled model.
So the memory section is rendered at a *refresh* and then frozen; what changes afterwards reaches
the model as appended messages instead:

* the agent's own edits are its calls and their results, already in the queue;
* anybody else's (the user in the memory panel, an import, consolidation, documents added to
  archival memory) become one compact ``memory_update`` event before the agent's next step.

The knowledge graph's top entities are rendered with it: a hint that may lag until the next render
(below the queue, where it would always be current, it would cost its own tokens and the previous
answer's again at every step).

The section is rendered again when that costs nothing extra or the updates pile up: at an
eviction (the queue below is re-evaluated anyway), on the first step of an agent object (a new
process or a switched agent: the cache holds something else), and after ``REFRESH_AFTER``
memory_update events.
``MemoryView`` is the state of that bookkeeping, stored as JSON on the agent row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from memdesk.core.memory.core_memory import Block

#: memory_update events (changes by others) before the section is rendered again.
REFRESH_AFTER = 6


@dataclass(frozen=True)
class MemoryView:
    text: str = ""  # the rendered memory section; empty before the first render
    blocks: dict[str, str] = field(default_factory=dict)  # block values as the model knows them now
    archival: int = 0  # archival passages as the model knows it
    changes: int = 0  # changes reported since the render
    knowledge: str = ""  # the knowledge graph's top entities at the render (a hint: no updates)

    @property
    def rendered(self) -> bool:
        return bool(self.text)

    @property
    def stale(self) -> bool:
        return self.changes >= REFRESH_AFTER

    def to_json(self) -> str:
        return json.dumps(
            {
                "text": self.text,
                "blocks": self.blocks,
                "archival": self.archival,
                "changes": self.changes,
                "knowledge": self.knowledge,
            }
        )

    @classmethod
    def from_json(cls, raw: str) -> MemoryView:
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            blocks = {str(k): str(v) for k, v in data["blocks"].items()}
            return cls(
                str(data["text"]), blocks, int(data["archival"]), int(data["changes"]), str(data.get("knowledge", ""))
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()  # unreadable: render afresh (costs one re-evaluation, loses nothing)

    # --- transitions -----------------------------------------------------------------------
    def knows(self, blocks: list[Block], archival: int, *, changed: bool = True) -> MemoryView:
        """The model has seen all of memory as it is now (through an update event)."""
        return replace(
            self, blocks={b.label: b.value for b in blocks}, archival=archival, changes=self.changes + changed
        )

    def edited(self, blocks: list[Block], archival_added: int) -> MemoryView:
        """The agent's own step changed these blocks and added passages: it knows, from its call,
        which stays in the queue until an eviction renders the section again anyway, so its own
        edits never force a render (a model that saves a fact every turn would re-evaluate the
        whole conversation every few turns)."""
        if not blocks and not archival_added:
            return self
        known = {**self.blocks, **{b.label: b.value for b in blocks}}
        return replace(self, blocks=known, archival=self.archival + archival_added)

    @classmethod
    def fresh(cls, text: str, blocks: list[Block], archival: int, knowledge: str = "") -> MemoryView:
        return cls(text, {b.label: b.value for b in blocks}, archival, 0, knowledge)

    def updates(self, blocks: list[Block], archival: int) -> list[dict[str, Any]]:
        """What changed since the model last saw memory, as the entries of a memory_update event."""
        changes: list[dict[str, Any]] = []
        current = {b.label: b.value for b in blocks}
        for label, value in current.items():
            known = self.blocks.get(label)
            if known == value:
                continue
            if known is not None and known and value.startswith(known):
                changes.append({"block": label, "appended": value[len(known) :].lstrip("\n")})
            else:
                changes.append({"block": label, "now": value})
        for label in self.blocks:
            if label not in current:
                changes.append({"block": label, "deleted": True})
        if archival != self.archival:
            changes.append({"archival_passages": archival})
        return changes


def render_memory(blocks_text: str, hidden_messages: int, archival_count: int) -> str:
    return (
        "### Memory\n"
        f"{hidden_messages} earlier messages are out of view, in recall memory (conversation_search).\n"
        f"{archival_count} passages are in archival memory (archival_memory_search).\n"
        "Core memory follows; later changes appear below it as your edit calls or memory_update events.\n"
        f"{blocks_text}"
    )
