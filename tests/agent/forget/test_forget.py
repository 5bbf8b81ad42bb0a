"""Forget a person everywhere an agent's memory keeps them (issue 19 §3): previewed without changing
anything, removed with their index rows, placeholders where the conversation needs them, and the
bytes gone from the file, its WAL, the prompt cache and (on request) the backups."""

from __future__ import annotations

import json
import re

from memdesk.core.agent.conversation_view import conversation_entries
from memdesk.core.memory.forget import PLACEHOLDER
from memdesk.core.memory.forget.remove import FORGET_KIND
from memdesk.core.runtime.scripted import say


def occurrences(data: bytes, name: str) -> int:
    """How often ``name`` is in raw bytes as a word of its own, in any case, as UTF-8 or UTF-16
    (SQLite could store text either way). "retrieval" in the schema's own text is not "Eva"."""
    found = 0
    for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
        letters = [ch.encode(encoding) for ch in name]
        width = len(letters[0])
        pattern = b"".join(
            b"[" + re.escape(c.lower()) + re.escape(c.upper()) + b"]"
            if width == 1
            else b"(?:" + re.escape(ch.lower().encode(encoding)) + b"|" + re.escape(ch.upper().encode(encoding)) + b")"
            for c, ch in zip(letters, name, strict=True)
        )
        letter = (
            b"[A-Za-z]" if width == 1 else (b"(?:[A-Za-z]\x00)" if encoding.endswith("le") else b"(?:\x00[A-Za-z])")
        )
        found += len(re.findall(b"(?<!" + letter + b")" + pattern + b"(?!" + letter + b")", data))
    return found


def total_changes(db) -> int:
    return int(db.scalar("SELECT total_changes()"))


def test_the_preview_finds_every_kind_and_changes_nothing(services, eva_agent, forgetting):
    before = total_changes(services.db)
    preview = forgetting.preview(eva_agent.id, "Eva")
    assert total_changes(services.db) == before
    counts = preview.counts()
    for kind in (
        "messages",
        "passages",
        "core_memory",
        "summary",
        "graph_entities",
        "graph_facts",
        "graph_mentions",
        "history",
        "recall_events",
        "proposals",
    ):
        assert counts.get(kind, 0) > 0, kind
    assert counts["graph_entities"] == 2  # Eva and her alias Evie
    assert counts["passages"] == 1  # the garden passage is not about her
    assert any("Eva" in sample for sample in preview.kinds[0].samples)
    assert "Sister: Eva, lives in Lisbon" in " ".join(next(k for k in preview.kinds if k.kind == "core_memory").samples)
    as_json = json.loads(json.dumps(preview.as_dict()))
    assert as_json["kinds"]["messages"]["count"] == counts["messages"]


def test_an_alias_the_graph_knows_is_forgotten_with_the_name(services, eva_agent, forgetting):
    # The summary says "Evie", never "Eva": the graph knows Evie is Eva.
    forgetting.apply(eva_agent.id, "Eva")
    assert "Evie" not in services.agents.get(eva_agent.id).summary
    assert "tea" in services.agents.get(eva_agent.id).summary


def test_applying_removes_every_kind_and_keeps_the_rest(services, eva_agent, forgetting):
    result = forgetting.apply(eva_agent.id, "Eva")
    db, agent_id = services.db, eva_agent.id
    assert result.removed.counts["messages"] >= 3
    assert services.memory.core.get(agent_id, "human").value.count("Eva") == 0
    assert [p.text for p in services.memory.archival.list(agent_id)] == ["The garden needs water every Tuesday."]
    names = {e.name for e in services.memory.graph.entities(agent_id)}
    assert "Eva" not in names and "Evie" not in names and {"Lisbon", "green tea"} <= names
    assert db.scalar("SELECT COUNT(*) FROM graph_facts WHERE agent_id = ?", (agent_id,)) == 0
    assert db.scalar("SELECT COUNT(*) FROM recall_shown WHERE agent_id = ?", (agent_id,)) == 0
    assert db.scalar("SELECT COUNT(*) FROM consolidation_changes WHERE agent_id = ?", (agent_id,)) == 0
    assert "I like green tea" in [e.text for e in conversation_entries(services.memory.recall.all(agent_id))]


