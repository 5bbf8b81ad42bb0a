"""The preview of an import of another assistant's conversations, and the person's choice: what the
export holds (conversations, messages, dates, the newest titles), what is already in memory, what
would be left out and why, what the agent's retention setting means for it, and which
conversations to import, by date range or title. A changed choice is counted again from what the
preview read (``Preview.choose``), not by reading the file a second time.

Signals:
    choice_changed(): the counts shown follow a new choice (``preview`` is the chosen one)
"""

from __future__ import annotations

from datetime import date

from PySide6.QtCore import QDate, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QDateEdit,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.clock import day_month_year
from memdesk.core.transfer.history.preview import Preview, Selection, retention_warning
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import plain_label, set_plain

#: How long the choice waits for more typing before it counts again (ms).
RECOUNT_AFTER_MS = 250


def _qdate(day: date) -> QDate:
    return QDate(day.year, day.month, day.day)


def _day(value: QDate) -> date:
    return date(value.year(), value.month(), value.day())


class PreviewPage(QWidget):
    choice_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.preview: Preview | None = None
        self._read: Preview | None = None  # as read (every conversation): choices are counted from it
        layout = QVBoxLayout(self)
        self.summary = plain_label()
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.note = plain_label()
        self.note.setWordWrap(True)
        layout.addWidget(self.note)
        self.retention = plain_label()
        self.retention.setWordWrap(True)
        self.retention.setStyleSheet("QLabel { background: #fff4ce; color: #3b2e00; padding: 6px; }")
        layout.addWidget(self.retention)
        self.retention_only = QPushButton()
        self.retention_only.clicked.connect(self.on_only_what_retention_keeps)
        layout.addWidget(self.retention_only, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self._choice_box())
        self.chosen = plain_label()
        self.chosen.setWordWrap(True)
        layout.addWidget(self.chosen)
        layout.addWidget(QLabel("Newest conversations chosen:"))
        self.titles = QListWidget()
        layout.addWidget(self.titles, 2)
        self.skipped_title = QLabel("Left out, and why:")
        layout.addWidget(self.skipped_title)
        self.skipped = QListWidget()
        layout.addWidget(self.skipped, 1)
        self._recount = QTimer(self)
        self._recount.setSingleShot(True)
        self._recount.setInterval(RECOUNT_AFTER_MS)
        self._recount.timeout.connect(self.recount)

    def _choice_box(self) -> QGroupBox:
        box = QGroupBox("Import")
        form = QFormLayout(box)
        self.since_on = QCheckBox("From")
        self.since = QDateEdit()
        self.until_on = QCheckBox("Until")
        self.until = QDateEdit()
        for check, edit in ((self.since_on, self.since), (self.until_on, self.until)):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
            edit.setEnabled(False)
            check.toggled.connect(edit.setEnabled)
            check.toggled.connect(self._changed)
            edit.dateChanged.connect(self._changed)
        dates = QHBoxLayout()
        for widget in (self.since_on, self.since, self.until_on, self.until):
            dates.addWidget(widget)
        dates.addStretch(1)
        form.addRow("Dates:", dates)
        self.title_filter = QLineEdit()
        self.title_filter.setPlaceholderText("every title; or words a title holds, separated by commas")
        self.title_filter.textChanged.connect(self._changed)
        form.addRow("Titles:", self.title_filter)
        return box

    # --- what the export holds ------------------------------------------------------------------
    def set_preview(self, preview: Preview) -> None:
        self._read = preview
        t = preview.tally
        for check, edit, moment in ((self.since_on, self.since, t.first), (self.until_on, self.until, t.last)):
            edit.blockSignals(True)
            edit.setDate(_qdate(moment.date() if moment else _today()))
            edit.blockSignals(False)
            check.setEnabled(moment is not None)
        span = f", {day_month_year(t.first)} to {day_month_year(t.last)}" if t.first and t.last else ""
        set_plain(
            self.summary,
            f"A {preview.source_name} export: {t.conversations:,} conversations, {t.messages:,} messages{span}.",
        )
        set_plain(self.note, preview.note)
        self.note.setVisible(bool(preview.note))
        self.skipped.clear()
        self.skipped.addItems(t.skipped_lines())
        self.skipped_title.setVisible(self.skipped.count() > 0)
        self.skipped.setVisible(self.skipped.count() > 0)
        self._show(preview)

    def selection(self) -> Selection:
        titles = tuple(t.strip() for t in self.title_filter.text().split(",") if t.strip())
        return Selection(
            _day(self.since.date()) if self.since_on.isChecked() else None,
            _day(self.until.date()) if self.until_on.isChecked() else None,
            titles,
        )

    @Slot()
    @reports_errors
    def _changed(self, *_args) -> None:
        self._recount.start()

    @Slot()
    @reports_errors
    def recount(self) -> None:
        """Count the choice now (it is also counted a moment after each change)."""
        self._recount.stop()
        if self._read is not None and self._read.rows is not None:
            self._show(self._read.choose(self.selection()))

    def _show(self, preview: Preview) -> None:
        self.preview = preview
        t = preview.tally
        chosen = f"Chosen: {t.chosen_conversations:,} conversations, {t.chosen_messages:,} messages."
        if t.chosen_messages and t.new_messages < t.chosen_messages:
            chosen += f" {t.chosen_messages - t.new_messages:,} of them are in memory already; {t.new_messages:,} new."
        set_plain(self.chosen, chosen)
        self.titles.clear()
        for at, title, n in preview.titles:
            self.titles.addItem(f"{at:%Y-%m-%d}  {title}  ({n} messages)" if at else f"{title}  ({n} messages)")
        if t.chosen_conversations > len(preview.titles):
            self.titles.addItem(f"… and {t.chosen_conversations - len(preview.titles):,} more")
        warning = retention_warning(preview)
        set_plain(self.retention, warning)
        self.retention.setVisible(bool(warning))
        note = preview.retention
        self.retention_only.setVisible(bool(warning))
        if note is not None:
            self.retention_only.setText(f"Import only the last {note.days} days")
        self.choice_changed.emit()

    @Slot()
    @reports_errors
    def on_only_what_retention_keeps(self) -> None:
        """Choose what retention would keep by the messages' own dates."""
        note = self._read.retention if self._read is not None else None
        if note is None:
            return
        self.since.setDate(_qdate(note.cutoff.date()))
        self.since_on.setChecked(True)
        self.recount()


def _today() -> date:
    return date.today()
