"""An imported agent's options (``agents.config``): only what MemDesk owns and may take from a file.

The options hold the retention policy (memdesk.core.memory.forget.retention). A file may bring the
number of days; it never brings the user's confirmation (that confirmation is what lets retention
delete messages, after a preview of what it removes), nor another store's bookkeeping; keys
MemDesk does not know are dropped. Each thing dropped is said in the import's summary.
"""

from __future__ import annotations

from typing import Any

from memdesk.core.memory.forget.retention import CONFIRMED, DAYS, LAST_RUN
from memdesk.core.transfer.values import shown

#: Longest retention a file may set: a century.
MAX_RETENTION_DAYS = 36_500


def imported_config(config: Any, owner: str) -> tuple[dict[str, Any], list[str]]:
    """The options to store for an agent a file brought, and what was left out (for the summary)."""
    if not isinstance(config, dict) or not config:
        return {}, []
    kept: dict[str, Any] = {}
    notes: list[str] = []
    days = config.get(DAYS)
    if days is not None:
        if type(days) is int and 0 <= days <= MAX_RETENTION_DAYS:
            if days:
                kept[DAYS] = days
                kept[CONFIRMED] = False
                notes.append(
                    f"Retention of {owner!r} (forget conversation messages older than {days} days) waits for your "
                    "confirmation: it was not confirmed here"
                )
        else:
            notes.append(f"Retention of {owner!r} was {shown(days)}, not a number of days: retention is off")
    unknown = sorted(str(key)[:40] for key in config if key not in (DAYS, CONFIRMED, LAST_RUN))
    if unknown:
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        notes.append(f"Options of {owner!r} MemDesk does not have were not imported: {', '.join(unknown[:10])}{more}")
    return kept, notes
