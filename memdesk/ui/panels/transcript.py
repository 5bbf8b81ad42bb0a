"""The conversation as a person reads it: Markdown replies with timestamps, quiet system events,
and (on request) the agent's inner monologue and function calls.

Streaming text is kept in a "live" tail that is replaced on each repaint tick; finished steps are
appended as entries, so a repaint never re-renders the whole history.

Every stored message can be shown, including those evicted from the model's context window (a line
marks where the context starts), so ``scroll_to_message`` can show any message a memory change
points at. A long conversation is shown a page at a time: the newest messages first, older pages
on request (``earlier_requested``: scrolling to the top, or the "Show earlier messages" link), so a
conversation of a hundred thousand messages opens as fast as a new one.
"""

from __future__ import annotations

import html
import json
from datetime import datetime

from PySide6.QtCore import QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat
from PySide6.QtWidgets import QTextEdit, QWidget

from memdesk.core.agent.conversation_view import Entry
from memdesk.ui.common import palette as qt_palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView

# Messages are Markdown, but HTML in them is shown as written: an imported or generated message
# could otherwise show links and images that are not in its text.
MARKDOWN = QTextDocument.MarkdownFeature.MarkdownDialectGitHub | QTextDocument.MarkdownFeature.MarkdownNoHTML


def styles() -> dict[str, str]:
    """Each kind of line's style, in the colours of the palette the window runs with."""
    muted = qt_palette.muted()
    return {
        "user": f"color:{qt_palette.readable(qt_palette.BLUE)};font-weight:bold",
        "agent": f"color:{qt_palette.readable(qt_palette.GREEN)};font-weight:bold",
        "meta": f"color:{muted};font-size:small",
        "event": f"color:{muted};font-style:italic;font-size:small",
        "thought": f"color:{qt_palette.readable(qt_palette.PURPLE)};font-style:italic",
        "call": f"color:{muted};font-family:monospace;font-size:small",
        "divider": f"color:{qt_palette.faint()};font-size:small;text-align:center",
    }


CONTEXT_DIVIDER = "— above: out of the model's context window (still searchable as recall memory) —"
HIGHLIGHT_MS = 4000
RETRY_SCHEME = "retry"  # the link of a "not answered" entry: retry:<message id>
EARLIER_SCHEME = "earlier"  # the link above the oldest loaded message
EARLIER_TEXT = "Show earlier messages"