def test_messages_become_placeholders_and_the_conversation_still_reads(services, runtime, eva_agent, forgetting):
    count = services.memory.recall.count(eva_agent.id)
    forgetting.apply(eva_agent.id, "Eva")
    messages = services.memory.recall.all(eva_agent.id)
    assert len(messages) == count  # nothing vanished from the sequence
    entries = conversation_entries(messages)
    assert ("user", PLACEHOLDER) in [(e.kind, e.text) for e in entries]
    assert ("agent", PLACEHOLDER) in [(e.kind, e.text) for e in entries]
    user = next(m for m in messages if m.kind == "user_message")
    assert json.loads(user.content)["type"] == "user_message" and "time" in json.loads(user.content)
    # The model's next prompt renders, shows the placeholders, and never the name.
    runtime.enqueue(say("Hello again"))
    eva_agent.send_user_message("Good morning")
    prompt = "\n".join(m.content for m in runtime.prompts[-1])
    assert PLACEHOLDER in prompt and "eva" not in prompt.casefold()
    assert "I like green tea" in prompt


def test_the_history_records_a_forget_by_counts_never_the_text(services, eva_agent, forgetting):
    forgetting.apply(eva_agent.id, "Eva")
    changes = services.memory.archival.history.for_agent(eva_agent.id)
    forgets = [c for c in changes if c.kind == FORGET_KIND]
    assert len(forgets) == 1
    assert forgets[0].after.startswith("Forgot ") and "messages" in forgets[0].after
    for change in changes:
        text = json.dumps(
            [change.before, change.after, change.label, change.note, change.before_meta, change.after_meta]
        )
        assert "eva" not in text.casefold() and "evie" not in text.casefold()


def test_search_no_longer_finds_what_was_forgotten(services, eva_agent, forgetting):
    memory, agent_id, db = services.memory, eva_agent.id, services.db
    assert memory.archival.search(agent_id, "Eva birthday orchids").hits  # warms the rankers' caches
    assert memory.recall.search_text(agent_id, "Eva").total
    forgetting.apply(eva_agent.id, "Eva")
    # The search form derived from the vectors goes too: a placeholder keeps no float16 copy of what it said.
    kept = {p.id for p in memory.archival.list(agent_id)}
    assert {r[0] for r in db.query("SELECT id FROM passages_vec16 WHERE agent_id = ?", (agent_id,))} <= kept
    placeholders = [
        r[0]
        for r in db.query("SELECT id FROM messages WHERE agent_id = ? AND search_text = ?", (agent_id, PLACEHOLDER))
    ]
    assert placeholders
    marks = ",".join("?" * len(placeholders))
    assert db.scalar(f"SELECT COUNT(*) FROM messages_vec16 WHERE id IN ({marks})", placeholders) == 0
    assert not [h for h in memory.archival.search(agent_id, "Eva birthday orchids").hits if "Eva" in h.passage.text]
    assert memory.recall.search_text(agent_id, "Eva").total == 0
    assert db.scalar("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'eva OR evie OR orchids'") == 0
    assert db.scalar("SELECT COUNT(*) FROM passages_fts WHERE passages_fts MATCH 'eva OR orchids'") == 0
    vectors = {r[0] for r in db.query("SELECT rowid FROM passages_vec WHERE agent_id = ?", (agent_id,))}
    assert vectors == {p.id for p in memory.archival.list(agent_id)}


def test_word_forms_are_found_as_search_finds_them(services, make_agent, runtime, forgetting):
    agent = make_agent("kim")
    runtime.enqueue(say("Sounds fun"))
    agent.send_user_message("We camped by the lake")
    preview = forgetting.preview(agent.id, "camping")
    assert preview.counts().get("messages") == 1


def test_a_name_inside_another_word_is_not_forgotten(services, make_agent, runtime, forgetting):
    agent = make_agent("kim")
    runtime.enqueue(say("Good luck"))
    agent.send_user_message("Evan will evaluate my essay")
    assert forgetting.preview(agent.id, "Eva").empty


def test_a_forget_takes_a_backup_first_unless_backups_are_purged(services, eva_agent, forgetting, backups):
    first = forgetting.apply(eva_agent.id, "Eva")
    assert first.snapshot is not None and first.snapshot.reason == "before forget"
    assert b"Eva" in first.snapshot.path.read_bytes()  # the undo copy
    assert [b.id for b in forgetting.preview(eva_agent.id, "orchids").backups] == [first.snapshot.id]
    second = forgetting.apply(eva_agent.id, "Eva", purge_backups=True)
    assert second.snapshot is None and second.backups_purged == 1
    assert occurrences(first.snapshot.path.read_bytes(), "Eva") == 0
    assert len(backups.list()) == 1


def test_only_the_named_agent_forgets(services, eva_agent, make_agent, runtime, forgetting):
    other = make_agent("kim")
    runtime.enqueue(say("Hi"))
    other.send_user_message("Eva is my colleague")
    forgetting.apply(eva_agent.id, "Eva")
    assert "Eva is my colleague" in [e.text for e in conversation_entries(services.memory.recall.all(other.id))]


