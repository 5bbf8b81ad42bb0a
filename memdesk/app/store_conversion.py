"""What goes with encrypting, decrypting or re-keying the store besides the store itself.

Messages sent in the first window before the store opened wait in a plain file
(memdesk/session/sent_before_open.py); encrypting with them still there would leave them readable
beside an encrypted store, so they are saved into the store first, to the agent the window opens
(answered at the next start like any message left unanswered). And the store's snapshots follow it
(memdesk/core/storage/snapshot_keys.py).
"""

from __future__ import annotations

import logging

from memdesk.app.services import open_services
from memdesk.app.store_opening import backups_at
from memdesk.core.base.paths import Paths
from memdesk.core.memory.agents import FIRST_AGENT
from memdesk.core.storage.snapshot_keys import SnapshotsConverted, convert_snapshots
from memdesk.session import replies
from memdesk.session.sent_before_open import SentBeforeOpen

log = logging.getLogger("memdesk.app")


def fold_sent_before_open(paths: Paths, key: str | None) -> int:
    """Save the messages waiting in the plain file into the store (opened with ``key``) and delete
    the file; how many there were. They go to the agent the window opens (the last one used, else
    the first, else a new one, as the window would make it)."""
    inbox = SentBeforeOpen(paths.sent_before_open)
    if not inbox.texts():
        inbox.clear()  # nothing in it worth keeping (empty or damaged lines)
        return 0
    with open_services(paths, key=key) as services:
        agents = services.agents.list() or [services.create_agent(FIRST_AGENT)]
        last = services.settings.last_agent
        agent = next((a for a in agents if a.name == last), agents[0])
        delivered = replies.deliver(services.memory, agent.id, inbox)
    log.info("saved %d message(s) sent before the store opened, before converting it", len(delivered))
    return len(delivered)


def convert_snapshots_of(paths: Paths, old_key: str | None, new_key: str | None) -> SnapshotsConverted:
    """The store's snapshots, brought to its new passphrase (the store is converted already)."""
    return convert_snapshots(backups_at(paths, key=new_key), old_key)
