"""File > Import history… in the window (issue 31), driven as a person would: an export (chosen, or
dropped on the window) is previewed, the choice by title or date is counted before anything is
written, the import runs as background work with its progress while the window answers a
message, Stop keeps what came in and Resume goes on without adding anything twice."""

from __future__ import annotations

import json

from PySide6.QtCore import QDate, QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from memdesk.app.operations import open_retention
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.core.transfer.history.importer import HistoryImport
from memdesk.ui.dialogs.history_import import FINISHED, IMPORTING, PAUSED_PAGE, PREVIEW
from tests.history.conftest import DATA, zipped
from tests.history.test_damaged_exports import chat


def click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def imported_count(services, window) -> int:
    return services.memory.recall.imported_count(window.state.agent_id)


def previewed(qtbot, window, path):
    dialog = window.history_imports.offer(path)
    qtbot.waitUntil(lambda: dialog.stage == PREVIEW, timeout=20_000)
    return dialog


def test_an_export_is_previewed_and_chosen_by_title_or_date_before_anything_is_written(
    make_window, roomy_runtime, qtbot, services, tmp_path
):
    window = make_window(roomy_runtime)
    export = zipped(tmp_path, (DATA / "chatgpt_conversations.json").read_text(encoding="utf-8"))
    dialog = previewed(qtbot, window, export)
    page = dialog.preview_page
    assert page.summary.text() == "A ChatGPT export: 2 conversations, 9 messages, 1 May 2024 to 10 Jun 2024."
    titles = [page.titles.item(i).text() for i in range(page.titles.count())]
    assert titles[0].endswith("Moving day  (2 messages)") and titles[1].endswith("Dinner ideas  (7 messages)")
    skipped = [page.skipped.item(i).text() for i in range(page.skipped.count())]
    assert any("image" in line for line in skipped) and any("tool" in line for line in skipped)
    assert dialog.import_button.text() == "&Import 2 conversations"

    qtbot.keyClicks(page.title_filter, "moving")  # by title, any case
    page.recount()
    assert page.chosen.text().startswith("Chosen: 1 conversations, 2 messages")
    assert dialog.import_button.text() == "&Import 1 conversations"
    page.title_filter.clear()
    page.until_on.setChecked(True)  # by date: until the end of May 2024
    page.until.setDate(QDate(2024, 5, 31))
    page.recount()
    assert [page.titles.item(i).text().split("  ")[1] for i in range(page.titles.count())] == ["Dinner ideas"]
    page.until.setDate(QDate(2024, 4, 30))
    page.recount()
    assert not dialog.import_button.isEnabled()  # nothing chosen, nothing to import
    assert imported_count(services, window) == 0  # a preview writes nothing
    dialog.close()


def test_a_file_that_is_no_export_is_said_so_in_the_dialog(make_window, roomy_runtime, qtbot, tmp_path):
    window = make_window(roomy_runtime)
    other = tmp_path / "settings.json"
    other.write_text(json.dumps([{"theme": "dark"}]))
    dialog = window.history_imports.offer(other)
    qtbot.waitUntil(lambda: "not a ChatGPT, Claude or Open WebUI export" in dialog.reading.text(), timeout=20_000)
    assert dialog.cancel_reading.text() == "Close" and not window.message_bar.isVisible()
    dialog.close()


