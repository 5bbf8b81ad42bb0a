"""File > Import history…: bring conversations from ChatGPT, Claude, Open WebUI or transcripts into
the agent's memory. One dialog, a page per stage: reading the export (with progress, cancellable),
its preview and the person's choice (history_preview.py), the import running as background work
(conversations, messages, time left; Stop keeps what came in and Resume goes on from there), and
what it brought (with what MemDesk learned, to review).

The dialog only shows and asks; the window's controller (window/history_imports.py) reads the
export off the GUI thread and runs the import through the session.

Signals:
    import_requested(object): import with this Selection
    cancel_requested(): stop reading the export (the preview)
    stop_requested(): stop the import (it stays resumable)
    resume_requested(int): go on with this import
    learned_requested(): show what MemDesk learned
    conversations_requested(): show the imported conversations
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.errors import MemDeskError
from memdesk.core.transfer.history.importer import DONE, PAUSED, ImportProgress
from memdesk.ui.common.buttons import GAP, button, button_row
from memdesk.ui.common.errors import reports_errors, user_text
from memdesk.ui.common.text import plain_label, set_plain
from memdesk.ui.dialogs.history_preview import PreviewPage

READING, PREVIEW, IMPORTING, PAUSED_PAGE, FINISHED = range(5)
MEANWHILE = (
    "You can go on chatting meanwhile: a message you send is answered first, and the import goes on"
    " after it. Closing this window does not stop the import; Stop does, and Resume goes on from where"
    " it stopped."
)


class ImportHistoryDialog(QDialog):
    import_requested = Signal(object)
    cancel_requested = Signal()
    stop_requested = Signal()
    resume_requested = Signal(int)
    learned_requested = Signal()
    conversations_requested = Signal()

    def __init__(self, path: Path, agent_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.agent_name = agent_name
        self.import_id: int | None = None
        self.setWindowTitle(f"Import history into {agent_name}")
        self.resize(680, 560)
        layout = QVBoxLayout(self)
        self.pages = QStackedWidget()
        layout.addWidget(self.pages, 1)
        self.pages.addWidget(self._reading_page())
        self.preview_page = PreviewPage()
        self.pages.addWidget(self._with_buttons(self.preview_page, self._preview_buttons()))
        self.pages.addWidget(self._importing_page())
        self.pages.addWidget(self._paused_page())
        self.pages.addWidget(self._finished_page())
        self.preview_page.choice_changed.connect(self._update_import_button)

    # --- pages -----------------------------------------------------------------------------------
    def _reading_page(self) -> QWidget:
        self.reading = _wrapped(plain_label(f"Reading {self.path.name}…"))
        self.reading_bar = QProgressBar()
        self.reading_bar.setRange(0, 1000)
        self.cancel_reading = button("Cancel", self.on_cancel_reading)
        return _page(self.reading, self.reading_bar, buttons=button_row(GAP, self.cancel_reading))

    def _preview_buttons(self) -> QHBoxLayout:
        self.import_button = button("&Import", self.on_import_clicked, default=True)
        return button_row(GAP, self.import_button, button("Cancel", self.reject))

    @staticmethod
    def _with_buttons(widget: QWidget, buttons: QHBoxLayout) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(widget, 1)
        layout.addLayout(buttons)
        return page

    def _importing_page(self) -> QWidget:
        self.progress_text = _wrapped(plain_label("Starting…"))
        self.progress_bar = QProgressBar()
        self.embedding_text = plain_label()
        self.stop_button = button("&Stop", self.on_stop_clicked)
        return _page(
            self.progress_text,
            self.progress_bar,
            self.embedding_text,
            _wrapped(QLabel(MEANWHILE)),
            buttons=button_row(GAP, self.stop_button, button("&Hide", self.hide)),
        )

    def _paused_page(self) -> QWidget:
        self.paused_text = _wrapped(plain_label())
        self.resume_button = button("&Resume", self.on_resume_clicked)
        return _page(self.paused_text, buttons=button_row(GAP, self.resume_button, button("Close", self.accept)))

    def _finished_page(self) -> QWidget:
        self.finished_text = _wrapped(plain_label())
        self.learned_button = button("Review what MemDesk &learned…", self.learned_requested)
        conversations = button("Show imported &conversations…", self.conversations_requested)
        close = button("Close", self.accept)
        return _page(self.finished_text, buttons=button_row(self.learned_button, conversations, GAP, close))

    # --- what the controller shows ----------------------------------------------------------------
    @property
    def stage(self) -> int:
        return self.pages.currentIndex()

    def show_reading(self, share: float) -> None:
        self.reading_bar.setValue(int(share * 1000))

    def show_preview(self, preview) -> None:
        self.preview_page.set_preview(preview)
        self.pages.setCurrentIndex(PREVIEW)
        self._update_import_button()

    def show_failed(self, error: BaseException) -> None:
        """The export could not be read (or the import could not begin): said where it was asked."""
        text = user_text(error) if isinstance(error, MemDeskError) else f"{self.path.name} could not be read: {error}"
        set_plain(self.reading, text)
        self.reading_bar.hide()
        self.cancel_reading.setText("Close")
        self.pages.setCurrentIndex(READING)

    def show_starting(self) -> None:
        self.progress_bar.setRange(0, 0)
        set_plain(self.progress_text, "Taking a snapshot of memory first (Backups can bring it back)…")
        self.stop_button.setEnabled(True)
        self.pages.setCurrentIndex(IMPORTING)

    def show_progress(self, progress: ImportProgress) -> None:
        self.import_id = progress.import_id
        if progress.status == PAUSED:
            set_plain(
                self.paused_text,
                f"Stopped after {progress.describe()}. What came in stays in {self.agent_name}'s memory;"
                " Resume goes on from there and adds nothing twice.",
            )
            self.pages.setCurrentIndex(PAUSED_PAGE)
            return
        if progress.status == DONE and self.stage == FINISHED:
            return
        if self.stage != IMPORTING:
            self.pages.setCurrentIndex(IMPORTING)
        total = progress.conversations_total
        self.progress_bar.setRange(0, total if total else 0)
        if total:
            self.progress_bar.setValue(min(progress.conversations_done, total))
        set_plain(self.progress_text, f"Imported so far: {progress.describe()}.")
        left = progress.embedding_left
        set_plain(self.embedding_text, f"Making {left:,} messages searchable by meaning…" if left else "")

    def show_finished(self, progress: ImportProgress | None, proposals: int, skipped: list[str]) -> None:
        added = (
            f"{progress.conversations_added:,} conversations ({progress.messages_added:,} new messages)"
            if progress is not None
            else "the conversations"
        )
        lines = [
            f"Imported {added} into {self.agent_name}'s memory. They are searchable now, and listed apart from"
            " your chat in Memory > Imported conversations."
        ]
        if skipped:
            lines.append("Left out: " + "; ".join(skipped[:8]) + (" …" if len(skipped) > 8 else ""))
        lines.append(
            f"MemDesk found {proposals} things about you in them. Nothing goes into core memory until you accept it."
            if proposals
            else "MemDesk found nothing new about you for core memory in them."
        )
        set_plain(self.finished_text, "\n\n".join(lines))
        self.learned_button.setVisible(proposals > 0)
        self.pages.setCurrentIndex(FINISHED)

    @Slot()
    @reports_errors
    def _update_import_button(self) -> None:
        preview = self.preview_page.preview
        chosen = preview.tally.chosen_conversations if preview is not None else 0
        self.import_button.setEnabled(chosen > 0)
        self.import_button.setText(f"&Import {chosen:,} conversations" if chosen else "&Import")

    # --- what the person does ---------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_import_clicked(self) -> None:
        self.preview_page.recount()  # a change typed a moment ago counts
        if self.preview_page.preview is None or not self.preview_page.preview.tally.chosen_conversations:
            return
        self.import_requested.emit(self.preview_page.selection())

    @Slot()
    @reports_errors
    def on_cancel_reading(self) -> None:
        self.cancel_requested.emit()
        self.reject()

    @Slot()
    @reports_errors
    def on_stop_clicked(self) -> None:
        self.stop_button.setEnabled(False)
        set_plain(self.progress_text, "Stopping after the conversation being written…")
        self.stop_requested.emit()

    @Slot()
    @reports_errors
    def on_resume_clicked(self) -> None:
        if self.import_id is not None:
            self.show_starting()
            set_plain(self.progress_text, "Going on where it stopped…")
            self.resume_requested.emit(self.import_id)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.stage == READING:
            self.cancel_requested.emit()
        super().closeEvent(event)

    @Slot()
    @reports_errors
    def reject(self) -> None:
        if self.stage == READING:
            self.cancel_requested.emit()
        if self.stage == IMPORTING:  # Esc while it runs: hidden, the import goes on
            self.hide()
            return
        super().reject()


def _wrapped(label: QLabel) -> QLabel:
    label.setWordWrap(True)
    return label


def _page(*shown: QWidget, buttons: QHBoxLayout) -> QWidget:
    """A stage of the import: what it shows at the top, its buttons at the bottom."""
    page = QWidget()
    layout = QVBoxLayout(page)
    for widget in shown:
        layout.addWidget(widget)
    layout.addStretch(1)
    layout.addLayout(buttons)
    return page
