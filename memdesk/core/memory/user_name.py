"""The user's name in core memory: the name the user gave MemDesk (the welcome's "What should it
call you?", the ``user_name`` setting) is a line of every agent's human block, ``Name: Ada``,
written at the agent's next user turn, so the model knows it from the first message on.

A changed name replaces the line MemDesk wrote (nothing else of the block is touched); a block
that already names the user is left as it is; a read-only or full block is left alone. The agent's
options keep a digest of the name last written, not the name, so a forget of the name finds no
copy there and the line it removed is not written again until the name changes.
"""

from __future__ import annotations

import hashlib

from memdesk.core.memory.agents import AgentStore
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.memory.forget.matching import Phrases
from memdesk.core.memory.history import USER, Cause

PREFIX = "Name: "
#: agents.config key: a digest of the name last written.
WRITTEN = "user_name_written"


def _digest(name: str) -> str:
    return hashlib.sha256(" ".join(name.split()).casefold().encode("utf-8")).hexdigest()[:16]


def follow_user_name(core: CoreMemory, agents: AgentStore, agent_id: int, name: str) -> bool:
    """Write ``name`` into the agent's human block unless it is there or was written already;
    returns whether the block changed. Inside the caller's transaction, if any."""
    name = " ".join(name.split())
    if not name:
        return False
    record = agents.get(agent_id)
    written = record.config.get(WRITTEN)
    digest = _digest(name)
    if written == digest:
        return False
    block = core.get(agent_id, "human")
    changed = False
    if block is not None and not block.read_only:
        lines = block.value.split("\n") if block.value else []
        ours = next(
            (n for n, line in enumerate(lines) if line.startswith(PREFIX) and _digest(line[len(PREFIX) :]) == written),
            None,
        )
        if ours is not None:
            lines[ours] = PREFIX + name
        elif not Phrases([name]).matches(block.value):
            lines.insert(0, PREFIX + name)
        value = "\n".join(lines)
        if value != block.value and len(value) <= block.limit:
            core.set_value(agent_id, "human", value, source=USER, cause=Cause(note="your name, as you gave it"))
            changed = True
    agents.update(agent_id, config={**record.config, WRITTEN: digest})
    return changed
