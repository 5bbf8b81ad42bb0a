"""Memory as a folder: readable Markdown (a file per core block with its front matter, passages by
document or month, the graph as notes, Memory history as a log, a README), stable names, and a
round trip that loses nothing, from a plain or an encrypted store, into an empty home too."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdesk.app.operations import export_memory_folder, import_memory_folder
from memdesk.app.services import open_services
from memdesk.core.base.errors import MemoryFolderError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage.encryption import encrypt_store
from memdesk.core.transfer.folder.markdown import read_front_matter
from tests.agent.test_agent_file_round_trip import lived, snapshot  # noqa: F401 - the fixture, shared
from tests.history.conftest import imported


@pytest.fixture
def remembered(services, lived, chatgpt_zip, run_import):  # noqa: F811
    """An agent with every kind of memory: blocks, a conversation with edits and an eviction,
    passages from a document and its own, a graph with history, and an imported ChatGPT history."""
    run_import(chatgpt_zip, agent=lived.id)
    return lived


def copy_of(services, home: Path, key: str | None = None):
    """The store of ``services`` copied into another home (encrypted with ``key``), opened."""
    paths = Paths(home).ensure()
    services.db.execute("VACUUM INTO ?", (str(paths.database),))
    if key is not None:
        encrypt_store(paths.database, key)
    return open_services(paths, key=key, embedder=HashingEmbedder(), clock=services.clock)


def test_the_folder_is_readable_markdown(services, remembered, tmp_path):
    folder = tmp_path / "memory"
    export_memory_folder(services, [remembered.id], folder)
    agent = folder / "sam"
    fields, body = read_front_matter((agent / "core" / "projects.md").read_text(encoding="utf-8"))
    assert fields == {"label": "projects", "limit": 400, "description": "What Ada is building", "read_only": True}
    assert body == "Balcony garden"
    assert "Tomatoes need sun" in (agent / "archival" / "garden.md").read_text(encoding="utf-8")
    assert any(p.name.startswith("notes-") for p in (agent / "archival").iterdir())
    assert "Ada grows tomatoes on her balcony." in "".join(
        p.read_text(encoding="utf-8") for p in (agent / "archival").iterdir()
    )
    assert "Hi, I like tea" in "".join(p.read_text(encoding="utf-8") for p in (agent / "conversation").iterdir())
    assert (agent / "imported" / "chatgpt" / "2024-05-01-dinner-ideas.md").is_file()
    assert "lives in [[Paris]]" in "".join(p.read_text(encoding="utf-8") for p in (agent / "graph").iterdir())
    history = (agent / "history.md").read_text(encoding="utf-8")
    assert "reverted block persona" in history and "I am Sam, a patient gardener." in history
    assert "core/<label>.md" in (folder / "README.md").read_text(encoding="utf-8")


def test_exporting_again_writes_the_same_files(services, remembered, tmp_path):
    folder = tmp_path / "memory"
    export_memory_folder(services, [remembered.id], folder)
    first = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    export_memory_folder(services, [remembered.id], folder)
    second = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts}
    changed = {p.name for p in first if first[p] != second.get(p)}
    assert changed <= {"agents.af"}  # only the export's own time inside the data file
    assert (folder / ".git" / "HEAD").is_file()


@pytest.mark.parametrize("key", [None, "correct horse"], ids=["plain", "encrypted"])
def test_a_round_trip_into_an_empty_home_loses_nothing(services, remembered, tmp_path, key):
    source = copy_of(services, tmp_path / "source-home", key)
    try:
        folder = tmp_path / "memory"
        export_memory_folder(source, [remembered.id], folder)
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert ("plain text" in readme) == (key is not None)
        empty = open_services(Paths(tmp_path / "empty-home"), embedder=HashingEmbedder(), clock=services.clock)
        try:
            summary = import_memory_folder(empty, folder)
            copy = summary.agents[0]
            assert copy.name == "sam"
            before, after = snapshot(source, remembered.id), snapshot(empty, copy.agent_id)
            for part in before:
                assert after[part] == before[part], part
            assert imported(empty, copy.agent_id) == imported(source, remembered.id)
            assert empty.memory.recall.search_text(copy.agent_id, "stroganoff").hits
        finally:
            empty.close()
    finally:
        source.close()


def test_edits_made_in_the_folder_come_back(services, remembered, tmp_path):
    folder = tmp_path / "memory"
    export_memory_folder(services, [remembered.id], folder)
    block = folder / "sam" / "core" / "human.md"
    fields, body = read_front_matter(block.read_text(encoding="utf-8"))
    block.write_text(block.read_text(encoding="utf-8").replace(body, body + "\nPrefers mornings."), encoding="utf-8")
    notes = next((folder / "sam" / "archival").glob("notes-*.md"))
    notes.write_text(notes.read_text(encoding="utf-8").replace("on her balcony", "on her roof"), encoding="utf-8")
    (folder / "sam" / "core" / "garden.md").write_text("Tomatoes, basil and a fig tree.", encoding="utf-8")
    copy = import_memory_folder(services, folder).agents[0]
    core = services.memory.core
    assert core.get(copy.agent_id, "human").value == body + "\nPrefers mornings."
    assert core.get(copy.agent_id, "garden").value == "Tomatoes, basil and a fig tree."  # a block file added
    texts = [p.text for _id, p in services.memory.archival.stored(copy.agent_id, limit=100)]
    assert "Ada grows tomatoes on her roof." in texts


def test_fact_lines_changed_or_added_in_the_folder_become_the_graphs_facts(services, remembered, tmp_path):
    folder = tmp_path / "memory"
    export_memory_folder(services, [remembered.id], folder)
    note = folder / "sam" / "graph" / "addie.md"
    text = note.read_text(encoding="utf-8")
    chess = next(line for line in text.splitlines() if line.startswith("- likes [[chess]]"))
    paris = next(line for line in text.splitlines() if line.startswith("- lives in [[Paris]]"))
    text = text.replace(chess, "- enjoys [[chess]] (since 2023-01-15)")  # a correction of that fact
    text = text.replace(paris, "- lives in [[Berlin]]")  # she moved (today: no date given)
    assert 'name: "Addie"' in text
    text = text.replace('name: "Addie"', 'name: "Ada Lovelace"')  # a rename there is not read back
    note.write_text(text + "- works at [[Acme]]\n", encoding="utf-8")  # a fact the graph did not have
    untouched = (folder / "sam" / "graph").iterdir()
    assert [p.name for p in untouched] == ["addie.md"]

    copy = import_memory_folder(services, folder).agents[0]
    graph = services.memory.graph
    current = {
        (f.relation, f.object, f"{f.valid_from:%Y-%m-%d}" if f.relation == "enjoys" else "")
        for f in graph.all_facts(copy.agent_id)
        if f.current and f.subject == "Addie"
    }
    assert current == {
        ("grows", "tomatoes", ""),
        ("enjoys", "chess", "2023-01-15"),
        ("lives in", "Berlin", ""),
        ("works at", "Acme", ""),
    }
    assert graph.find(copy.agent_id, "Ada Lovelace") is None
    paris_now = [f for f in graph.all_facts(copy.agent_id) if f.object == "Paris" and f.relation == "lives in"]
    assert paris_now and all(not f.current for f in paris_now)  # closed by the newer fact, kept as the past
    assert not any(f.relation == "likes" and f.object == "chess" for f in graph.all_facts(copy.agent_id))

    # Each through the graph's own write path, the person's change in Memory history; the lines
    # left as they were wrote nothing (the copy's history is the original's and these).
    history = services.memory.core.history
    carried = len(history.for_agent(remembered.id, kind="graph_fact", limit=1000))
    changes = history.for_agent(copy.agent_id, kind="graph_fact", limit=1000)
    new = changes[: len(changes) - carried]
    assert {c.source for c in new} == {"user"}
    assert sorted((c.action, c.before, c.after) for c in new) == [
        ("create", None, "Addie lives in Berlin"),  # one change with the closing of Paris
        ("create", None, "Addie works at Acme"),
        ("update", "Addie likes chess", "Addie enjoys chess"),
    ]

    again = tmp_path / "again"
    export_memory_folder(services, [copy.agent_id], again)
    lines = (again / "sam-2" / "graph" / "addie.md").read_text(encoding="utf-8").splitlines()
    assert "- enjoys [[chess]] (since 2023-01-15)" in lines
    for written_again in ("- lives in [[Berlin]] (since ", "- works at [[Acme]] (since ", "- ~~lives in [[Paris]]~~"):
        assert any(line.startswith(written_again) for line in lines), written_again


def test_a_fact_line_the_graph_cannot_take_is_reported_and_the_rest_comes_back(services, remembered, tmp_path):
    folder = tmp_path / "memory"
    export_memory_folder(services, [remembered.id], folder)
    note = folder / "sam" / "graph" / "addie.md"
    bad = ["- likes [[jazz]] (since last spring)", "- knows [[Addie]]"]
    note.write_text(note.read_text(encoding="utf-8") + "\n".join([*bad, "- likes [[cats]]"]) + "\n", encoding="utf-8")
    summary = import_memory_folder(services, folder)
    copy = summary.agents[0]
    facts = {(f.relation, f.object) for f in services.memory.graph.all_facts(copy.agent_id) if f.current}
    assert ("likes", "cats") in facts and ("likes", "jazz") not in facts
    assert any("'last spring' is not a date" in fix for fix in summary.fixups)
    assert any("- knows [[Addie]]" in fix and "different entities" in fix for fix in summary.fixups)


def test_a_folder_that_is_not_a_memdesk_export_is_refused(services, remembered, tmp_path):
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(MemoryFolderError, match="not empty"):
        export_memory_folder(services, [remembered.id], other)
    with pytest.raises(MemoryFolderError, match="not a MemDesk memory folder"):
        import_memory_folder(services, other)
