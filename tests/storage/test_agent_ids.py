"""An agent's id is never given to another agent (issue 18, item 4): what is keyed by the id outside
the store ("Always allow" answers, the agent's files folder) must not pass to a newer agent."""

from __future__ import annotations

from memdesk.core.storage import migrations, open_database
from memdesk.core.storage.migrations import MIGRATIONS

NOW = "2026-01-01T00:00:00+00:00"


def test_an_agent_created_after_the_newest_was_deleted_gets_a_new_id(services):
    first = services.create_agent("first").id
    newest = services.create_agent("newest").id
    services.agents.delete(newest)
    assert services.create_agent("successor").id > newest > first


def _add_agent(db, name: str) -> int:
    agent_id = db.execute(
        "INSERT INTO agents(name, created_at, system_prompt, config) VALUES (?, ?, 'be kind', '{\"x\": 1}')",
        (name, NOW),
    ).lastrowid
    db.execute(
        "INSERT INTO memory_blocks(agent_id, label, value, char_limit, updated_at) VALUES (?, 'human', ?, 100, ?)",
        (agent_id, f"{name}'s human", NOW),
    )
    db.execute(
        "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text)"
        " VALUES (?, ?, 'user', 'user_message', 'hi', 'hi')",
        (agent_id, NOW),
    )
    db.execute("INSERT INTO passages(agent_id, text, created_at) VALUES (?, 'a note', ?)", (agent_id, NOW))
    return agent_id


def test_a_store_from_before_keeps_its_agents_and_their_rows_and_stops_reusing_ids(tmp_path):
    path = tmp_path / "store.sqlite3"
    db = open_database(path, migrate=False)
    position = MIGRATIONS.index(migrations.m010_agent_ids_never_reused.migrate)
    db.migrate(MIGRATIONS[:position])
    ann, bob = _add_agent(db, "ann"), _add_agent(db, "bob")
    db.execute(
        "UPDATE agents SET summary = 'we met', memory_view = 'seen', recall_expired_before = 7 WHERE id = ?", (bob,)
    )
    before = {table: db.scalar(f"SELECT COUNT(*) FROM {table}") for table in ("memory_blocks", "messages", "passages")}
    db.close()

    db = open_database(path)  # the upgrade, as MemDesk opens the file
    assert db.schema_version == len(MIGRATIONS)
    assert {table: db.scalar(f"SELECT COUNT(*) FROM {table}") for table in before} == before
    assert db.query_one(
        "SELECT name, system_prompt, config, summary, memory_view, recall_expired_before FROM agents WHERE id = ?",
        (bob,),
    ) == ("bob", "be kind", '{"x": 1}', "we met", "seen", 7)
    assert db.scalar("PRAGMA foreign_keys") == 1 and db.query("PRAGMA foreign_key_check") == []
    db.execute("DELETE FROM agents WHERE id = ?", (bob,))  # still cascades to its rows
    assert db.scalar("SELECT COUNT(*) FROM messages WHERE agent_id = ?", (bob,)) == 0
    assert db.scalar("SELECT COUNT(*) FROM messages WHERE agent_id = ?", (ann,)) == 1
    assert _add_agent(db, "cy") > bob
    db.close()