def test_nothing_to_forget_says_so(services, eva_agent, forgetting):
    preview = forgetting.preview(eva_agent.id, "Zanzibar")
    assert preview.empty and preview.total == 0


def test_after_forgetting_eva_no_byte_of_her_name_is_left_on_disk(services, runtime, eva_agent, forgetting, backups):
    """The issue's test: the store file, its WAL, the prompt KV cache folder and the purged
    backups hold no "Eva", and the conversation still reads (placeholders the model also sees)."""
    older = backups.create("daily")
    kv = services.paths.kv_cache
    kv.mkdir(parents=True, exist_ok=True)
    (kv / "prefix-1.kv").write_bytes(b"MDKVSEQ\x00 ... Sister: Eva, lives in Lisbon ...")
    store = services.paths.database
    wal = store.with_name(store.name + "-wal")
    assert occurrences(store.read_bytes() + (wal.read_bytes() if wal.exists() else b""), "Eva") > 0

    result = forgetting.apply(eva_agent.id, "Eva", purge_backups=True)

    assert result.checkpointed and result.backups_purged == 1 and result.kv_cache_files_removed == 1
    on_disk = store.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert occurrences(on_disk, "Eva") == 0 and occurrences(on_disk, "Evie") == 0
    assert all(occurrences(path.read_bytes(), "Eva") == 0 for path in kv.rglob("*") if path.is_file())
    assert occurrences(older.path.read_bytes(), "Eva") == 0
    assert services.db.scalar("PRAGMA integrity_check") == "ok"
    # Still a conversation, for the person and for the model.
    entries = conversation_entries(services.memory.recall.all(eva_agent.id))
    assert [e.text for e in entries if e.kind == "user"] == [PLACEHOLDER, "I like green tea"]
    runtime.enqueue(say("Hi"))
    eva_agent.send_user_message("Hello")
    assert PLACEHOLDER in runtime.prompts[-1][-1].content or any(PLACEHOLDER in m.content for m in runtime.prompts[-1])


def test_a_graph_object_on_another_connection_does_not_alias_a_forgotten_entity(services, eva_agent, forgetting):
    from memdesk.core.graph.store import KnowledgeGraph
    from memdesk.core.storage import open_database

    other_db = open_database(services.paths.database)
    try:
        other = KnowledgeGraph(other_db, services.clock, services.embedder)
        with other_db.transaction():
            other.resolve(eva_agent.id, "Ana", "person")  # fills its name-vector cache, Eva included
        forgetting.apply(eva_agent.id, "Eva")
        with other_db.transaction():
            new = other.resolve(eva_agent.id, "Eva", "person")  # must not point at the deleted row
        assert other_db.scalar("SELECT merged_into FROM graph_entities WHERE id = ?", (new,)) is None
    finally:
        other_db.close()


def test_a_document_named_after_the_person_goes_with_all_its_passages(services, eva_agent, forgetting, tmp_path):
    letters = tmp_path / "letters-from-eva.txt"
    letters.write_text("Dear sister,\n\nThe orchids are blooming in Lisbon.\n", encoding="utf-8")
    other = tmp_path / "garden.txt"
    other.write_text("Water the tomatoes on Tuesdays.\n", encoding="utf-8")
    services.ingestor().ingest([letters, other], eva_agent.id)
    preview = forgetting.preview(eva_agent.id, "Eva")
    assert preview.counts()["documents"] == 1
    assert "letters-from-eva" in " ".join(next(k for k in preview.kinds if k.kind == "documents").samples)
    forgetting.apply(eva_agent.id, "Eva")
    titles = [r[0] for r in services.db.query("SELECT title FROM documents WHERE agent_id = ?", (eva_agent.id,))]
    assert titles == ["garden.txt"]
    assert not [p for p in services.memory.archival.list(eva_agent.id) if "orchids are blooming" in p.text]
    assert services.db.scalar("SELECT COUNT(*) FROM passages_vec WHERE rowid NOT IN (SELECT id FROM passages)") == 0


def test_the_history_line_of_a_forget_reads_as_counts_and_cannot_be_reverted(services, eva_agent, forgetting):
    import pytest

    from memdesk.core.base.errors import RevertError
    from memdesk.core.memory.revert import Reverter

    forgetting.apply(eva_agent.id, "Eva")
    change = services.memory.archival.history.for_agent(eva_agent.id, kind=FORGET_KIND)[0]
    assert change.describe().startswith("user: Forgot ") and "eva" not in change.describe().casefold()
    reverter = Reverter(
        services.memory.archival.history, services.memory.core, services.memory.archival, services.memory.graph
    )
    with pytest.raises(RevertError, match="restore the backup"):
        reverter.revert(change.id)
