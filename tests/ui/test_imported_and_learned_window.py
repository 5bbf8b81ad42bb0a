"""What was imported, shown apart from the chat, and what MemDesk learned from it, reviewed in the
window (issue 31): imported conversations are listed by source, title and date and open read-only,
never in the transcript; "What MemDesk learned from your ChatGPT history" lists proposals with
their sources, and accepting one (as proposed or edited) writes core memory through Memory
history, where undo takes it back; rejecting one keeps it out. File > Export… writes memory as a
readable folder, and an encrypted store's export says the folder is plain text first."""

from __future__ import annotations

from PySide6.QtCore import Qt

from memdesk.core.transfer.history.importer import HistoryImport
from memdesk.core.transfer.history.learning import REJECTED, Learning
from tests.history.conftest import DATA, zipped


def click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def import_chatgpt(services, agent_id: int, tmp_path) -> None:
    export = zipped(tmp_path, (DATA / "chatgpt_conversations.json").read_text(encoding="utf-8"))
    HistoryImport.start(services.memory, agent_id, export).run()
    Learning(services.memory).propose(agent_id)


def opened_with_history(make_window, roomy_runtime, services, tmp_path):
    window = make_window(roomy_runtime)
    import_chatgpt(services, window.state.agent_id, tmp_path)
    return window


def test_imported_conversations_are_listed_apart_and_open_read_only(
    make_window, roomy_runtime, qtbot, services, tmp_path, settle
):
    window = opened_with_history(make_window, roomy_runtime, services, tmp_path)
    window.switching.show_saved_conversation()
    assert "Porto" not in window.chat.transcript.toPlainText()  # not mixed into the chat
    dialog = window.history_imports.show_conversations()
    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        pass
    table = dialog.table
    rows = [[table.item(r, c).text() for c in range(4)] for r in range(table.rowCount())]
    assert rows == [["ChatGPT", "Moving day", "2024-06-10", "2"], ["ChatGPT", "Dinner ideas", "2024-05-01", "7"]]
    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        table.selectRow(1)
    text = dialog.view.toPlainText()
    assert "Dinner ideas" in text and "Imported from ChatGPT" in text
    assert "You ·" in text and "My name is Dana and I live in Lisbon." in text and "ChatGPT ·" in text
    assert "Left out:" in text and dialog.view.isReadOnly()
    imports = [dialog.imports_list.item(i).text() for i in range(dialog.imports_list.count())]
    assert len(imports) == 1 and "— done (2 conversations, 9 messages added" in imports[0]

    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        qtbot.keyClicks(dialog.filter, "moving")
    assert dialog.table.rowCount() == 1 and dialog.count.text() == "1 of 2 imported conversations shown"
    dialog.close()

    porto = next(m for m in services.memory.recall.conversation(1) if "Porto" in m.search_text)
    dialog.view.clear()
    window.navigation.show_message(porto.id)  # a source's "show it" opens its conversation, not the chat
    # The message is read off the GUI thread first; then its conversation shows.
    qtbot.waitUntil(lambda: window.history_imports.conversations_dialog.isVisible(), timeout=10_000)
    dialog = window.history_imports.conversations_dialog
    qtbot.waitUntil(lambda: "moved to Porto" in dialog.view.toPlainText(), timeout=10_000)
    assert not window.message_bar.isVisible()
    dialog.close()