class Transcript(TextView):  # a message's Markdown images load nothing
    """Signals:
    retry_requested(int): the Retry link of a message that was not answered
    earlier_requested(): older messages than those shown are wanted (scrolled to the top, or
        the link there clicked); answered with ``prepend``
    """

    retry_requested = Signal(int)
    earlier_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self.on_anchor_clicked)
        self.entries: list[Entry] = []
        self._styles = styles()
        self.agent_name = "Agent"
        self.show_details = False
        self._live_start: int | None = None
        self.live_thought = ""
        self.live_message = ""
        self.context_start_id: int | None = None
        self.has_earlier = False  # older messages exist than the entries hold
        self._divider_drawn = False
        self._shown_any = False
        self._rerendering = False
        self._spans: dict[int, tuple[int, int]] = {}  # message id -> where its first shown entry is
        self.highlighted_message: int | None = None
        self._highlight_timer = QTimer(self)
        self._highlight_timer.setSingleShot(True)
        self._highlight_timer.timeout.connect(self.clear_highlight)
        self.verticalScrollBar().valueChanged.connect(self.on_scrolled)

    # --- whole conversation ----------------------------------------------------------------
    def set_entries(
        self, entries: list[Entry], agent_name: str, context_start_id: int | None = None, *, has_earlier: bool = False
    ) -> None:
        self.entries = list(entries)
        self.agent_name = agent_name
        self.context_start_id = context_start_id
        self.has_earlier = has_earlier
        self._rerender()

    def prepend(self, entries: list[Entry], *, has_earlier: bool) -> None:
        """Older entries above those shown; what the user was reading stays where it was."""
        bar = self.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        self.entries = list(entries) + self.entries
        self.has_earlier = has_earlier
        self._rerender(scroll_to_end=False)
        bar.setValue(bar.maximum() - from_bottom)

    @Slot(int)
    @reports_errors
    def on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        if value == bar.minimum() and bar.maximum() > bar.minimum() and self.has_earlier and not self._rerendering:
            self.earlier_requested.emit()

    # --- showing one message ---------------------------------------------------------------
    def has_message(self, message_id: int) -> bool:
        return any(entry.message_id == message_id for entry in self.entries)

    def needs_details(self, message_id: int) -> bool:
        """The message shows only with the inner monologue and calls visible."""
        shown = [e for e in self.entries if e.message_id == message_id]
        return bool(shown) and all(e.detail for e in shown) and not self.show_details

    def scroll_to_message(self, message_id: int) -> bool:
        """Scroll to a message and highlight it for a moment; False when it is not shown."""
        span = self._spans.get(message_id)
        if span is None:
            return False
        start, end = span
        cursor = self.textCursor()
        cursor.setPosition(min(end, self._end().position()))
        self.setTextCursor(cursor)
        self.ensureCursorVisible()
        cursor.setPosition(start)
        self.setTextCursor(cursor)
        self.ensureCursorVisible()
        selection = QTextEdit.ExtraSelection()
        selection.format = QTextCharFormat()
        selection.format.setBackground(QColor(qt_palette.tint(qt_palette.YELLOW, amount=0.35)))
        selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        selection.cursor = self.textCursor()
        selection.cursor.setPosition(start)
        selection.cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        self.setExtraSelections([selection])
        self.highlighted_message = message_id
        self._highlight_timer.start(HIGHLIGHT_MS)
        return True

    @Slot(QUrl)
    @reports_errors
    def on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == RETRY_SCHEME and url.path().isdigit():
            self.retry_requested.emit(int(url.path()))
        elif url.scheme() == EARLIER_SCHEME and self.has_earlier:
            self.earlier_requested.emit()

    @Slot()
    @reports_errors
    def clear_highlight(self) -> None:
        self.setExtraSelections([])
        self.highlighted_message = None

    @Slot(bool)
    @reports_errors
    def set_show_details(self, show: bool) -> None:
        self.show_details = show
        self._rerender()

    def add(self, entry: Entry) -> None:
        live = (self.live_thought, self.live_message) if self._live_start is not None else None
        self._drop_live()
        self.entries.append(entry)
        self._render(entry)
        if live is not None:
            self.live_thought, self.live_message = live
            self.update_live()
        self._scroll_to_end()

    # --- streaming -------------------------------------------------------------------------
    def append_live(self, kind: str, text: str) -> None:
        """Buffer only; the window's repaint timer calls ``update_live``."""
        if kind == "thought":
            self.live_thought += text
        else:
            self.live_message += text

    def update_live(self) -> None:
        self._drop_live(keep_text=True)
        if not (self.live_message or (self.show_details and self.live_thought)):
            return
        cursor = self._end()
        self._live_start = cursor.position()
        if self.show_details and self.live_thought:
            self._html(cursor, f'<p style="{self._styles["thought"]}">thinking: {html.escape(self.live_thought)}</p>')
        if self.live_message:
            self._html(
                cursor,
                f'<p><span style="{self._styles["agent"]}">{html.escape(self.agent_name)}</span> '
                f'<span style="{self._styles["meta"]}">typing…</span></p>',
            )
            cursor.insertMarkdown(self.live_message, MARKDOWN)
        self._scroll_to_end()

    def end_live(self) -> None:
        self._drop_live()

    # --- rendering -------------------------------------------------------------------------
    def _drop_live(self, keep_text: bool = False) -> None:
        if self._live_start is not None:
            cursor = self.textCursor()
            cursor.setPosition(self._live_start)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            self._live_start = None
        if not keep_text:
            self.live_thought = self.live_message = ""

    def _rerender(self, *, scroll_to_end: bool = True) -> None:
        live = (self.live_thought, self.live_message)
        self._rerendering = True  # clearing scrolls to the top: that is not the user asking for more
        try:
            self._live_start = None
            self._spans.clear()
            self._divider_drawn = False
            self._shown_any = False
            self.clear_highlight()
            self.clear()
            if self.has_earlier:
                self.insertHtml(
                    f'<p style="{self._styles["event"]}"><a href="{EARLIER_SCHEME}:">{EARLIER_TEXT}</a></p>'
                )
            for entry in self.entries:
                self._render(entry)
            self.live_thought, self.live_message = live
            self.update_live()
        finally:
            self._rerendering = False
        if scroll_to_end:
            self._scroll_to_end()

    def _end(self) -> QTextCursor:
        cursor = self.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    @staticmethod
    def _html(cursor: QTextCursor, text: str) -> None:
        cursor.insertBlock()
        cursor.insertHtml(text)

    def _render(self, entry: Entry) -> None:
        if entry.detail and not self.show_details:
            return
        cursor = self._end()
        if (
            not self._divider_drawn
            and self.context_start_id is not None
            and entry.message_id is not None
            and entry.message_id >= self.context_start_id
        ):
            self._divider_drawn = True
            # Only when something evicted is shown above it, or is the page not loaded yet right above it.
            if self._shown_any or (self.has_earlier and entry.message_id == self.context_start_id):
                self._html(cursor, f'<p style="{self._styles["divider"]}">{html.escape(CONTEXT_DIVIDER)}</p>')
        start = cursor.position() + (1 if cursor.position() else 0)  # the entry's block starts after the separator
        self._render_body(cursor, entry)
        self._shown_any = True
        if entry.message_id is not None:  # a message's entries (thought, reply) are adjacent: one span
            first = self._spans.get(entry.message_id, (start, 0))[0]
            self._spans[entry.message_id] = (first, cursor.position())

    def _render_body(self, cursor: QTextCursor, entry: Entry) -> None:
        stamp = _stamp(entry.at)
        if entry.kind in ("user", "agent"):
            who = "You" if entry.kind == "user" else self.agent_name
            self._html(
                cursor,
                f'<p><span style="{self._styles[entry.kind]}">{html.escape(who)}</span> '
                f'<span style="{self._styles["meta"]}">{stamp}</span></p>',
            )
            cursor.insertBlock()
            cursor.insertMarkdown(entry.text, MARKDOWN)
        elif entry.kind == "thought":
            self._html(cursor, f'<p style="{self._styles["thought"]}">thinking: {html.escape(entry.text)}</p>')
        elif entry.kind == "call":
            arguments = json.dumps(entry.arguments, ensure_ascii=False)
            status = "✓" if entry.ok else "✗ failed"
            body = f"{entry.function}({arguments}) → {status} {entry.result}" if entry.function else entry.text
            self._html(cursor, f'<p style="{self._styles["call"]}">call: {html.escape(body)}</p>')
        elif entry.kind == "unanswered" and entry.message_id is not None:
            link = f'<a href="{RETRY_SCHEME}:{entry.message_id}">Retry</a>'
            self._html(cursor, f'<p style="{self._styles["event"]}">— {html.escape(entry.text)} · {link} · {stamp}</p>')
        else:
            self._html(cursor, f'<p style="{self._styles["event"]}">— {html.escape(entry.text)} · {stamp}</p>')

    def _scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())


def _stamp(moment: datetime) -> str:
    """Times arrive in the user's zone (the stores and the clock convert them); shown as they are."""
    return moment.strftime("%Y-%m-%d %H:%M")