def test_the_import_runs_in_the_background_stops_and_resumes_and_the_window_answers_meanwhile(
    make_window, qtbot, services, tmp_path, send
):
    window = make_window(ScriptedRuntime([say("I am here.")] * 5, context_window=32768))
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([chat(n, words=20) for n in range(3000)]), encoding="utf-8")
    dialog = previewed(qtbot, window, export)
    assert dialog.preview_page.chosen.text().startswith("Chosen: 3,000 conversations, 6,000 messages")
    click(qtbot, dialog.import_button)
    qtbot.waitUntil(
        lambda: dialog.stage == IMPORTING and "Imported so far" in dialog.progress_text.text(), timeout=30_000
    )
    assert "conversations" in dialog.progress_text.text() and dialog.progress_bar.maximum() == 3000

    send(window, "Hello, are you there?", timeout=60_000)  # answered while the import runs
    assert "I am here." in window.chat.transcript.toPlainText()
    click(qtbot, dialog.stop_button)
    qtbot.waitUntil(lambda: dialog.stage == PAUSED_PAGE, timeout=30_000)
    row = services.db.query_one("SELECT status, conversations_done FROM history_imports")
    stopped_at = imported_count(services, window)
    assert row[0] == "paused" and 0 < stopped_at < 6000 and "Stopped after" in dialog.paused_text.text()
    assert "question 1 " not in window.chat.transcript.toPlainText()  # never in the chat's transcript

    click(qtbot, dialog.resume_button)
    qtbot.waitUntil(lambda: dialog.stage == FINISHED, timeout=120_000)
    assert imported_count(services, window) == 6000  # went on from where it stopped, nothing twice
    assert services.db.scalar("SELECT status FROM history_imports") == "done"
    assert (
        "Imported" in dialog.finished_text.text() and "Memory > Imported conversations" in dialog.finished_text.text()
    )
    dialog.close()


def test_a_dropped_export_opens_the_import_and_other_files_still_go_to_documents(
    make_window, roomy_runtime, qtbot, tmp_path
):
    window = make_window(roomy_runtime)
    added = []
    window.drops.add_documents = added.append
    export = zipped(tmp_path, (DATA / "claude_conversations.json").read_text(encoding="utf-8"), name="data.zip")
    note = tmp_path / "note.json"
    note.write_text(json.dumps({"tomatoes": "need sun"}))  # JSON, but no export: a document
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(export)), QUrl.fromLocalFile(str(note))])
    enter = QDragEnterEvent(
        QPoint(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(window, enter)
    drop = QDropEvent(
        QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(window, drop)
    dialog = window.history_imports.dialog
    assert dialog is not None and dialog.path == export, window.hub.messages
    qtbot.waitUntil(lambda: dialog.stage == PREVIEW, timeout=20_000)
    assert dialog.preview_page.summary.text().startswith("A Claude export:")
    assert added == [[str(note)]]
    dialog.close()


def test_the_preview_warns_when_retention_would_forget_what_comes_in_and_offers_only_recent_days(
    make_window, roomy_runtime, qtbot, services, tmp_path
):
    window = make_window(roomy_runtime)
    open_retention(services).set_days(window.state.agent_id, 30)
    export = zipped(tmp_path, (DATA / "chatgpt_conversations.json").read_text(encoding="utf-8"))
    page = previewed(qtbot, window, export).preview_page
    warning = page.retention.text()
    assert page.retention.isVisible() and "after 30 days" in warning and "9 of the 9 messages" in warning
    assert "count their 30 days from the day they are imported" in warning
    assert page.retention_only.text() == "Import only the last 30 days"
    click(qtbot, page.retention_only)
    assert page.since_on.isChecked() and page.preview.tally.chosen_conversations == 0  # both are older
    window.history_imports.dialog.close()


def test_an_import_stopped_earlier_is_resumed_from_the_imported_conversations_in_its_own_dialog(
    make_window, roomy_runtime, qtbot, services, tmp_path
):
    window = make_window(roomy_runtime)
    agent_id = window.state.agent_id
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([chat(n) for n in range(30)]), encoding="utf-8")
    job = HistoryImport.start(services.memory, agent_id, export)
    steps = job.steps()
    for _ in range(10):
        next(steps)
    steps.close()
    job.pause()  # stopped in an earlier session: it waits for the person
    assert 0 < imported_count(services, window) < 60

    window.history_imports.resume(job.id)  # Resume in Memory > Imported conversations
    qtbot.waitUntil(lambda: window.history_imports.dialog is not None, timeout=10_000)
    dialog = window.history_imports.dialog
    assert dialog.path == export and dialog.import_id == job.id  # the import's own file, read off the GUI thread
    qtbot.waitUntil(lambda: dialog.stage == FINISHED, timeout=60_000)
    assert imported_count(services, window) == 60  # went on from where it stopped, nothing twice
    dialog.close()
