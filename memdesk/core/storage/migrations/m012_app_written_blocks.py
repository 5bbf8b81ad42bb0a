"""Migration 012: app written blocks."""

from __future__ import annotations

#: The default persona every agent got before it was written from the agent's name.
OLD_DEFAULT_PERSONA = (
    "My name is Sam. I am a warm, curious and attentive companion.\n"
    "I remember what people tell me and bring it up naturally later.\n"
    "I keep my replies short, friendly and honest."
)


def migrate(db) -> None:
    """A new agent's default persona and empty human block were recorded as created by the user,
    who never wrote them: the history said "created by you". Those creations (the exact default
    text, source 'user') now name the app, and so does the block itself while nobody changed it."""
    db.execute(
        "UPDATE memory_history SET source = 'app' WHERE source = 'user' AND target_kind = 'block' AND action = 'create'"
        " AND ((target_label = 'persona' AND after = ?) OR (target_label = 'human' AND COALESCE(after, '') = ''))",
        (OLD_DEFAULT_PERSONA,),
    )
    db.execute(
        "UPDATE memory_blocks SET updated_by = 'app' WHERE updated_by = 'user' AND EXISTS ("
        " SELECT 1 FROM memory_history h WHERE h.target_kind = 'block' AND h.target_id = memory_blocks.id AND h.source = 'app')"
        " AND NOT EXISTS (SELECT 1 FROM memory_history h WHERE h.target_kind = 'block' AND h.target_id = memory_blocks.id"
        " AND h.action != 'create')"
    )
