"""A document row an agent file brings names a path the file's author chose: Re-ingest never reads
it from there (a file or a folder anywhere on this machine) until the user picks the file."""

from __future__ import annotations

import hashlib

import pytest

from memdesk.core.base.errors import DocumentError
from memdesk.core.documents import catalog
from memdesk.core.storage import migrations, open_database
from memdesk.core.storage.migrations import MIGRATIONS
from memdesk.core.transfer.agentfile import EXTENSION_KEY, export_agent_file, import_agent_file

REFUSED = "its path came with an imported agent file, so it is not read from there (pick the file to read it again)"


def planted_agent_file(services, tmp_path, paths, *, content_hash: str | None = None) -> dict:
    """An export of an agent holding one harmless document, its row copied to point at ``paths``
    under the same harmless title (what a hostile agent file would carry)."""
    donor = services.create_agent("donor")
    recipes = tmp_path / "recipes.txt"
    recipes.write_text("Steep green tea for two minutes, never with boiling water.", encoding="utf-8")
    services.ingestor().ingest([recipes], donor.id)
    document = export_agent_file(services, [donor.id])
    services.agents.delete(donor.id)
    mine = next(iter(document[EXTENSION_KEY]["agents"].values()))
    row = mine["documents"][0]
    mine["documents"] = [
        dict(
            row,
            id=row["id"] if n == 0 else f"planted-{n}",
            path=str(path),
            title="Tea recipes",
            **({"content_hash": content_hash} if content_hash else {}),
        )
        for n, path in enumerate(paths)
    ]
    return document


@pytest.fixture
def outside(tmp_path):
    """A file and a folder of the user's that no agent file should reach."""
    folder = tmp_path / "private"
    (folder / "diary").mkdir(parents=True)
    secret = folder / "safe.txt"
    secret.write_text("The safe's combination is 4711.", encoding="utf-8")
    (folder / "diary" / "monday.txt").write_text("Dear diary, the spare key is in the boot.", encoding="utf-8")
    return secret, folder / "diary"


def _leaked(services) -> int:
    return services.db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%4711%' OR text LIKE '%spare key%'")


def test_reingest_reads_nothing_from_an_imported_path_until_the_user_picks_the_file(services, tmp_path, outside):
    secret, diary = outside
    copy = import_agent_file(services, planted_agent_file(services, tmp_path, [secret, diary])).agents[0].agent_id
    rows = catalog.list_documents(services.db, copy)
    assert [(row.title, row.from_agent_file) for row in rows] == [("Tea recipes", True), ("Tea recipes", True)]

    plan = catalog.prepare_reingest(services.db, [row.id for row in rows])
    report = services.ingestor().ingest(plan.paths, copy)  # what the window's worker runs next
    assert plan.paths == [] and [(f.path, f.reason) for f in plan.refused] == [
        (str(secret), REFUSED),
        (str(diary), REFUSED),
    ]
    assert report.added == report.replaced == 0 and _leaked(services) == 0
    assert [row.error for row in catalog.list_documents(services.db, copy)] == [
        REFUSED,
        REFUSED,
    ]  # the window shows why

    with pytest.raises(DocumentError, match="is a folder"):
        catalog.pick_file(services.db, rows[1].id, diary)
    picked = tmp_path / "my-recipes.txt"
    picked.write_text("Oolong wants ninety degrees and three minutes.", encoding="utf-8")
    path = catalog.pick_file(services.db, rows[0].id, picked)
    report = services.ingestor().ingest([path], copy)
    assert report.chunks == 1 and not report.failures and _leaked(services) == 0
    [row, planted] = catalog.list_documents(services.db, copy)  # the same row, now naming the picked file
    assert (row.id, row.path, row.from_agent_file, row.error, planted.from_agent_file) == (
        rows[0].id,
        str(picked),
        False,
        None,
        True,
    )
    texts = [p[0] for p in services.db.query("SELECT text FROM passages WHERE document_id = ?", (row.id,))]
    assert texts == ["Oolong wants ninety degrees and three minutes."]
    assert catalog.prepare_reingest(services.db, [row.id]).paths == [str(picked)]  # from now on, a plain re-ingest


