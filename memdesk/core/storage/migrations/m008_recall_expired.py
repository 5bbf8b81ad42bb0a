"""Migration 008: recall expired."""

from __future__ import annotations


def migrate(db) -> None:
    """Automatic-recall events older than this message id are shown to the model as a one-line stub
    (agent/recall/search.py, ``expire``): set at an eviction, when the cache below the memory section
    is evaluated again anyway, so old sections stop crowding the window without changing the
    prompt between evictions."""
    db.run_script("ALTER TABLE agents ADD COLUMN recall_expired_before INTEGER NOT NULL DEFAULT 0;")
