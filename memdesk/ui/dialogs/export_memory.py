"""File > Export…: what MemDesk remembers, out of it. As a folder of Markdown files a person can read,
keep in git and edit (one file per core memory block, archival passages by document or month,
the graph's facts as notes, Memory history as a log, a README; memdesk.core.transfer.folder), for
this agent or every agent; or as a Letta agent file (.af) or MemDesk JSON for this agent.

An encrypted store's folder is plain text: the dialog says so, and exports only once the person
has ticked that they understand.

Signals:
    export_requested(str, list, str): (format: "folder", "af" or "json"; agent ids; destination)
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDialog,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.ui.common.buttons import GAP, button, button_row
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import plain_label

FOLDER, AGENT_FILE, JSON = "folder", "af", "json"
PLAIN_TEXT_WARNING = (
    "Your memory store is encrypted, but this folder will not be: anyone who can open the folder can read"
    " everything MemDesk remembers in it. Keep it somewhere only you can reach, or delete it when done."
)


class ExportDialog(QDialog):
    export_requested = Signal(str, list, str)

    def __init__(
        self,
        agent: tuple[int, str],
        every_agent: list[int],
        *,
        encrypted: bool,
        parent: QWidget | None = None,
    ) -> None:
        """``agent``: the agent shown (id, name); ``every_agent``: the ids of all of them."""
        super().__init__(parent)
        self.agent_id, self.agent_name = agent
        self.every_agent = every_agent
        self.encrypted = encrypted
        self.setWindowTitle("Export memory")
        layout = QVBoxLayout(self)
        kinds = QGroupBox("As")
        kinds_layout = QVBoxLayout(kinds)
        self.as_folder = QRadioButton("A &folder of Markdown files: readable without MemDesk, easy to keep in git")
        self.as_agent_file = QRadioButton("A Letta &agent file (.af)")
        self.as_json = QRadioButton("MemDesk &JSON")
        self.kind = QButtonGroup(self)
        for choice in (self.as_folder, self.as_agent_file, self.as_json):
            kinds_layout.addWidget(choice)
            self.kind.addButton(choice)
        self.as_folder.setChecked(True)
        layout.addWidget(kinds)
        whose = QGroupBox("Of")
        whose_layout = QVBoxLayout(whose)
        self.this_agent = QRadioButton(f"{self.agent_name} only")
        self.all_agents = QRadioButton(f"Every agent ({len(every_agent)})")
        self.this_agent.setChecked(True)
        whose_layout.addWidget(self.this_agent)
        whose_layout.addWidget(self.all_agents)
        layout.addWidget(whose)
        self.whose = whose
        row = QHBoxLayout()
        self.destination = QLineEdit()
        self.destination.setPlaceholderText("Where to save it")
        row.addWidget(self.destination, 1)
        row.addWidget(button("&Choose…", self.on_browse))
        layout.addLayout(row)
        self.warning = plain_label(PLAIN_TEXT_WARNING)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("QLabel { background: #fff4ce; color: #3b2e00; padding: 6px; }")
        layout.addWidget(self.warning)
        self.understood = QCheckBox("I understand: export it as plain text")
        layout.addWidget(self.understood)
        self.export_button = button("&Export", self.on_export_clicked, default=True)
        layout.addLayout(button_row(GAP, self.export_button, button("Cancel", self.reject)))
        self.kind.buttonToggled.connect(lambda *_: self._update())
        self.destination.textChanged.connect(lambda _text: self._update())
        self.understood.toggled.connect(lambda _on: self._update())
        self._update()

    @property
    def format(self) -> str:
        return FOLDER if self.as_folder.isChecked() else AGENT_FILE if self.as_agent_file.isChecked() else JSON

    def _update(self) -> None:
        folder = self.format == FOLDER
        self.whose.setEnabled(folder)  # the agent files hold the agent shown
        plain = folder and self.encrypted
        self.warning.setVisible(plain)
        self.understood.setVisible(plain)
        ready = bool(self.destination.text().strip()) and (not plain or self.understood.isChecked())
        self.export_button.setEnabled(ready)

    @Slot()
    @reports_errors
    def on_browse(self) -> None:
        if self.format == FOLDER:
            chosen = QFileDialog.getExistingDirectory(self, "Export memory to a folder (new or empty)")
        else:
            suffix = ".af" if self.format == AGENT_FILE else ".json"
            chosen, _ = QFileDialog.getSaveFileName(self, "Export agent", f"{self.agent_name}{suffix}")
        if chosen:
            self.destination.setText(chosen)

    @Slot()
    @reports_errors
    def on_export_clicked(self) -> None:
        if not self.export_button.isEnabled():
            return
        folder = self.format == FOLDER
        agents = list(self.every_agent) if folder and self.all_agents.isChecked() else [self.agent_id]
        self.export_requested.emit(self.format, agents, self.destination.text().strip())
        self.accept()
