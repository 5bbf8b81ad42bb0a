"""Agent files in the window: the import summary (what came in, what was adjusted, what MemDesk
could not map) and the imported tools, whose code is shown and which run only once the user
enables them after reading it.

Signals (ImportSummaryDialog):
    open_requested(int): switch to this imported agent
    tools_requested(int): review this agent's imported tools
Signals (ImportedToolsDialog):
    tools_changed(int): the user enabled or disabled a tool of this agent
    failed(object): an error for the message bar
"""

from __future__ import annotations

import html

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.errors import MemDeskError
from memdesk.core.text.visible import one_line, visible
from memdesk.core.tools.imported import ImportedTool, ImportedTools, enabling_means, reserved_names, runnable_problem
from memdesk.core.transfer.agentfile import ImportSummary
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import TextView, plain_label, set_plain, set_rich


def summary_html(summary: ImportSummary) -> str:
    source = "Letta agent file" if summary.source == "letta" else "MemDesk export"
    parts = [f"<p>Imported {len(summary.agents)} agent(s) from a {source}.</p><ul>"]
    parts += [f"<li>{html.escape(agent.line())}</li>" for agent in summary.agents]
    parts.append("</ul>")
    if summary.fixups:
        parts.append("<p><b>Adjusted on import</b></p><ul>")
        parts += [f"<li>{html.escape(item)}</li>" for item in summary.fixups]
        parts.append("</ul>")
    if summary.unmapped:
        parts.append(
            f'<p><b>Not imported</b> <span style="color:{palette.muted()}">(MemDesk has no equivalent)</span></p><ul>'
        )
        parts += [f"<li>{html.escape(item)}</li>" for item in summary.unmapped]
        parts.append("</ul>")
    else:
        parts.append("<p>Everything in the file was imported.</p>")
    return "".join(parts)


