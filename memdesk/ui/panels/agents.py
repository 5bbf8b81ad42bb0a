"""The agents list (create, rename, duplicate, delete, switch) and the create-agent dialog.

Signals (AgentsPanel):
    switched(int): the user picked an agent
    create_requested(), rename_requested(int), duplicate_requested(int), delete_requested(int)
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.paths import RESOURCES
from memdesk.core.memory.agents import AgentRecord
from memdesk.core.prompts import Prompts, persona_text
from memdesk.ui.common.errors import reports_errors

TEMPLATES_DIR = RESOURCES / "prompts" / "templates"


def templates(kind: str, default: str) -> dict[str, str]:
    """Persona or human templates: the default plus any ``templates/<kind>_*.txt`` file."""
    found = {"Default": default, "Blank": ""}
    if TEMPLATES_DIR.is_dir():
        for path in sorted(
            (p for p in TEMPLATES_DIR.iterdir() if p.name.startswith(f"{kind}_") and p.name.endswith(".txt")),
            key=lambda p: p.name,
        ):
            found[path.name[len(kind) + 1 : -4].replace("_", " ").capitalize()] = path.read_text(
                encoding="utf-8"
            ).strip()
    return found


class CreateAgentDialog(QDialog):
    def __init__(self, prompts: Prompts, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New agent")
        self.resize(520, 460)
        form = QFormLayout(self)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. Sam")
        form.addRow("Name", self.name)
        self.persona_templates = templates("persona", prompts.persona)
        self.human_templates = templates("human", prompts.human)
        self.persona_choice, self.persona = QComboBox(), QPlainTextEdit(prompts.persona)
        self.human_choice, self.human = QComboBox(), QPlainTextEdit(prompts.human)
        self.human.setPlaceholderText("Leave empty: the agent writes here what it learns about you.")
        self.persona_choice.addItems(list(self.persona_templates))
        self.human_choice.addItems(list(self.human_templates))
        form.addRow("Persona template", self.persona_choice)
        form.addRow("Persona", self.persona)
        form.addRow("Human template", self.human_choice)
        form.addRow("About you", self.human)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        form.addRow(buttons)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Create")
        self.ok_button.setEnabled(False)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.name.textChanged.connect(lambda text: self.ok_button.setEnabled(bool(text.strip())))
        self._generated_persona = ""
        self._fill_persona()
        self.name.textChanged.connect(self._refill_persona)
        self.persona_choice.currentTextChanged.connect(lambda _key: self._fill_persona())
        self.human_choice.currentTextChanged.connect(lambda key: self.human.setPlainText(self.human_templates[key]))

    @Slot(str)
    @reports_errors
    def _refill_persona(self, _name: str = "") -> None:
        """A new name: the persona follows it, unless the user wrote their own."""
        if self.persona.toPlainText() == self._generated_persona:
            self._fill_persona()

    def _fill_persona(self) -> None:
        """The chosen template written for the name typed so far; text the user edited is kept
        when the name changes."""
        template = self.persona_templates[self.persona_choice.currentText()]
        self._generated_persona = persona_text(template, self.name.text()) if self.name.text().strip() else template
        self.persona.setPlainText(self._generated_persona)

    def values(self) -> tuple[str, str, str]:
        return self.name.text().strip(), self.persona.toPlainText().strip(), self.human.toPlainText().strip()


class AgentsPanel(QWidget):
    switched = Signal(int)
    create_requested = Signal()
    rename_requested = Signal(int)
    duplicate_requested = Signal(int)
    delete_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget()
        layout.addWidget(self.list, 1)
        row1, row2 = QHBoxLayout(), QHBoxLayout()
        self.new_button = QPushButton("New…")
        self.rename_button = QPushButton("Rename…")
        self.duplicate_button = QPushButton("Duplicate")
        self.delete_button = QPushButton("Delete")
        row1.addWidget(self.new_button)
        row1.addWidget(self.rename_button)
        row2.addWidget(self.duplicate_button)
        row2.addWidget(self.delete_button)
        layout.addLayout(row1)
        layout.addLayout(row2)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self.list.currentItemChanged.connect(self.on_current_item_changed)
        self.new_button.clicked.connect(self.create_requested)
        self.rename_button.clicked.connect(lambda: self._emit_for_current(self.rename_requested))
        self.duplicate_button.clicked.connect(lambda: self._emit_for_current(self.duplicate_requested))
        self.delete_button.clicked.connect(lambda: self._emit_for_current(self.delete_requested))

    def set_agents(self, agents: list[AgentRecord], current: int | None) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for record in agents:
            item = QListWidgetItem(record.name)
            item.setData(Qt.ItemDataRole.UserRole, record.id)
            self.list.addItem(item)
            if record.id == current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        for button in (self.rename_button, self.duplicate_button, self.delete_button):
            button.setEnabled(bool(agents))

    def current_id(self) -> int | None:
        item = self.list.currentItem()
        return None if item is None else int(item.data(Qt.ItemDataRole.UserRole))

    def _emit_for_current(self, signal) -> None:
        agent_id = self.current_id()
        if agent_id is not None:
            signal.emit(agent_id)

    @Slot(QListWidgetItem, QListWidgetItem)
    @reports_errors
    def on_current_item_changed(self, current: QListWidgetItem | None, _previous) -> None:
        if current is not None:
            self.switched.emit(int(current.data(Qt.ItemDataRole.UserRole)))
