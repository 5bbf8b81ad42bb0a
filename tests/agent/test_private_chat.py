"""A private chat: the agent reads its saved memories and may edit them as usual, but every write
lands in an in-memory copy of the store; the file, its WAL and the KV cache folder are untouched,
and the saved conversation goes on as if the private chat never happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdesk.app.agents import open_agent
from memdesk.app.services import open_private_services
from memdesk.core.base.errors import PrivateChatRefusal
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll

# Words that appear nowhere but in the private chat.
SECRET_MESSAGE = "zanzibarquux"
SECRET_CORE = "quokkaflintwood"
SECRET_ARCHIVE = "marzipanvortex"
SECRET_FACT = "Obsidianfjord"


def file_bytes(path: Path) -> dict[str, bytes | None]:
    """The store file and its WAL, byte for byte (None: absent)."""
    return {
        suffix: (Path(f"{path}{suffix}").read_bytes() if Path(f"{path}{suffix}").exists() else None)
        for suffix in ("", "-wal")
    }


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return (
        {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        if folder.exists()
        else {}
    )


def counts(db, agent_id: int) -> dict[str, int]:
    tables = (
        "messages",
        "passages",
        "memory_history",
        "graph_entities",
        "graph_facts",
        "graph_mentions",
        "graph_queue",
        "recall_shown",
    )
    return {table: db.scalar(f"SELECT count(*) FROM {table}") for table in tables} | {
        "blocks": db.scalar("SELECT sum(version) FROM memory_blocks WHERE agent_id = ?", (agent_id,))
    }


@pytest.fixture
def saved_agent(services, runtime, make_agent):
    """An agent with a saved conversation and an archival passage the private chat can read."""
    agent = make_agent("sam", human="Name: Ana")
    services.memory.archival.insert(agent.id, "Ana's sister Lucia lives in Lisbon and teaches violin.")
    runtime.enqueue(say("Hello Ana!"))
    agent.send_user_message("Hi, I'm back")
    return agent


def private_turns(private, record, runtime) -> None:
    """Several turns that write everywhere an agent can: messages, core memory, archival memory,
    the knowledge graph, and a search that reads what was saved before."""
    agent = open_agent(private, record, runtime, consent=AllowAll())
    runtime.enqueue(
        call("core_memory_append", "note it", True, label="human", content=f"Secret hobby: {SECRET_CORE}"),
        call("archival_memory_insert", "keep it", True, content=f"Ana hid the key under the {SECRET_ARCHIVE}."),
        say("Noted."),
    )
    agent.send_user_message(f"Keep this between us: {SECRET_MESSAGE}")
    runtime.enqueue(
        call("knowledge_graph_insert", "a fact", True, subject="Ana", relation="visited", object=SECRET_FACT),
        call("archival_memory_search", "look", True, query="violin"),
        say("Lucia teaches violin."),
    )
    agent.send_user_message("What does my sister teach?")
    runtime.enqueue(say(f"You told me about {SECRET_MESSAGE}."))
    agent.send_user_message("What did I tell you?")


def test_a_private_chat_writes_nothing_to_the_store_file_or_the_kv_cache(services, runtime, saved_agent):
    path = services.paths.database
    services.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the saved chat's state, settled
    before, kv_before, saved_counts = (
        file_bytes(path),
        folder_bytes(services.paths.kv_cache),
        counts(services.db, saved_agent.id),
    )

    private = open_private_services(services)
    try:
        private_turns(private, services.agents.get(saved_agent.id), runtime)
        # The agent saw its own edits, in the copy.
        assert SECRET_CORE in private.memory.core.get(saved_agent.id, "human").value
        assert private.memory.archival.count(saved_agent.id) == 2
        assert SECRET_FACT in str(private.db.query("SELECT name FROM graph_entities"))
        assert "Lucia lives in Lisbon" in str(
            private.db.query("SELECT content FROM messages WHERE kind = 'function_result'")
        )
        assert counts(private.db, saved_agent.id) != saved_counts
    finally:
        private.close()

    assert file_bytes(path) == before
    assert folder_bytes(services.paths.kv_cache) == kv_before
    assert counts(services.db, saved_agent.id) == saved_counts
    for name in ("", "-wal", "-shm"):
        raw = Path(f"{path}{name}").read_bytes() if Path(f"{path}{name}").exists() else b""
        for word in (SECRET_MESSAGE, SECRET_CORE, SECRET_ARCHIVE, SECRET_FACT):
            assert word.encode() not in raw


def test_the_saved_chat_goes_on_unchanged_after_a_private_chat(services, runtime, make_agent, saved_agent):
    private = open_private_services(services)
    private_turns(private, services.agents.get(saved_agent.id), runtime)
    private.close()

    agent = make_agent("sam")
    runtime.prompts.clear()
    runtime.enqueue(say("Good to see you."))
    result = agent.send_user_message("Anything new?")
    assert result.replies == ["Good to see you."]
    prompt = "\n".join(m.content for m in runtime.prompts[-1])
    assert "Hi, I'm back" in prompt and "Hello Ana!" in prompt
    for word in (SECRET_MESSAGE, SECRET_CORE, SECRET_ARCHIVE, SECRET_FACT):
        assert word not in prompt
    assert services.memory.core.get(agent.id, "human").value == "Name: Ana"
    assert [m.search_text for m in services.memory.recall.all(agent.id) if m.kind == "user_message"] == [
        "Hi, I'm back",
        "Anything new?",
    ]


def test_a_private_chat_reads_what_was_saved_after_the_last_one(services, runtime, saved_agent):
    first = open_private_services(services)
    first.close()
    services.memory.core.set_value(saved_agent.id, "human", "Name: Ana\nMoved to Porto")
    second = open_private_services(services)
    try:
        assert second.memory.core.get(saved_agent.id, "human").value == "Name: Ana\nMoved to Porto"
        assert second.db.schema_version == services.db.schema_version
    finally:
        second.close()


def test_a_private_chat_refuses_to_write_files_and_to_ingest_documents(services, runtime, saved_agent):
    private = open_private_services(services)
    try:
        agent = open_agent(private, services.agents.get(saved_agent.id), runtime, consent=AllowAll())
        runtime.enqueue(
            call("append_to_text_file", "save", True, filename="notes.txt", content=SECRET_MESSAGE), say("I can't.")
        )
        agent.send_user_message("Write it down")
        result = [m for m in private.memory.recall.all(agent.id) if m.function_name == "append_to_text_file"][-1]
        assert "private chat" in result.content
        assert not services.paths.agent_files(agent.id).exists() or not any(
            services.paths.agent_files(agent.id).rglob("*")
        )
        # The prompt lists the same functions as the saved chat's, so its cached state is reused.
        assert runtime.prompts[-1][0] == runtime.prompts[0][0]
        with pytest.raises(PrivateChatRefusal):
            private.ingestor()
    finally:
        private.close()


def test_the_private_agent_asks_the_runtime_to_keep_nothing_on_disk(services, saved_agent):
    recording = RecordingRuntime()
    private = open_private_services(services)
    try:
        agent = open_agent(private, services.agents.get(saved_agent.id), recording, consent=AllowAll())
        recording.enqueue(say("Hi."))
        agent.send_user_message("Hello")
        assert agent.runtime.warm(agent.static_prefix()) == 0
        agent.runtime.close()
    finally:
        private.close()
    assert recording.persist_seen and not any(recording.persist_seen)
    assert recording.warmed == [] and not recording.closed


def test_the_saved_chat_asks_the_runtime_to_keep_its_prefix(services, make_agent):
    recording = RecordingRuntime()
    agent = make_agent("sam", runtime=recording)
    recording.enqueue(say("Hi."))
    agent.send_user_message("Hello")
    assert recording.persist_seen == [True]


class RecordingRuntime(ScriptedRuntime):
    """Records whether each request allowed the runtime to keep its prompt's state on disk."""

    def __init__(self) -> None:
        super().__init__(context_window=16384)
        self.persist_seen: list[bool] = []
        self.closed = False

    def generate_call(self, request, **kwargs):
        self.persist_seen.append(request.persist)
        return super().generate_call(request, **kwargs)

    def generate_text(self, request, **kwargs):
        self.persist_seen.append(request.persist)
        return super().generate_text(request, **kwargs)

    def close(self) -> None:
        self.closed = True


