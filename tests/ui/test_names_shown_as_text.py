"""What the user sees is what is true: a name from an imported file, the model or the user is shown
as the characters it has, never read as markup, wherever the window shows it (issue 18, item 3).
Qt reads text that looks like HTML as HTML (QLabel's AutoText, tooltips, message boxes), so an agent
named with markup could make the consent dialog show a harmless function while another is asked."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from PySide6 import QtGui
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel

from memdesk.core.base.errors import MemDeskError
from memdesk.core.runtime.scripted import say
from memdesk.core.tools.builtin import CONSENT_SUMMARIES
from memdesk.ui.common.text import literal
from memdesk.ui.dialogs.consent import ConsentDialog, ConsentRequest
from memdesk.ui.panels.knowledge import KnowledgePanel
from memdesk.ui.panels.knowledge_reads import EntityView
from memdesk.ui.workers.reads import Reads

NAMES = [
    "<b>Trusted</b>",
    '<a href="https://example.com/steal">read_from_text_file</a>',
    '<img src="file:///etc/passwd"> helper',
]


def rendered(text: str, text_format: Qt.TextFormat = Qt.TextFormat.AutoText) -> str:
    """The characters a user sees for ``text`` in a widget of this format (Qt's own rule)."""
    rich = text_format == Qt.TextFormat.RichText or (
        text_format == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text)
    )
    if not rich:
        return text
    document = QTextDocument()
    document.setHtml(text)
    return document.toPlainText()


def seen(label: QLabel) -> str:
    return rendered(label.text(), label.textFormat())


@pytest.mark.parametrize("name", NAMES)
def test_the_consent_dialog_shows_the_agents_name_and_the_tool_really_asked(qtbot, name):
    arguments = {"method": "post", "url": "https://api.example.com/notes", "payload_json": '{"secret": 1}'}
    request = ConsentRequest(1, "http_request", CONSENT_SUMMARIES["http_request"](arguments))
    dialog = ConsentDialog(request, name)
    qtbot.addWidget(dialog)
    shown = seen(dialog.text)
    assert shown.startswith(f"{name} wants to run http_request:")
    assert "POST https://api.example.com/notes" in shown


def test_a_tool_name_that_looks_like_markup_is_shown_as_it_is(qtbot):
    request = ConsentRequest(1, "<s>http_request</s>read_from_text_file", "run it")
    dialog = ConsentDialog(request, "sam")
    qtbot.addWidget(dialog)
    assert "wants to run <s>http_request</s>read_from_text_file:" in seen(dialog.text)


@pytest.mark.parametrize("name", NAMES)
def test_the_chat_title_shows_the_agents_name_as_it_is(make_window, roomy_runtime, services, name, settle):
    window = make_window(roomy_runtime)
    window.switching.select(services.create_agent(name).id)
    settle(window)  # the agent is read off the GUI thread, then shown
    assert seen(window.chat.title) == name
    window.switching.on_agent_renamed(window.state.agent_id, f"{name} 2")
    assert seen(window.chat.title) == f"{name} 2"


@pytest.mark.parametrize("name", NAMES)
def test_the_knowledge_panel_titles_an_entity_by_its_name_as_it_is(qtbot, services, name):
    agent_id = services.create_agent("kim").id
    graph = services.memory.graph
    entity = graph.entity(graph.resolve(agent_id, "Lisbon", "place", author="user"))
    panel = KnowledgePanel(graph, Reads())
    panel.reads.setParent(panel)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.loaded):
        panel.set_agent(agent_id)
    # An imported graph brings its names as they were written.
    panel.show_view(EntityView(dataclasses.replace(entity, name=name, aliases=[name]), [], [], []))
    shown = seen(panel.title)
    assert shown.startswith(f"{name} (place)") and shown.endswith(f"also called {name}")


@pytest.mark.parametrize("name", NAMES)
def test_an_error_naming_something_is_shown_as_it_is(make_window, roomy_runtime, name):
    window = make_window(roomy_runtime)
    window.hub.report(MemDeskError(f"No agent named {name}"))
    assert seen(window.message_bar.label) == f"No agent named {name}"


@pytest.mark.parametrize("name", NAMES)
def test_tooltips_and_message_boxes_show_text_as_it_is(name):
    """Their format cannot be set: ``literal`` is what the window passes them."""
    text = f"Delete {name}?\nThis cannot be undone."
    assert rendered(literal(text)) == text
    assert literal("") == ""


