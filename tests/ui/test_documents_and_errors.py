"""Dropping files and folders on the window, ingestion progress and failures; crash capture."""

from __future__ import annotations

import sys
import threading

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from memdesk.ui.common.errors import CRASH_LOG, CrashCapture, ErrorHub


def drop(widget, paths) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    # As in a real drag: Qt delivers a drop only to the widget that accepted the drag's entry.
    enter = QDragEnterEvent(
        QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, event)


def settled(window, rows: int) -> bool:
    panel = window.documents
    return (
        panel.batches == 0
        and panel.table.rowCount() == rows
        and all(
            panel.table.item(r, 2).text() == "done" or panel.table.item(r, 2).text().startswith("failed")
            for r in range(rows)
        )
    )


def test_dropped_folder_is_ingested_with_progress_and_failures(make_window, roomy_runtime, qtbot, tmp_path, services):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "garden.md").write_text("# Garden\n\n" + "Tomatoes need full sun and steady water. " * 400)
    (folder / "recipes.txt").write_text("Pancakes: flour, milk, eggs.")
    (folder / "broken.txt").write_bytes(b"\x89PNG\x00\x00binary junk")
    missing = tmp_path / "moved-away.txt"
    window = make_window(roomy_runtime)
    events = []
    window.ingester.progress.connect(events.append)
    drop(window, [folder, missing])  # anywhere on the window
    qtbot.waitUntil(lambda: settled(window, 4), timeout=20_000)
    assert {e.phase for e in events} >= {"reading", "embedding", "done"}
    assert any(e.phase == "reading" and e.current_file and e.current_file.endswith("garden.md") for e in events)
    statuses = {row.title: (row.status, row.error) for row in window.documents.rows}
    assert statuses["broken.txt"][0] == "failed" and "binary" in statuses["broken.txt"][1]
    done = [row for row in window.documents.rows if row.status == "done"]
    assert len(done) == 2 and all(row.embedded == row.chunk_count > 0 for row in done)
    # A dropped path that does not exist has no document row, yet its reason is shown.
    assert [f.path for f in window.documents.unlisted] == [str(missing)]
    assert "no such file" in window.documents.table.item(3, 2).text()
    garden = next(i for i, row in enumerate(window.documents.rows) if row.title == "Garden")
    bar = window.documents.table.cellWidget(garden, 1)
    assert bar.value() == bar.maximum() > 1
    assert "2 failed" in window.documents.summary.text()
    hits = services.memory.archival.search(window.state.agent_id, "tomatoes sun").hits
    assert hits and hits[0].passage.citation.document == "Garden"  # cited back to its document

    window.documents.table.selectRow(garden)
    window.documents.on_remove_clicked()
    qtbot.waitUntil(lambda: len(window.documents.rows) == 2 and not window.documents.removing, timeout=10_000)
    assert "Garden" not in {row.title for row in window.documents.rows}
    assert not services.db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%Tomatoes%'")
    assert services.db.scalar("SELECT COUNT(*) FROM passages_vec") == services.db.scalar(
        "SELECT COUNT(*) FROM passages WHERE embedded = 1"
    )
    assert not any(
        "Tomatoes" in hit.passage.text
        for hit in services.memory.archival.search(window.state.agent_id, "tomatoes sun").hits
    )


def test_reingest_reads_an_unchanged_file_again_and_replaces_its_passages(
    make_window, roomy_runtime, qtbot, tmp_path, services, wait_for_signal
):
    note = tmp_path / "note.txt"
    note.write_text("The spare key is under the blue flower pot.")
    window = make_window(roomy_runtime)
    window.documents.add_paths([str(note)])
    qtbot.waitUntil(lambda: settled(window, 1), timeout=20_000)
    before = services.db.query("SELECT id FROM passages")
    window.documents.table.selectRow(0)
    with wait_for_signal(window.ingester.finished, timeout=20_000) as finished:
        window.documents.on_reingest_clicked()
    report = finished.args[0]
    # Read again although its content is the same, and replaced, not duplicated.
    assert report.unchanged == 0 and report.chunks == len(before) > 0 and not report.failures
    qtbot.waitUntil(lambda: settled(window, 1), timeout=20_000)
    assert services.db.scalar("SELECT COUNT(*) FROM passages") == len(before)
    # Dropping the same unchanged file again is skipped by its content hash.
    with wait_for_signal(window.ingester.finished, timeout=20_000) as finished:
        window.documents.add_paths([str(note)])
    assert finished.args[0].unchanged == 1


