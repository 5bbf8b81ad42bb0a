"""The conversation as a person reads it: Markdown replies with timestamps, quiet system events,
and (on request) the agent's inner monologue and function calls.

Streaming text is kept in a "live" tail that is replaced on each repaint tick; finished steps are
appended as entries, so a repaint never re-renders the whole history.
"""

from __future__ import annotations

import html
import json
from datetime import datetime

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextBrowser, QWidget

from desktop.core.agent.transfer import Entry

_STYLE = {
    "user": "color:#1d4f91;font-weight:bold",
    "agent": "color:#2c6e2f;font-weight:bold",
    "meta": "color:#888;font-size:small",
    "event": "color:#888;font-style:italic;font-size:small",
    "thought": "color:#7a6a99;font-style:italic",
    "call": "color:#555;font-family:monospace;font-size:small",
}


class Transcript(QTextBrowser):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setOpenLinks(False)
        self.entries: list[Entry] = []
        self.agent_name = "Agent"
        self.show_details = False
        self._live_start: int | None = None
        self.live_thought = ""
        self.live_message = ""

    # --- whole conversation ----------------------------------------------------------------
    def set_entries(self, entries: list[Entry], agent_name: str) -> None:
        self.entries = list(entries)
        self.agent_name = agent_name
        self._rerender()

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
            self._html(cursor, f'<p style="{_STYLE["thought"]}">thinking: {html.escape(self.live_thought)}</p>')
        if self.live_message:
            self._html(cursor, f'<p><span style="{_STYLE["agent"]}">{html.escape(self.agent_name)}</span> <span style="{_STYLE["meta"]}">typing…</span></p>')
            cursor.insertMarkdown(self.live_message)
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

    def _rerender(self) -> None:
        live = (self.live_thought, self.live_message)
        self._live_start = None
        self.clear()
        for entry in self.entries:
            self._render(entry)
        self.live_thought, self.live_message = live
        self.update_live()
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
        stamp = _stamp(entry.at)
        if entry.kind in ("user", "agent"):
            who = "You" if entry.kind == "user" else self.agent_name
            self._html(
                cursor,
                f'<p><span style="{_STYLE[entry.kind]}">{html.escape(who)}</span> <span style="{_STYLE["meta"]}">{stamp}</span></p>',
            )
            cursor.insertBlock()
            cursor.insertMarkdown(entry.text)
        elif entry.kind == "thought":
            self._html(cursor, f'<p style="{_STYLE["thought"]}">thinking: {html.escape(entry.text)}</p>')
        elif entry.kind == "call":
            arguments = json.dumps(entry.arguments, ensure_ascii=False)
            status = "✓" if entry.ok else "✗ failed"
            body = f"{entry.function}({arguments}) → {status} {entry.result}" if entry.function else entry.text
            self._html(cursor, f'<p style="{_STYLE["call"]}">call: {html.escape(body)}</p>')
        else:
            self._html(cursor, f'<p style="{_STYLE["event"]}">— {html.escape(entry.text)} · {stamp}</p>')

    def _scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())


def _stamp(moment: datetime) -> str:
    """Times arrive in the user's zone (the stores and the clock convert them); shown as they are."""
    return moment.strftime("%Y-%m-%d %H:%M")