def test_the_delete_question_names_the_agent_as_it_is(make_window, roomy_runtime, services, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window = make_window(roomy_runtime)
    agent_id = services.create_agent(NAMES[0]).id
    asked: list[str] = []
    monkeypatch.setattr(
        QMessageBox, "question", lambda _parent, _title, text, *a: asked.append(text) or QMessageBox.StandardButton.No
    )
    window.agent_actions.on_delete_requested(agent_id)
    assert rendered(asked[0]).startswith(f"Delete {NAMES[0]} with its whole conversation")


# --- what the consent question shows (item 4) -------------------------------------------------
def test_the_consent_dialog_shows_a_post_body_shortened_and_all_of_it_on_request(qtbot):
    body = '{"note": "' + "x" * 2000 + '", "end": "LAST"}'
    arguments = {"method": "POST", "url": "https://api.example.com/notes", "payload_json": body}
    dialog = ConsentDialog(ConsentRequest(1, "http_request", CONSENT_SUMMARIES["http_request"](arguments)), "sam")
    qtbot.addWidget(dialog)
    dialog.show()
    preview = dialog.data.toPlainText()
    assert (
        dialog.data.isVisible()
        and preview.startswith(f'body ({len(body)} characters):\n{{"note": "xxx')
        and "LAST" not in preview
    )
    assert "more characters]" in preview and dialog.show_all.isVisible()
    qtbot.mouseClick(dialog.show_all, Qt.MouseButton.LeftButton)
    assert dialog.data.toPlainText() == f"body ({len(body)} characters):\n{body}" and not dialog.show_all.isVisible()
    dialog.close()


def test_the_consent_dialog_shows_the_text_a_file_append_would_write(qtbot):
    arguments = {"filename": "notes.txt", "content": "Buy milk\n<b>and</b> eggs"}
    dialog = ConsentDialog(
        ConsentRequest(1, "append_to_text_file", CONSENT_SUMMARIES["append_to_text_file"](arguments)), "sam"
    )
    qtbot.addWidget(dialog)
    dialog.show()
    assert "append 24 characters to notes.txt" in seen(dialog.text)
    assert dialog.data.toPlainText() == "the text:\nBuy milk\n<b>and</b> eggs"
    assert not dialog.show_all.isVisible()  # short: all of it is shown already
    dialog.close()


def test_a_request_without_data_shows_no_data_box(qtbot):
    arguments = {"method": "GET", "url": "https://api.example.com/notes", "payload_json": ""}
    dialog = ConsentDialog(ConsentRequest(1, "http_request", CONSENT_SUMMARIES["http_request"](arguments)), "sam")
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.data.isVisible() and not dialog.show_all.isVisible()
    dialog.close()


# --- "Always allow" ends with the agent ---------------------------------------------------------
def _ask(qtbot, window, agent_id: int, button: str) -> tuple[bool, bool]:
    """Ask as the agent does, from a worker thread; if a question appears, the user clicks
    ``button`` in it. Returns whether the call was allowed and whether the user was asked."""
    result: list[bool] = []
    thread = threading.Thread(
        target=lambda: result.append(
            window.consent.allow(agent_id, "append_to_text_file", "append 1 characters to a.txt")
        )
    )
    thread.start()
    qtbot.waitUntil(lambda: not thread.is_alive() or bool(window.consent_dialogs), timeout=30_000)
    asked = bool(window.consent_dialogs)
    if asked:
        qtbot.mouseClick(getattr(window.consent_dialogs[-1], button), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not thread.is_alive() and not window.consent_dialogs, timeout=30_000)
    return result[0], asked


def test_always_allow_is_forgotten_when_its_agent_is_deleted(make_window, roomy_runtime, services, qtbot):
    window = make_window(roomy_runtime)
    doomed = services.create_agent("doomed").id
    assert _ask(qtbot, window, doomed, "allow_always") == (True, True)
    assert _ask(qtbot, window, doomed, "deny") == (True, False)  # remembered: not asked again
    window.agent_actions.delete(doomed)
    # Nothing answers for a deleted agent any more: its question is denied, not allowed unasked.
    assert _ask(qtbot, window, doomed, "deny") == (False, False)
    other = services.create_agent("other").id
    assert _ask(qtbot, window, other, "deny") == (False, True)


def test_a_new_agent_never_gets_a_deleted_agents_id(make_window, roomy_runtime, services):
    window = make_window(roomy_runtime)
    newest = services.create_agent("newest").id
    window.agent_actions.delete(newest)
    assert services.create_agent("successor").id > newest


def test_html_in_a_message_is_shown_as_written_while_markdown_still_renders(make_window, roomy_runtime, send):
    roomy_runtime.enqueue(say('See <a href="https://example.com/bank">your bank</a> <img src="x.png"> and **this**'))
    window = make_window(roomy_runtime)
    send(window, "<b>hello</b> there")
    text = window.chat.transcript.toPlainText()
    assert "<b>hello</b> there" in text
    assert 'See <a href="https://example.com/bank">your bank</a> <img src="x.png"> and this' in text
