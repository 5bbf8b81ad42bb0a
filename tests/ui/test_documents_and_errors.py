"""Dropping files and folders on the window, ingestion progress and failures; crash capture."""

from __future__ import annotations

import sys
import threading

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from desktop.ui.qt_errors import CRASH_LOG, CrashCapture, ErrorHub


def drop(widget, paths) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    # As in a real drag: Qt delivers a drop only to the widget that accepted the drag's entry.
    enter = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, event)


def test_dropped_folder_is_ingested_with_progress_and_failures(make_window, roomy_runtime, qtbot, tmp_path, services):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "garden.md").write_text("# Garden\n\n" + "Tomatoes need full sun and steady water. " * 200)
    (folder / "recipes.txt").write_text("Pancakes: flour, milk, eggs.")
    broken = tmp_path / "broken.txt"
    broken.write_bytes(b"\x89PNG\x00\x00binary junk")
    window = make_window(roomy_runtime)
    drop(window, [folder, broken])  # anywhere on the window
    qtbot.waitUntil(lambda: window.documents.table.rowCount() == 3 and all(
        window.documents.table.item(r, 2).text() in ("done",) or window.documents.table.item(r, 2).text().startswith("failed")
        for r in range(3)), timeout=20_000)
    statuses = {row.title: (row.status, row.error) for row in window.documents.rows}
    assert statuses["broken.txt"][0] == "failed" and "binary" in statuses["broken.txt"][1]
    done = [row for row in window.documents.rows if row.status == "done"]
    assert len(done) == 2 and all(row.embedded == row.chunk_count > 0 for row in done)
    assert window.documents.table.cellWidget(0, 1).value() == window.documents.table.cellWidget(0, 1).maximum()
    hits = services.memory.archival.search(window.agent_id, "tomatoes sun").hits
    assert hits and hits[0].passage.citation.document is not None  # cited back to its document
    window.documents.table.selectRow(0)
    window.documents.on_remove_clicked()
    assert window.documents.table.rowCount() == 2


def test_drop_zone_accepts_files_and_typing_continues(make_window, roomy_runtime, qtbot, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("Sentence about memory and documents. " * 20000)
    window = make_window(roomy_runtime)
    drop(window.documents.drop_zone, [big])
    qtbot.keyClicks(window.chat.compose, "still typing")  # the GUI thread is free while ingesting
    assert window.chat.compose.toPlainText() == "still typing"
    qtbot.waitUntil(lambda: any(r.status == "done" for r in window.documents.rows), timeout=60_000)


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