def test_ingesting_the_path_explicitly_counts_as_picking_it(services, tmp_path, outside):
    secret, _ = outside
    # The planted row even claims the file's own content hash: its passages are still the file's word.
    claimed = hashlib.sha256(secret.read_bytes()).hexdigest()
    copy = (
        import_agent_file(services, planted_agent_file(services, tmp_path, [secret], content_hash=claimed))
        .agents[0]
        .agent_id
    )
    [row] = catalog.list_documents(services.db, copy)
    report = services.ingestor().ingest([secret], copy)  # `memdesk ingest PATH`: the user named the path
    assert report.replaced == 1 and report.unchanged == 0
    [after] = catalog.list_documents(services.db, copy)
    assert after.id == row.id and not after.from_agent_file
    texts = [p[0] for p in services.db.query("SELECT text FROM passages WHERE document_id = ?", (row.id,))]
    assert texts == ["The safe's combination is 4711."]
    assert catalog.prepare_reingest(services.db, [row.id]).paths == [str(secret)]


def test_a_picked_file_already_listed_is_refused_with_what_to_do(services, tmp_path, outside):
    secret, _ = outside
    copy = import_agent_file(services, planted_agent_file(services, tmp_path, [secret])).agents[0].agent_id
    mine = tmp_path / "mine.txt"
    mine.write_text("Already added by the user.", encoding="utf-8")
    services.ingestor().ingest([mine], copy)
    planted = next(row for row in catalog.list_documents(services.db, copy) if row.from_agent_file)
    with pytest.raises(DocumentError, match="already in the list as 'mine.txt'"):
        catalog.pick_file(services.db, planted.id, mine)


def test_a_document_path_that_became_a_folder_is_not_walked(services, tmp_path):
    agent = services.create_agent("reader")
    note = tmp_path / "note.txt"
    note.write_text("A plain note.", encoding="utf-8")
    services.ingestor().ingest([note], agent.id)
    [row] = catalog.list_documents(services.db, agent.id)
    note.unlink()
    note.mkdir()
    (note / "inside.txt").write_text("Never asked for.", encoding="utf-8")
    plan = catalog.prepare_reingest(services.db, [row.id])
    assert plan.paths == [] and "is a folder now" in plan.refused[0].reason


def test_the_upgrade_marks_rows_the_user_did_not_read_last(tmp_path):
    db = open_database(tmp_path / "store.sqlite3", migrate=False)
    db.migrate(MIGRATIONS[: MIGRATIONS.index(migrations.m011_imported_document_paths.migrate)])
    now = "2026-01-01T00:00:00+00:00"
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', ?, '')", (now,))
    for n, path in enumerate(
        ["/home/me/read.txt", "/etc/imported", "/home/me/failed.txt", "/home/me/reread.txt"], start=1
    ):
        db.execute(
            "INSERT INTO documents(id, agent_id, path, title, content_hash, size_bytes, created_at, updated_at)"
            " VALUES (?, 1, ?, 't', '', 0, ?, ?)",
            (n, path, now, now),
        )
    for document_id, source in [
        (1, "user"),
        (2, "import"),
        (4, "import"),
        (4, "user"),
    ]:  # 3: never read (no change recorded)
        db.execute(
            "INSERT INTO memory_history(agent_id, target_kind, target_id, action, source, created_at)"
            " VALUES (1, 'document', ?, 'create', ?, ?)",
            (document_id, source, now),
        )
    db.migrate(MIGRATIONS)
    assert db.query("SELECT path, path_imported FROM documents ORDER BY id") == [
        ("/home/me/read.txt", 0),
        ("/etc/imported", 1),
        ("/home/me/failed.txt", 1),
        ("/home/me/reread.txt", 0),
    ]
    db.close()
