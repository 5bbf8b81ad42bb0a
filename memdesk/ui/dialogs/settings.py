"""The settings dialog, generated from the settings' one declaration
(memdesk/core/base/settings_table.py): one row per setting not kept by the app itself, its editor
chosen by type, choices and range, its description beside it; tuning knobs on an Advanced tab,
settings that reload the model starred. Also shows where data lives."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import SETTINGS, Declared, Settings
from memdesk.core.net.plain_http import plain_http_warning
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal

_INT_LIMIT = (1 << 31) - 1  # a QSpinBox holds a C int


def _spin_range(declared: Declared, value: float, low: float, high: float) -> tuple[float, float]:
    """The declared range, widened to hold ``value`` (a value stored before a range was declared
    is shown as it is, not clamped into a change the user did not make)."""
    low = declared.minimum if declared.minimum is not None else low
    high = declared.maximum if declared.maximum is not None else high
    return min(low, value), max(high, value)


def editor_for(declared: Declared, value: Any) -> QWidget:
    """The editor of one setting, showing ``value``."""
    if declared.choices:
        combo = QComboBox()
        combo.addItems(list(declared.choices))
        combo.setCurrentText(str(value))
        return combo
    if declared.kind is bool:
        box = QCheckBox()
        box.setChecked(value)
        return box
    if declared.kind is int:
        spin = QSpinBox()
        spin.setRange(*(int(limit) for limit in _spin_range(declared, value, -_INT_LIMIT, _INT_LIMIT)))
        spin.setValue(value)
        return spin
    if declared.kind is float:
        dspin = QDoubleSpinBox()
        dspin.setDecimals(3)
        dspin.setRange(*_spin_range(declared, value, -1e9, 1e9))
        dspin.setSingleStep(0.05)
        dspin.setValue(value)
        return dspin
    line = QLineEdit(", ".join(value) if declared.kind is tuple else str(value))
    if declared.kind is tuple:
        line.setPlaceholderText("comma-separated")
    if declared.secret:
        line.setEchoMode(QLineEdit.EchoMode.Password)
    return line


def _read(widget: QWidget) -> Any:
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        return widget.value()
    assert isinstance(widget, QLineEdit)
    return widget.text()


def _tooltip(declared: Declared) -> str:
    allowed = declared.allowed()
    return f"{declared.description} ({allowed})" if allowed and not declared.choices else declared.description


class SettingsDialog(QDialog):
    def __init__(
        self,
        settings: Settings,
        paths: Paths,
        parent: QWidget | None = None,
        *,
        privacy: QWidget | None = None,
        connections: QWidget | None = None,
    ) -> None:
        """``privacy``: the Privacy tab (memdesk/ui/dialogs/privacy.py), beside the settings' own;
        ``connections``: the Connections tab (memdesk/ui/dialogs/connections.py)."""
        super().__init__(parent)
        self.setWindowTitle("MemDesk settings")
        self.resize(640, 640)
        self.settings = settings
        self.editors: dict[str, QWidget] = {}
        outer = QVBoxLayout(self)
        self.tabs = QTabWidget()
        general, general_page = self._page()
        advanced, advanced_page = self._page()
        for declared in SETTINGS.values():
            if not declared.hidden:
                self._add_row(advanced if declared.advanced else general, declared)
        general.addRow(QLabel("<b>Where your data lives</b>"))
        for label, path in (
            ("Data folder", paths.home),
            ("Database", paths.database),
            ("Agent files", paths.files_root),
            ("Models", paths.user_models),
            ("Tools", paths.user_tools),
            ("Logs", paths.logs),
        ):
            shown = QLineEdit(str(path))
            shown.setReadOnly(True)
            general.addRow(label, shown)
        self.tabs.addTab(general_page, "General")
        self.tabs.addTab(advanced_page, "Advanced")
        if privacy is not None:
            self.tabs.addTab(privacy, "Privacy")
        if connections is not None:
            self.tabs.addTab(connections, "Connections")
        outer.addWidget(self.tabs)
        outer.addWidget(QLabel("* reloads the model when changed"))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        outer.addWidget(buttons)

    @staticmethod
    def _page() -> tuple[QFormLayout, QScrollArea]:
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        holder = QWidget()
        scroll.setWidget(holder)
        return QFormLayout(holder), scroll

    def _add_row(self, form: QFormLayout, declared: Declared) -> None:
        name = declared.name
        editor = editor_for(declared, getattr(self.settings, name))
        self.editors[name] = editor
        if name == "model_path" and isinstance(editor, QLineEdit):
            editor = self._model_picker(editor)
        tooltip = _tooltip(declared)
        editor.setToolTip(literal(tooltip))
        label = QLabel(name.replace("_", " ").capitalize() + ("*" if declared.restart else ""))
        label.setToolTip(literal(tooltip))
        form.addRow(label, editor)
        hint = QLabel(declared.description)
        hint.setStyleSheet(f"color: {palette.muted()}; font-size: small")
        hint.setWordWrap(True)
        form.addRow("", hint)
        if name == "openai_base_url" and isinstance(editor, QLineEdit):
            form.addRow("", self._plain_http_note(editor))

    def _plain_http_note(self, line: QLineEdit) -> QLabel:
        """Shown while the URL typed is plain http to another machine."""
        self.url_warning = QLabel(self)  # a parent before it is shown: never a window of its own
        self.url_warning.setTextFormat(Qt.TextFormat.PlainText)
        self.url_warning.setWordWrap(True)
        self.url_warning.setStyleSheet(f"color: {palette.readable(palette.ORANGE)}")
        line.textChanged.connect(self.on_base_url_edited)
        self.on_base_url_edited(line.text())
        return self.url_warning

    @Slot(str)
    @reports_errors
    def on_base_url_edited(self, url: str) -> None:
        warning = plain_http_warning(url)
        self.url_warning.setText(warning or "")
        self.url_warning.setVisible(warning is not None)

    def _model_picker(self, line: QLineEdit) -> QWidget:
        holder = QWidget()
        row = QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(line, 1)
        browse = QPushButton("Choose .gguf…")
        row.addWidget(browse)
        browse.clicked.connect(lambda: self.on_browse_model_clicked(line))
        return holder

    @reports_errors
    def on_browse_model_clicked(self, line: QLineEdit) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a GGUF model", "", "GGUF models (*.gguf)")
        if path:
            line.setText(path)

    def changes(self) -> dict[str, Any]:
        """Settings whose edited value differs from the current one (raw values; the store checks them)."""
        changed = {}
        for name, editor in self.editors.items():
            value = _read(editor)
            if SETTINGS[name].convert(value) != getattr(self.settings, name):
                changed[name] = value
        return changed
