"""Migration 021: graph facts the agent or the user wrote and imported conversations travel to the
other devices, and removing a device gives the others a new group key (issue 32)."""

from __future__ import annotations

#: As m018's capture: only while this device syncs and is not applying another device's changes.
_CAPTURING = "(SELECT capturing FROM sync_device WHERE id = 1) = 1 AND NOT EXISTS (SELECT 1 FROM sync_applying)"
#: The extractor's facts are derived on each device from the synced messages and passages.
_WRITTEN = "new.author != 'extractor' AND new.uid IS NOT NULL"


def _capture(name: str, event: str, op: str, when: str, table: str = "graph_facts", kind: str = "") -> str:
    return f"""CREATE TRIGGER {name} AFTER {event} ON {table} WHEN {_CAPTURING} AND {when} BEGIN
            INSERT INTO sync_outbox(kind, key, op) VALUES ('{kind or table}', new.uid, '{op}');
        END;
        """


def migrate(db) -> None:
    """Capture (``sync_outbox``, kind 'graph_facts') of a fact the agent or the user wrote: added,
    edited (relation, dates), closed by a newer one, deleted (``deleted``, never a row's delete),
    or made the user's by an edit. A forget's deletes are not captured: it runs on every device.
    The uid trigger fills a new row's id in an UPDATE right after the INSERT: that is captured too."""
    db.run_script(
        _capture("graph_facts_sync_ai", "INSERT", "i", _WRITTEN)
        + _capture("graph_facts_sync_au_uid", "UPDATE OF uid", "i", f"old.uid IS NULL AND {_WRITTEN}")
        + _capture("graph_facts_sync_au", "UPDATE OF relation, valid_from, valid_to, deleted, author", "u", _WRITTEN)
    )
    # A removed device's key is revoked: the others adopt a new group key, sealed to each of them
    # (``box_key``: the X25519 key a device announces for that); the earlier keys are kept to read
    # files written under them. ``revoked_upto``: the removed device's last file that was in the
    # folder when it was removed; its later files are refused.
    db.run_script(
        """
        ALTER TABLE sync_device ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE sync_group_keys (
            epoch INTEGER PRIMARY KEY,
            key   BLOB NOT NULL
        );
        ALTER TABLE sync_peers ADD COLUMN box_key BLOB;
        ALTER TABLE sync_peers ADD COLUMN revoked_upto INTEGER NOT NULL DEFAULT 0;
        """
    )
    # Imported conversations' messages (m019 kept them on their device) travel too, as kind
    # 'imported', with their conversation's natural key (source, external id), their export ids and
    # import time: on another device they join the same conversation, never its own chat, and
    # importing the same export there adds nothing. The import's progress and what was learned
    # from it (history_imports, learned_proposals) stay on the device.
    imported = "new.conversation_id IS NOT NULL"
    db.run_script(
        _capture(
            "messages_sync_imported_ai", "INSERT", "i", f"new.uid IS NOT NULL AND {imported}", "messages", "imported"
        )
        + _capture(
            "messages_sync_imported_au", "UPDATE OF uid", "i", f"old.uid IS NULL AND {imported}", "messages", "imported"
        )
    )
