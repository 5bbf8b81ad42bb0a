"""No text view reads a file that text from outside names (issue 35, item 5): a reply or an
imported message ``![x](/dev/zero)`` aborted the window every time the agent was shown (Qt read
the file to draw the image), and a FIFO hung it. Here a FIFO stands for such a file: rendering
must not open it."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication, QTextEdit

from memdesk.core.agent.conversation_view import Entry
from memdesk.ui.panels.transcript import Transcript
from tests.ui.watched_fifo import watched_fifo


def test_markdown_images_in_messages_read_no_file(qtbot, tmp_path):
    with watched_fifo(tmp_path) as evidence:
        transcript = Transcript()
        qtbot.addWidget(transcript)
        transcript.show()
        at = datetime.now().astimezone()
        transcript.set_entries([Entry("user", f"look: ![x]({evidence.path})", at, message_id=1)], "sam")
        transcript.add(Entry("agent", f"![y]({evidence.path}) and ![z](file://{evidence.path})", at, message_id=2))
        transcript.append_live("message", f"streaming ![w]({evidence.path})")
        transcript.update_live()
        transcript.repaint()
        QApplication.processEvents()
        assert evidence.opened == 0
        assert "look:" in transcript.toPlainText() and "streaming" in transcript.toPlainText()


def test_every_text_view_of_the_window_loads_nothing(make_window, roomy_runtime, tmp_path):
    window = make_window(roomy_runtime)
    views = window.findChildren(QTextEdit)
    assert len(views) >= 4  # the transcript and the panels' detail views
    with watched_fifo(tmp_path) as evidence:
        for view in views:
            for url in (QUrl(str(evidence.path)), QUrl.fromLocalFile(str(evidence.path))):
                view.document().resource(QTextDocument.ResourceType.ImageResource, url)
                view.document().resource(QTextDocument.ResourceType.StyleSheetResource, url)
        assert evidence.opened == 0, [type(v).__name__ for v in views]
