"""Migration 006: memory view."""

from __future__ import annotations


def migrate(db) -> None:
    """The memory section as the model last saw it (agent/memory_view.py): rendered once and kept
    stable, so a memory edit does not make the runtime re-evaluate the whole conversation."""
    db.run_script("ALTER TABLE agents ADD COLUMN memory_view TEXT NOT NULL DEFAULT '';")
