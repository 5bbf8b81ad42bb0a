"""The question before a revert: what it will do, what the agent (or anyone) changed since and would
be overwritten, and what the memory will hold afterwards, as a diff."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from memdesk.core.base.clock import Clock
from memdesk.core.memory.revert import RevertPlan
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, plain_label
from memdesk.ui.panels.history_text import diff_html, relative_time, who


class RevertDialog(QDialog):
    """Shows what a revert will do (and what it would overwrite) before it happens.

    Signals:
        confirmed(object): the RevertPlan the user confirmed
    """

    confirmed = Signal(object)

    def __init__(self, plan: RevertPlan, clock: Clock, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plan = plan
        self.setWindowTitle("Revert a memory change")
        self.resize(560, 420)
        layout = QVBoxLayout(self)
        self.explanation = plain_label(plan.explain())
        self.explanation.setWordWrap(True)
        if plan.conflict:
            self.explanation.setStyleSheet(f"background:{palette.tint(palette.RED)};padding:6px")
        layout.addWidget(self.explanation)
        if plan.later:
            now = clock.now()
            lines = "".join(
                f"<li>{html.escape(who(c.source))}: {html.escape(c.describe())} · {relative_time(c.at, now)}</li>"
                for c in plan.later
            )
            self.later = QLabel(f"<b>Changed since:</b><ul>{lines}</ul>")
            self.later.setWordWrap(True)
            layout.addWidget(self.later)
        layout.addWidget(QLabel("What the memory will hold (red: removed, green: added):"))
        self.preview = TextView()
        self.preview.setHtml(diff_html(plan.current, plan.result))
        layout.addWidget(self.preview, 1)
        buttons = QDialogButtonBox()
        self.revert_button = buttons.addButton(
            "Revert anyway" if plan.conflict else "Revert", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.on_accepted)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    @Slot()
    @reports_errors
    def on_accepted(self) -> None:
        self.accept()
        self.confirmed.emit(self.plan)