def test_what_was_learned_is_accepted_edited_or_rejected_through_memory_history_with_undo(
    make_window, roomy_runtime, qtbot, services, tmp_path, settle
):
    window = opened_with_history(make_window, roomy_runtime, services, tmp_path)
    agent_id = window.state.agent_id
    core = services.memory.core
    human_before = core.get(agent_id, "human").value
    window.history_imports.update_learned_action()  # the count is read off the GUI thread
    qtbot.waitUntil(
        lambda: window.history_imports.learned_action.text().startswith("What MemDesk &learned ("), timeout=10_000
    )
    dialog = window.history_imports.show_learned()
    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        pass
    assert dialog.heading.text() == "What MemDesk learned from your ChatGPT history"
    listed = [dialog.list.item(i).text() for i in range(dialog.list.count())]
    assert "Name: Dana    (Name, to the human block)" in listed
    assert core.get(agent_id, "human").value == human_before  # nothing enters unreviewed

    def choose(text: str) -> None:
        row = next(i for i in range(dialog.list.count()) if text in dialog.list.item(i).text())
        dialog.list.setCurrentRow(row)

    choose("Lives in Porto")
    assert "I just moved to Porto for a new job." in dialog.sources.toPlainText()
    assert "Moving day (chatgpt)" in dialog.sources.toPlainText()
    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        click(qtbot, dialog.accept_button)
    value = core.get(agent_id, "human").value
    assert value.endswith("Lives in Porto (since Jun 2024); earlier: Lisbon")
    settle(window)
    assert window.memory.editors["human"].editor.toPlainText() == value  # the panel follows
    change = window.history.changes[0]
    assert change.label == "human" and change.source == "user" and "imported conversation" in change.note

    choose("Name: Dana")
    dialog.editor.setPlainText("Name: Dana Sousa")
    assert dialog.accept_button.text() == "&Accept as edited"
    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        click(qtbot, dialog.accept_button)
    assert core.get(agent_id, "human").value.endswith("Name: Dana Sousa")

    choose("Loves mushrooms")
    rejected = dialog.selected().proposal.id
    with qtbot.waitSignal(dialog.loaded, timeout=10_000):
        click(qtbot, dialog.reject_button)
    assert Learning(services.memory).get(rejected).status == REJECTED
    assert "Loves mushrooms" not in core.get(agent_id, "human").value
    assert all("Loves mushrooms" not in dialog.list.item(i).text() for i in range(dialog.list.count()))
    dialog.close()

    settle(window)
    history = window.history
    click(qtbot, history.undo_button)  # Memory history's Undo takes the newest acceptance back
    click(qtbot, history.revert_dialog.revert_button)
    value = core.get(agent_id, "human").value
    assert "Dana Sousa" not in value and value.endswith("earlier: Lisbon")


def test_file_export_writes_memory_as_a_folder(make_window, roomy_runtime, qtbot, services, tmp_path):
    window = opened_with_history(make_window, roomy_runtime, services, tmp_path)
    assert "E&xport…" in [a.text() for a in window.menus.file.actions()]
    window.transfer_actions.on_export_triggered()  # the agents are read off the GUI thread first
    qtbot.waitUntil(lambda: window.transfer_actions.export_dialog is not None, timeout=10_000)
    dialog = window.transfer_actions.export_dialog
    assert dialog.as_folder.isChecked() and not dialog.warning.isVisible()  # a plain store: no warning
    assert not dialog.export_button.isEnabled()  # nowhere chosen yet
    folder = tmp_path / "memory"
    dialog.destination.setText(str(folder))
    with qtbot.waitSignal(window.transfer_actions.saved, timeout=30_000) as saved:
        click(qtbot, dialog.export_button)
    qtbot.waitUntil(lambda: (folder / "README.md").exists(), timeout=30_000)
    qtbot.waitUntil(lambda: "Memory saved to the folder" in window.statusBar().currentMessage(), timeout=30_000)
    assert saved.args[0].startswith("Exporting memory to")
    agent_folder = next(p for p in folder.iterdir() if p.is_dir() and p.name != "data")
    assert (agent_folder / "core" / "human.md").is_file()
    assert "Porto" in (agent_folder / "imported" / "chatgpt" / "2024-06-10-moving-day.md").read_text(encoding="utf-8")


def test_an_encrypted_store_s_export_says_the_folder_is_plain_text_before_it_writes(qtbot):
    from memdesk.ui.dialogs.export_memory import PLAIN_TEXT_WARNING, ExportDialog

    dialog = ExportDialog((1, "sam"), [1, 2], encrypted=True)
    qtbot.addWidget(dialog)
    dialog.show()
    wanted = []
    dialog.export_requested.connect(lambda *args: wanted.append(args))
    dialog.destination.setText("/somewhere/memory")
    assert dialog.warning.isVisible() and dialog.warning.text() == PLAIN_TEXT_WARNING
    assert not dialog.export_button.isEnabled()  # not until the person says they understand
    dialog.understood.setChecked(True)
    dialog.all_agents.setChecked(True)
    click(qtbot, dialog.export_button)
    assert wanted == [("folder", [1, 2], "/somewhere/memory")]
    dialog.close()
    other = ExportDialog((1, "sam"), [1], encrypted=True)
    qtbot.addWidget(other)
    other.show()
    other.as_agent_file.setChecked(True)  # an agent file is no folder of plain text
    assert not other.warning.isVisible()
    other.close()
