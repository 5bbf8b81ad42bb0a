"""Encrypting, decrypting or re-keying the store, and what goes with it.

Messages sent in the first window before the store opened wait in a plain file
(memdesk/session/sent_before_open.py); encrypting with them still there would leave them readable
beside an encrypted store, so they are saved into the store first, to the agent the window opens
(answered at the next start like any message left unanswered). And the store's snapshots follow it
(memdesk/core/storage/snapshot_keys.py).
"""

from __future__ import annotations

import logging
import shutil

from memdesk.app.services import open_services
from memdesk.app.store_opening import backups_at
from memdesk.core.base.paths import Paths
from memdesk.core.memory.agents import FIRST_AGENT
from memdesk.core.storage.driver import forget_derived_keys
from memdesk.core.storage.snapshot_keys import SnapshotsConverted, convert_snapshots
from memdesk.session import replies
from memdesk.session.sent_before_open import SentBeforeOpen

log = logging.getLogger("memdesk.app")


def convert_store(paths: Paths, old_key: str | None, new_key: str | None) -> SnapshotsConverted:
    """Encrypt (``old_key`` None), decrypt (``new_key`` None) or re-key the store, which nothing may
    have open; then its snapshots the same way (what could not be converted is returned, with
    why). Messages waiting in the plain file of those sent before the store opened are saved into
    it first. The KV cache files are dropped: they hold the prompt's memory in the old form (plain,
    or under the old passphrase) and are rebuilt at the next start."""
    from memdesk.core.storage.encryption import change_key, decrypt_store, encrypt_store

    if old_key is None and new_key is None:
        raise ValueError("convert_store needs a passphrase on at least one side")
    fold_sent_before_open(paths, old_key)
    if old_key is None and new_key is not None:
        encrypt_store(paths.database, new_key)
    elif old_key is not None and new_key is None:
        decrypt_store(paths.database, old_key)
    elif old_key is not None and new_key is not None:
        change_key(paths.database, old_key, new_key)
    shutil.rmtree(paths.kv_cache, ignore_errors=True)
    try:
        return convert_snapshots_of(paths, old_key, new_key)
    except Exception as error:  # noqa: BLE001 - the store is converted: that must not be reported as failed
        log.warning("the snapshots were not converted: %s", error)
        return SnapshotsConverted((), (("", f"the snapshots could not be read ({error})"),))
    finally:
        forget_derived_keys()  # the old passphrase's, and the new one's: the next open derives it again


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