def test_a_failing_tool_or_recall_logs_where_it_failed_but_not_what_was_said(
    services, runtime, saved_agent, caplog, monkeypatch
):
    tools = services.paths.user_tools
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "diary.py").write_text(
        "def diary(ctx, entry: str) -> str:\n"
        '    """Keep a diary entry.\n\n    Args:\n        entry: The entry.\n    """\n'
        '    raise ValueError(f"cannot file {entry}")\n\nTOOLS = [diary]\n'
    )
    private = open_private_services(services)
    try:
        agent = open_agent(private, services.agents.get(saved_agent.id), runtime, consent=AllowAll())
        assert agent.recall is not None

        def broken_search(*args, **kwargs):
            raise RuntimeError(f"no index for {SECRET_MESSAGE}")

        monkeypatch.setattr(agent.recall, "search", broken_search)
        runtime.enqueue(call("diary", "file it", True, entry=SECRET_MESSAGE), say("I could not file it."))
        with caplog.at_level("DEBUG"):
            agent.send_user_message(f"Dear diary: {SECRET_MESSAGE}")
    finally:
        private.close()
    assert "function diary raised ValueError" in caplog.text and "automatic recall failed" in caplog.text
    assert SECRET_MESSAGE not in caplog.text


def test_deleting_an_agent_in_the_copy_leaves_its_saved_files_alone(services, saved_agent):
    files = services.paths.agent_files(saved_agent.id)
    files.mkdir(parents=True)
    (files / "notes.txt").write_text("kept")
    private = open_private_services(services)
    try:
        private.agents.delete(saved_agent.id)
    finally:
        private.close()
    assert (files / "notes.txt").read_text() == "kept"
    assert services.agents.get(saved_agent.id).name == "sam"


def test_a_private_chat_on_an_encrypted_store_reads_its_memories_and_leaves_the_file_as_it_was(tmp_path):
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.storage.encryption import encrypt_store

    paths = Paths(tmp_path / "home")
    services = open_services(paths, embedder=HashingEmbedder())
    record = services.create_agent("sam", human="Name: Ana")
    services.memory.archival.insert(record.id, "Ana's sister Lucia lives in Lisbon.")
    services.close()
    encrypt_store(paths.database, "secret")
    services = open_services(paths, embedder=HashingEmbedder(), key="secret")
    try:
        before = file_bytes(paths.database)
        private = open_private_services(services)
        try:
            copy = private.agents.get_by_name("sam")
            assert private.memory.core.get(copy.id, "human").value == "Name: Ana"
            assert private.memory.archival.count(copy.id) == 1
            runtime = ScriptedRuntime()
            agent = open_agent(private, copy, runtime, consent=AllowAll())
            runtime.enqueue(say("Noted."))
            agent.send_user_message(f"Keep this between us: {SECRET_MESSAGE}")
        finally:
            private.close()
        assert file_bytes(paths.database) == before
    finally:
        services.close()