def test_drop_zone_accepts_files_and_typing_continues(make_window, roomy_runtime, qtbot, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("Sentence about memory and documents. " * 20000)
    window = make_window(roomy_runtime)
    drop(window.documents.drop_zone, [big])
    qtbot.keyClicks(window.chat.compose, "still typing")  # the GUI thread is free while ingesting
    assert window.chat.compose.toPlainText() == "still typing"
    qtbot.waitUntil(lambda: any(r.status == "done" for r in window.documents.rows), timeout=60_000)


def test_unembedded_chunks_left_by_a_killed_app_are_embedded_on_the_next_start(
    make_window, roomy_runtime, qtbot, tmp_path, services
):
    from memdesk.core.base.clock import SystemClock
    from memdesk.core.documents.ingest import Ingestor

    note = tmp_path / "left.txt"
    note.write_text("Chunks read before the app was killed. " * 300)
    agent = services.create_agent("Companion")
    # Stopped once every file is read: what a kill between the two phases leaves in the store.
    read = []
    Ingestor(services.db, services.memory.archival, SystemClock()).ingest(
        [note],
        agent.id,
        lambda e: read.append(e.phase == "reading" and e.current_file is None),
        cancel=lambda: any(read),
    )
    assert services.db.scalar("SELECT COUNT(*) FROM passages WHERE embedded = 0") > 1
    window = make_window(roomy_runtime)
    qtbot.waitUntil(lambda: [r.status for r in window.documents.rows] == ["done"], timeout=20_000)
    assert window.documents.rows[0].embedded == window.documents.rows[0].chunk_count > 1


def test_crash_capture_keeps_and_offers_the_previous_log(tmp_path, qtbot):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / CRASH_LOG).write_text("Fatal Python error: Segmentation fault\n")
    hub = ErrorHub()
    capture = CrashCapture(logs, hub).install()
    try:
        assert capture.previous is not None and "Segmentation fault" in capture.previous.read_text()
        try:
            raise RuntimeError("boom in a slot")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())
        thread = threading.Thread(target=lambda: 1 / 0, name="helper")
        thread.start()
        thread.join()
        assert len(hub.messages) == 2 and all("Something went wrong" in m for m in hub.messages)
        text = (logs / CRASH_LOG).read_text()
        assert "boom in a slot" in text and "ZeroDivisionError" in text and "thread helper" in text
    finally:
        capture.uninstall()
    assert (logs / CRASH_LOG).exists()  # not empty: offered on the next start


def test_reingest_of_a_document_from_an_agent_file_reads_only_the_file_the_user_picks(
    make_window, roomy_runtime, qtbot, tmp_path, services, wait_for_signal, monkeypatch
):
    from PySide6.QtWidgets import QFileDialog

    from memdesk.core.transfer.agentfile import import_agent_file
    from tests.documents.test_imported_document_paths import REFUSED, planted_agent_file

    secret = tmp_path / "private" / "safe.txt"
    secret.parent.mkdir()
    secret.write_text("The safe's combination is 4711.")
    summary = import_agent_file(services, planted_agent_file(services, tmp_path, [secret]))
    services.settings_store.set("last_agent", summary.agents[0].name)
    window = make_window(roomy_runtime)
    qtbot.waitUntil(lambda: len(window.documents.rows) == 1, timeout=10_000)
    assert "from an agent file" in window.documents.table.item(0, 2).text()
    # Asked for the file, the user cancels: nothing is read, nothing is requested.
    captions = []
    monkeypatch.setattr(
        QFileDialog, "getOpenFileName", lambda parent, caption, *a, **k: (captions.append(caption), ("", ""))[1]
    )
    window.documents.table.selectRow(0)
    window.documents.on_reingest_clicked()
    assert (
        captions == ["Pick the file for 'Tea recipes' (it came with an imported agent file)"]
        and window.documents.batches == 0
    )
    # The worker refuses such a row whoever asks, and the row says why.
    with wait_for_signal(window.ingester.finished, timeout=20_000) as finished:
        window.documents.reingest_requested.emit(window.state.agent_id, [window.documents.rows[0].id])
    assert [f.reason for f in finished.args[0].failures] == [REFUSED]
    assert not services.db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%4711%'")
    # The user picks a file: it is read into that document.
    picked = tmp_path / "tea.txt"
    picked.write_text("Oolong wants ninety degrees and three minutes.")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(picked), ""))
    window.documents.table.selectRow(0)
    with wait_for_signal(window.ingester.finished, timeout=20_000) as finished:
        window.documents.on_reingest_clicked()
    assert finished.args[0].chunks == 1 and not finished.args[0].failures
    qtbot.waitUntil(lambda: settled(window, 1), timeout=20_000)
    [row] = window.documents.rows
    assert (row.path, row.from_agent_file) == (str(picked), False)
    assert not services.db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%4711%'")
