"""Forget reaches every text the agent owns and every file of the data folder (issue 35 item 8):
the schema is walked, not a list of places kept by hand. Every text column of every table an
agent owns (all but MemDesk's own vocabulary: kinds, states, dates, digests) and every file under
the data folder are seeded with a name; after `memdesk forget --apply --purge-backups` no byte of
it is left on disk, in the backups or in an export, and the user's own code is named, not changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.clock import iso
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.forget.schema_text import SHARED, VOCABULARY, text_columns, unowned_text_tables
from memdesk.core.memory.recall import ImportedMessage
from memdesk.core.runtime.scripted import call, say
from tests.agent.forget.test_forget import occurrences

NAME = "Ottoline"


def _ordinary_tables(db) -> list[str]:
    rows = db.query("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    virtual = [n for n, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
    return sorted(n for n, _ in rows if n not in virtual and not any(n.startswith(f"{v}_") for v in virtual))


def _seeded(value) -> str:
    """``value`` with the name in it, its shape kept (JSON stays JSON)."""
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            return json.dumps({**data, "seeded": f"notes on {NAME}", NAME: 1})
        if isinstance(data, list):
            return json.dumps([*data, f"about {NAME}"])
    return f"{value or ''}\n{NAME} is in this line too."


def _a_full_agent(services, make_agent, runtime):
    """An agent with rows in every table an agent can own (conversation, recall, archival, a
    document, the graph, consolidation, history, an imported tool, an agent file's extras)."""
    agent = make_agent("ivo")
    runtime.enqueue(
        call("core_memory_append", "noted", True, label="human", content="Likes tea"),
        say("Noted."),
    )
    agent.send_user_message("I like tea and long walks")
    runtime.enqueue(say("Walks are good."))
    agent.send_user_message("We walked by the river")
    memory, db, now = services.memory, services.db, iso(services.clock.now())
    shown = memory.recall.add(
        agent.id,
        role="user",
        kind="memories",
        created_at=services.clock.now(),
        content=json.dumps({"type": "memories", "memories": ["[3 May 2024, you] I like tea"]}),
    )
    db.execute(
        "INSERT INTO recall_shown(agent_id, event_id, position, source, ref, at, place, text)"
        " VALUES (?, ?, 0, 'conversation', 'message:1', ?, 'you', 'I like tea')",
        (agent.id, shown.id, now),
    )
    memory.archival.insert(agent.id, "The river path is five kilometres long.")
    memory.core.create(agent.id, "notes", "Things to keep", description="Loose notes")
    with db.transaction():
        tea = memory.graph.resolve(agent.id, "tea", "thing")
        memory.graph.add_mention(agent.id, tea, at=services.clock.now(), message_id=memory.recall.last_id(agent.id))
    memory.graph.insert_fact(agent.id, "Ivo", "likes", "tea", author="extractor")
    run = db.execute(
        "INSERT INTO consolidation_runs(agent_id, first_message_id, last_message_id, mode, status, started_at)"
        " VALUES (?, 1, 2, 'ask', 'done', ?)",
        (agent.id, now),
    ).lastrowid
    db.execute(
        "INSERT INTO consolidation_changes(run_id, agent_id, function, arguments, thoughts, status, created_at)"
        " VALUES (?, ?, 'core_memory_append', ?, 'a thought', 'pending', ?)",
        (run, agent.id, json.dumps({"label": "human", "content": "Walks daily"}), now),
    )
    db.execute(
        "INSERT INTO documents(agent_id, path, title, content_hash, size_bytes, created_at, updated_at, error)"
        " VALUES (?, '/home/ivo/walks.txt', 'walks.txt', 'abc', 3, ?, ?, 'no error')",
        (agent.id, now, now),
    )
    db.execute(
        "INSERT INTO imported_tools(agent_id, name, description, source_code, json_schema, origin, original,"
        " created_at) VALUES (?, 'lookup', 'Looks things up', 'def lookup():\n    return 1\n', '{}', 'letta', '{}', ?)",
        (agent.id, now),
    )
    db.execute(
        "INSERT INTO agent_file_extras(agent_id, format, data) VALUES (?, 'letta', ?)",
        (agent.id, json.dumps({"description": "An imported companion", "metadata": {"k": "v"}})),
    )
    db.execute(
        "INSERT INTO graph_queue(agent_id, source_kind, source_id, stage, last_error)"
        " VALUES (?, 'message', 1, 'facts', 'timeout')",
        (agent.id,),
    )
    db.execute("INSERT INTO graph_user_names(agent_id, name) VALUES (?, 'Ivo')", (agent.id,))
    # what sync keeps of a block's text: its versions, and a conflict shown to the user
    db.execute(
        "INSERT INTO sync_block_versions(edit_id, agent_id, label, parents, value, meta) VALUES"
        " ('0000000000000001-d', ?, 'human', '[]', 'Likes tea', '{}')",
        (agent.id,),
    )
    db.execute(
        "INSERT INTO sync_conflicts(agent_id, label, reason, ours, theirs, merged, created_at)"
        " VALUES (?, 'human', 'both devices changed the same lines', 'a', 'b', 'a\\nb', ?)",
        (agent.id, now),
    )
    _imported_history(services, agent.id, now)
    return agent


def _imported_history(services, agent_id: int, now: str) -> None:
    """A conversation imported from ChatGPT (issue 31), its import and a proposal learned from it."""
    db = services.db
    import_id = db.execute(
        "INSERT INTO history_imports(agent_id, path, fingerprint, format, selection, status, skipped,"
        " started_at, updated_at) VALUES (?, '/home/ivo/chatgpt.zip', 'f', 'chatgpt', ?, 'done', ?, ?, ?)",
        (agent_id, json.dumps({"titles": ["walks"]}), json.dumps([["Walks", "an image"]]), now, now),
    ).lastrowid
    conversation = db.execute(
        "INSERT INTO imported_conversations(agent_id, source, external_id, title, assistant, skipped, import_id,"
        " created_at) VALUES (?, 'chatgpt', 'c-1', 'River walks', 'ChatGPT', '[]', ?, ?)",
        (agent_id, import_id, now),
    ).lastrowid
    with db.transaction():
        (said,) = services.memory.recall.add_imported(
            agent_id,
            conversation,
            [ImportedMessage("user", "I walk by the river", services.clock.now(), None, "m-1")],
        )
    db.execute(
        "INSERT INTO learned_proposals(agent_id, kind, label, text, key, sources, created_at)"
        " VALUES (?, 'preference', 'human', 'Loves river walks', 'loves*', ?, ?)",
        (agent_id, json.dumps([said]), now),
    )


def _seed_every_text_column(db, agent_id: int) -> list[str]:
    """The newest row of every table the agent owns gets the name in each of its text columns;
    returns "table.column" for each."""
    seeded = []
    for table in _ordinary_tables(db):
        if table in SHARED:
            continue
        columns = [c for c in text_columns(db, table) if c not in VOCABULARY.get(table, ())]
        if not columns:
            continue
        owner = "id" if table == "agents" else "agent_id"
        row = db.query_one(
            f'SELECT rowid, {", ".join(columns)} FROM "{table}" WHERE {owner} = ? ORDER BY rowid DESC', (agent_id,)
        )
        assert row is not None, f"the agent has no row in {table}: the test must make one"
        values = [
            _seeded(v) if not (table == "memory_blocks" and c == "label") else f"notes/{NAME}"
            for c, v in zip(columns, row[1:], strict=True)
        ]
        db.execute(f'UPDATE "{table}" SET {", ".join(f"{c} = ?" for c in columns)} WHERE rowid = ?', (*values, row[0]))
        seeded += [f"{table}.{c}" for c in columns]
    return seeded


def _seed_every_file(paths: Paths, agent_id: int) -> None:
    line = f"{NAME} called.\n".encode()
    paths.logs.mkdir(parents=True, exist_ok=True)
    (paths.logs / "memdesk.log").write_bytes(b"INFO started\n" + line + b"INFO closed\n")
    paths.sent_before_open.write_text(json.dumps({"text": f"Tell {NAME} hi"}) + "\n", encoding="utf-8")
    own = paths.agent_files(agent_id)
    own.mkdir(parents=True, exist_ok=True)
    (own / "notes.md").write_bytes(b"# Notes\n" + line)
    (own / f"{NAME.lower()}.txt").write_bytes(b"letters\n")
    paths.kv_cache.mkdir(parents=True, exist_ok=True)
    (paths.kv_cache / "prefix-1.kv").write_bytes(b"MDKV " + line)
    (paths.home / "a-later-version.json").write_bytes(b'{"recent": "' + NAME.encode() + b'"}\n')
    for path in paths.home.rglob("*"):  # and every other file MemDesk keeps there
        if path.is_file() and not path.name.startswith("memdesk.sqlite3") and paths.backups not in path.parents:
            with open(path, "ab") as handle:
                handle.write(b"\n" + line)


def _bytes_of(paths: Paths, *, but: Path) -> dict[str, bytes]:
    return {
        path.relative_to(paths.home).as_posix(): path.read_bytes()
        for path in paths.home.rglob("*")
        if path.is_file() and but not in path.parents
    }


@pytest.fixture
def seeded(services, make_agent, runtime, tmp_path):
    """The agent "ivo" with the name in every text column, every file, a backup and the user's own
    tool; the store closed (the terminal's commands open it); the export from before."""
    paths = services.paths
    agent = _a_full_agent(services, make_agent, runtime)
    assert unowned_text_tables(services.db) == []  # every table with text is an agent's, or the store's own
    columns = _seed_every_text_column(services.db, agent.id)
    assert {"agents.system_prompt", "memory_blocks.description", "agent_file_extras.data"} <= set(columns)
    assert {"imported_tools.source_code", "imported_tools.description", "graph_queue.last_error"} <= set(columns)
    assert {"imported_conversations.title", "learned_proposals.text", "history_imports.path"} <= set(columns)
    services.backups.create(f"before import of {NAME}.af", keep=True)
    _seed_every_file(paths, agent.id)
    paths.user_tools.mkdir(parents=True, exist_ok=True)
    (paths.user_tools / "greet.py").write_text(f'def greet():\n    return "hi {NAME}"\n', encoding="utf-8")
    services.close()
    assert main(["agents", "export", "ivo", str(tmp_path / "before.af")]) == 0
    assert occurrences((tmp_path / "before.af").read_bytes(), NAME) >= 7
    return agent


def test_forget_leaves_the_name_in_no_column_no_file_no_backup_and_no_export(seeded, services, tmp_path):
    paths = services.paths
    assert main(["forget", "ivo", NAME, "--apply", "--purge-backups"]) == 0

    left = {name: n for name, data in _bytes_of(paths, but=paths.user_tools).items() if (n := occurrences(data, NAME))}
    assert left == {}
    assert f"hi {NAME}" in (paths.user_tools / "greet.py").read_text(encoding="utf-8")  # the user's code is theirs
    assert main(["agents", "export", "ivo", str(tmp_path / "after.af")]) == 0
    assert occurrences((tmp_path / "after.af").read_bytes(), NAME) == 0
    assert main(["backup", "verify"]) == 0
    # What was not about the name stays.
    again = open_services(paths, embedder=HashingEmbedder())
    try:
        human = again.memory.core.get(seeded.id, "human")
        assert human is not None and "Likes tea" in human.value
        assert "Things to keep" not in [b.value for b in again.memory.core.blocks(seeded.id)]  # its label named it
        extras = json.loads(again.db.scalar("SELECT data FROM agent_file_extras WHERE agent_id = ?", (seeded.id,)))
        assert extras["description"] == "An imported companion" and NAME not in extras
        assert again.db.scalar("SELECT COUNT(*) FROM imported_tools WHERE agent_id = ?", (seeded.id,)) == 0
    finally:
        again.close()


def test_the_preview_shows_the_other_texts_the_files_and_the_users_own_code(seeded, capsys):
    capsys.readouterr()
    assert main(["forget", "ivo", NAME]) == 0
    out = capsys.readouterr().out
    assert "other texts (system prompt" in out and "· the system prompt: " in out
    assert "lines in MemDesk's files" in out and "files/agent-1/notes.md: 2 lines" in out
    assert "Your own tool files name it too" in out and "tools/greet.py" in out
    assert main(["forget", "ivo", NAME, "--json"]) == 0
    preview = json.loads(capsys.readouterr().out)
    assert preview["kinds"]["other_text"]["count"] >= 5 and preview["kinds"]["files"]["count"] >= 4
    assert preview["user_code"] == ["tools/greet.py"]


def test_the_vocabulary_left_out_of_the_walk_names_real_columns(services):
    """MemDesk's own words are the one exception to "every text column": each one must exist."""
    tables = set(_ordinary_tables(services.db))
    for table, columns in VOCABULARY.items():
        assert table in tables, table
        assert columns <= set(text_columns(services.db, table)), table
    assert SHARED <= tables


def test_forgetting_a_word_of_memdesks_own_vocabulary_leaves_the_structure(services, make_agent, runtime):
    from memdesk.app.operations import open_forgetting

    agent = make_agent("ivo")
    runtime.enqueue(say("Hello, user."))
    agent.send_user_message("Tell me about the assistant")
    roles = [m.role for m in services.memory.recall.all(agent.id)]
    open_forgetting(services).apply(agent.id, "assistant")
    open_forgetting(services).apply(agent.id, "user")
    assert [m.role for m in services.memory.recall.all(agent.id)] == roles
    runtime.enqueue(say("Still here."))
    assert agent.send_user_message("Hi").replies == ["Still here."]
