"""A new agent's default persona names the agent by its own name, and the memory history says
MemDesk wrote the default text, not the user (issue 22)."""

from __future__ import annotations

from memdesk.core.memory.history import APP, BLOCK, USER
from memdesk.core.prompts import renamed_persona
from memdesk.core.storage import migrations, open_database
from memdesk.core.storage.migrations import MIGRATIONS


def test_the_default_persona_calls_the_agent_by_its_own_name(services):
    record = services.create_agent("Companion")
    persona = services.memory.core.get(record.id, "persona").value
    assert persona.startswith("My name is Companion.")
    assert "Sam" not in persona and "{name}" not in persona


def test_the_history_says_memdesk_wrote_the_default_blocks(services):
    record = services.create_agent("Companion")
    created = {c.label: c for c in services.memory.core.history.for_agent(record.id, kind=BLOCK)}
    assert created["persona"].source == APP and created["human"].source == APP
    assert created["persona"].describe() == "MemDesk created persona"
    assert services.memory.core.get(record.id, "persona").updated_by == APP


def test_a_persona_the_user_wrote_is_recorded_as_theirs(services):
    record = services.create_agent("Ada's helper", persona="I help Ada with her garden.", human="Ada lives in Lisbon.")
    created = {c.label: c for c in services.memory.core.history.for_agent(record.id, kind=BLOCK)}
    assert created["persona"].source == USER and created["human"].source == USER


def test_the_default_persona_given_back_unchanged_is_still_the_apps(services):
    # The New agent dialog pre-fills the default persona: creating with it untouched is not the user's text.
    record = services.create_agent("Bo", persona=services.prompts.persona_for("Bo"))
    created = {c.label: c for c in services.memory.core.history.for_agent(record.id, kind=BLOCK)}
    assert created["persona"].source == APP


def test_renaming_rewrites_the_name_where_the_persona_uses_it():
    persona = "My name is Sam. Sam likes Samuel Beckett."
    assert renamed_persona(persona, "Sam", "Ada") == "My name is Ada. Ada likes Samuel Beckett."
    assert renamed_persona("I am a helpful companion.", "Sam", "Ada") is None
    assert renamed_persona(persona, "Sam", "Sam") is None


def test_an_older_store_credits_its_default_blocks_to_memdesk_and_leaves_the_users_alone(tmp_path):
    db = open_database(tmp_path / "store.sqlite3", migrate=False)
    db.migrate(MIGRATIONS[: MIGRATIONS.index(migrations.m012_app_written_blocks.migrate)])
    now = "2026-01-01T00:00:00+00:00"
    for agent_id, name in ((1, "Companion"), (2, "Mine")):
        db.execute(
            "INSERT INTO agents(id, name, created_at, system_prompt) VALUES (?, ?, ?, '')", (agent_id, name, now)
        )
    blocks = [  # (block id, agent, label, first text, later edited by the user)
        (1, 1, "persona", migrations.m012_app_written_blocks.OLD_DEFAULT_PERSONA, None),
        (2, 1, "human", "", "Ada lives in Lisbon."),
        (3, 2, "persona", "I am my own.", None),
        (4, 2, "human", "", None),
    ]
    for block_id, agent_id, label, text, edit in blocks:
        db.execute(
            "INSERT INTO memory_blocks(id, agent_id, label, value, char_limit, updated_at, updated_by)"
            " VALUES (?, ?, ?, ?, 5000, ?, 'user')",
            (block_id, agent_id, label, edit or text, now),
        )
        db.execute(
            "INSERT INTO memory_history(agent_id, target_kind, target_id, target_label, action, after, source,"
            " created_at)"
            " VALUES (?, 'block', ?, ?, 'create', ?, 'user', ?)",
            (agent_id, block_id, label, text, now),
        )
        if edit:
            db.execute(
                "INSERT INTO memory_history(agent_id, target_kind, target_id, target_label, action, before, after,"
                " source, created_at)"
                " VALUES (?, 'block', ?, ?, 'update', ?, ?, 'user', ?)",
                (agent_id, block_id, label, text, edit, now),
            )
    db.migrate(MIGRATIONS)
    assert db.query("SELECT target_id, action, source FROM memory_history ORDER BY id") == [
        (1, "create", "app"),
        (2, "create", "app"),
        (2, "update", "user"),
        (3, "create", "user"),
        (4, "create", "app"),
    ]
    # The block shows its last author: MemDesk while untouched, the user once they edited it.
    assert db.query("SELECT id, updated_by FROM memory_blocks ORDER BY id") == [
        (1, "app"),
        (2, "user"),
        (3, "user"),
        (4, "app"),
    ]
    db.close()