class ImportSummaryDialog(QDialog):
    open_requested = Signal(int)
    tools_requested = Signal(int)

    def __init__(self, summary: ImportSummary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = summary
        self.setWindowTitle("Agent imported")
        self.resize(640, 480)
        layout = QVBoxLayout(self)
        self.report = TextView()
        self.report.setHtml(summary_html(summary))
        layout.addWidget(self.report, 1)
        buttons = QDialogButtonBox()
        first = summary.agents[0] if summary.agents else None
        self.open_button = buttons.addButton(
            f"Open {first.name}" if first else "Open", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.open_button.setEnabled(first is not None)
        with_tools = next((a for a in summary.agents if a.tools_disabled), None)
        self.tools_button = buttons.addButton("Review imported tools…", QDialogButtonBox.ButtonRole.ActionRole)
        self.tools_button.setVisible(with_tools is not None)
        self.close_button = buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.open_button.clicked.connect(lambda: self._finish(self.open_requested, first.agent_id if first else None))
        self.tools_button.clicked.connect(
            lambda: self._finish(self.tools_requested, with_tools.agent_id if with_tools else None)
        )
        self.close_button.clicked.connect(self.reject)
        layout.addWidget(buttons)

    def _finish(self, signal, agent_id: int | None) -> None:
        self.accept()
        if agent_id is not None:
            signal.emit(agent_id)


class ImportedToolsDialog(QDialog):
    tools_changed = Signal(int)
    failed = Signal(object)

    def __init__(self, store: ImportedTools, agent_id: int, agent_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.agent_id = agent_id
        self.tools: list[ImportedTool] = []
        self.setWindowTitle(f"Imported tools of {agent_name}")
        self.resize(760, 520)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "These tools came with an imported agent file. Their Python code never runs unless you enable a tool, "
            "and MemDesk still asks before each run, which happens in a separate process. "
            "Read the code before enabling it."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        splitter = QSplitter()
        self.list = QListWidget()
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        self.description = QLabel()  # set_rich: the names in it are escaped
        self.description.setWordWrap(True)
        self.code = QPlainTextEdit()
        self.code.setReadOnly(True)
        self.code.setFont(QFont("monospace"))
        self.problem = plain_label()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color:{palette.readable(palette.RED)}")
        right_layout.addWidget(self.description)
        right_layout.addWidget(self.code, 1)
        right_layout.addWidget(self.problem)
        splitter.addWidget(self.list)
        splitter.addWidget(right)
        splitter.setSizes([200, 560])
        layout.addWidget(splitter, 1)
        self.confirm = QFrame()
        self.confirm.setStyleSheet(f"background:{palette.tint(palette.RED)}")
        confirm_row = QHBoxLayout(self.confirm)
        self.confirm_label = plain_label()
        self.confirm_label.setWordWrap(True)
        self.confirm_button = QPushButton("Enable")
        self.confirm_cancel = QPushButton("Cancel")
        confirm_row.addWidget(self.confirm_label, 1)
        confirm_row.addWidget(self.confirm_button)
        confirm_row.addWidget(self.confirm_cancel)
        self.confirm.hide()
        layout.addWidget(self.confirm)
        row = QHBoxLayout()
        self.enable_button = QPushButton("Enable…")
        self.disable_button = QPushButton("Disable")
        self.close_button = QPushButton("Close")
        row.addWidget(self.enable_button)
        row.addWidget(self.disable_button)
        row.addStretch(1)
        row.addWidget(self.close_button)
        layout.addLayout(row)
        self.list.currentRowChanged.connect(lambda _row: self.on_selected())
        self.enable_button.clicked.connect(self.on_enable_clicked)
        self.confirm_button.clicked.connect(self.on_confirmed)
        self.confirm_cancel.clicked.connect(self.confirm.hide)
        self.disable_button.clicked.connect(self.on_disable_clicked)
        self.close_button.clicked.connect(self.accept)
        self.refresh()

    def refresh(self) -> None:
        current = self.list.currentRow()
        self.tools = self.store.list(self.agent_id)
        self.list.clear()
        for tool in self.tools:
            self.list.addItem(QListWidgetItem(f"{one_line(tool.name)} — {'enabled' if tool.enabled else 'disabled'}"))
        if self.tools:
            self.list.setCurrentRow(min(max(current, 0), len(self.tools) - 1))
        self.on_selected()

    def selected(self) -> ImportedTool | None:
        row = self.list.currentRow()
        return self.tools[row] if 0 <= row < len(self.tools) else None

    @Slot()
    @reports_errors
    def on_selected(self) -> None:
        tool = self.selected()
        self.confirm.hide()
        if tool is None:
            set_plain(self.description, "This agent has no imported tools.")
            self.code.setPlainText("")
            self.problem.setText("")
            self.enable_button.setEnabled(False)
            self.disable_button.setEnabled(False)
            return
        set_rich(
            self.description,
            f"<b>{html.escape(one_line(tool.name))}</b> (from {html.escape(one_line(tool.origin))}):"
            f" {html.escape(visible(tool.description.strip()))}",
        )
        # Escaped: bidi controls would reorder the lines shown (such code cannot be enabled).
        self.code.setPlainText(visible(tool.source_code))
        problem = runnable_problem(tool, reserved_names())
        self.problem.setText(f"Cannot be enabled: {problem}" if problem else "")
        self.enable_button.setEnabled(not tool.enabled and problem is None)
        self.disable_button.setEnabled(tool.enabled)

    @Slot()
    @reports_errors
    def on_enable_clicked(self) -> None:
        tool = self.selected()
        if tool is None:
            return
        self.confirm_label.setText(enabling_means(one_line(tool.name)))
        self.confirm.show()

    @Slot()
    @reports_errors
    def on_confirmed(self) -> None:
        self._set(True)

    @Slot()
    @reports_errors
    def on_disable_clicked(self) -> None:
        self._set(False)

    def _set(self, enabled: bool) -> None:
        tool = self.selected()
        if tool is None:
            return
        try:
            self.store.set_enabled(self.agent_id, tool.name, enabled)
        except MemDeskError as error:
            self.failed.emit(error)
            return
        self.refresh()
        self.tools_changed.emit(self.agent_id)
