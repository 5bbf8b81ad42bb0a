"""A block merge kept as a conflict: listed for the user (File > Devices, ``memdesk sync status``)
and told to the model as an event in its conversation, the way MemDesk tells it of a login or of
memory changed meanwhile: a user-role message whose JSON the model reads at its next step.

Every device that merges the same versions records the same conflict and writes the same event:
its stable id and its date come from the versions (the newest head's clock), never from the device
that merged, so the event, which travels like any message, is in each conversation once, also on a
device that never saw the two heads apart (it gets the event from one that did).

A conflict closes when the block is edited after it, here (an edit that names every head) or on
another device (its edit arrives and leaves one head).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from memdesk.core.base.clock import event_time, iso
from memdesk.core.memory.synced import SyncedRows
from memdesk.core.storage import Database
from memdesk.core.sync.hlc import wall_ms
from memdesk.core.sync.versions import Resolved

#: The kind of the conversation's message that tells the model of a conflict.
EVENT_KIND = "memory_conflict"
SAME_LINES = "both devices changed the same lines"
OVER_LIMIT = "the merge is over the block's limit"


def record(db: Database, rows: SyncedRows, agent_id: int, label: str, resolved: Resolved, reason: str) -> bool:
    """Keep the conflict (once) and tell the model; True when it is new here."""
    moment = _moment(resolved)
    first, second = resolved.sides[0][1] or "", resolved.sides[-1][1] or ""
    if db.scalar(
        "SELECT 1 FROM sync_conflicts WHERE agent_id = ? AND label = ? AND merged = ? AND resolved_at IS NULL",
        (agent_id, label, resolved.value),
    ):
        return False
    db.execute(
        "INSERT INTO sync_conflicts(agent_id, label, reason, ours, theirs, merged, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (agent_id, label, reason, first, second, resolved.value, iso(moment)),
    )
    uid = _event_uid(label, resolved, moment)
    added = rows.add_messages(
        agent_id,
        [
            {
                "uid": uid,
                "created_at": iso(moment),
                "role": "user",
                "kind": EVENT_KIND,
                "author": None,
                "content": event(label, reason, moment),
                "search_text": "",
                "function_name": None,
                "step": None,
            }
        ],
    )
    if added and db.scalar("SELECT capturing FROM sync_device WHERE id = 1"):
        # written while applying, when the triggers are quiet: sent on, for the devices that
        # will never merge these heads themselves
        db.execute("INSERT INTO sync_outbox(kind, key, op) VALUES ('messages', ?, 'i')", (uid,))
    return True


def event(label: str, reason: str, moment: datetime) -> str:
    """The event the model reads (short: every event stays in its context)."""
    return json.dumps(
        {
            "type": EVENT_KIND,
            "block": label,
            "reason": reason,
            "message": f"Your devices changed the {label} block at the same time and both versions' lines are"
            " kept in it. Keep what is true and rewrite the block (core_memory_replace).",
            "time": event_time(moment),
        },
        ensure_ascii=False,
    )


def close(db: Database, agent_id: int, label: str, at: str) -> int:
    """The block was edited after its conflicts: they are resolved. Returns how many closed."""
    return int(
        db.execute(
            "UPDATE sync_conflicts SET resolved_at = ? WHERE agent_id = ? AND label = ? AND resolved_at IS NULL",
            (at, agent_id, label),
        ).rowcount
    )


def _moment(resolved: Resolved) -> datetime:
    newest = max(resolved.heads)
    return datetime.fromtimestamp(wall_ms(int(newest.split("-", 1)[0], 16)) / 1000, UTC)


def _event_uid(label: str, resolved: Resolved, moment: datetime) -> str:
    """Sortable like every uid (milliseconds first), the rest from what was merged."""
    named = hashlib.sha256("\n".join([label, *sorted(resolved.heads)]).encode()).hexdigest()
    return f"{int(moment.timestamp() * 1000):012x}{named[:20]}"
