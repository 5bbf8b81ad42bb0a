"""The settings dialog, generated from ``Settings`` and ``DESCRIPTIONS``: one field per setting,
typed by its default, described by its one-line description. Also shows where data lives."""

from __future__ import annotations

from dataclasses import fields
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

from desktop.core.net.plain_http import plain_http_warning
from desktop.paths import Paths
from desktop.settings import CHOICES, DESCRIPTIONS, Settings
from desktop.ui import qt_palette
from desktop.ui.qt_errors import reports_errors

HIDDEN = {"last_agent", "welcome_done", "bundled_model_hint", "window_layout"}  # kept by the window itself
RESTART_MODEL = {"model_path", "runtime", "openai_base_url", "openai_model", "openai_schema", "context_size", "threads", "gpu_layers", "chat_template"}


def _editor(name: str, value: Any) -> QWidget:
    if name in CHOICES:
        combo = QComboBox()
        combo.addItems(list(CHOICES[name]))
        combo.setCurrentText(str(value))
        return combo
    if isinstance(value, bool):
        box = QCheckBox()
        box.setChecked(value)
        return box
    if isinstance(value, int):
        spin = QSpinBox()
        spin.setRange(-1, 1_000_000)
        spin.setValue(value)
        return spin
    if isinstance(value, float):
        dspin = QDoubleSpinBox()
        dspin.setDecimals(3)
        dspin.setRange(0.0, 100.0)
        dspin.setSingleStep(0.05)
        dspin.setValue(value)
        return dspin
    line = QLineEdit(", ".join(value) if isinstance(value, tuple) else str(value))
    if isinstance(value, tuple):
        line.setPlaceholderText("comma-separated")
    return line


def _read(widget: QWidget) -> Any:
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        return widget.value()
    if isinstance(widget, QLineEdit):
        return widget.text()
    return widget.findChild(QLineEdit).text()


class SettingsDialog(QDialog):
    def __init__(self, settings: Settings, paths: Paths, parent: QWidget | None = None, *, privacy: QWidget | None = None) -> None:
        """``privacy``: the Privacy tab (desktop/ui/qt_privacy.py), beside the settings' own."""
        super().__init__(parent)
        self.setWindowTitle("MemDesk settings")
        self.resize(640, 640)
        self.settings = settings
        self.editors: dict[str, QWidget] = {}
        outer = QVBoxLayout(self)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        holder = QWidget()
        form = QFormLayout(holder)
        for field in fields(Settings):
            if field.name in HIDDEN:
                continue
            value = getattr(settings, field.name)
            editor = _editor(field.name, value)
            if field.name == "model_path":
                editor = self._model_picker(editor)
            editor.setToolTip(DESCRIPTIONS.get(field.name, ""))
            self.editors[field.name] = editor
            label = QLabel(field.name.replace("_", " ").capitalize() + ("*" if field.name in RESTART_MODEL else ""))
            label.setToolTip(DESCRIPTIONS.get(field.name, ""))
            form.addRow(label, editor)
            hint = QLabel(DESCRIPTIONS.get(field.name, ""))
            hint.setStyleSheet(f"color: {qt_palette.muted()}; font-size: small")
            hint.setWordWrap(True)
            form.addRow("", hint)
            if field.name == "openai_base_url":
                form.addRow("", self._plain_http_note(editor))
        form.addRow(QLabel("<b>Where your data lives</b>"))
        for label, path in (("Data folder", paths.home), ("Database", paths.database), ("Agent files", paths.files_root),
                            ("Models", paths.user_models), ("Tools", paths.user_tools), ("Logs", paths.logs)):
            shown = QLineEdit(str(path))
            shown.setReadOnly(True)
            form.addRow(label, shown)
        scroll.setWidget(holder)
        if privacy is None:
            outer.addWidget(scroll)
        else:
            self.tabs = QTabWidget()
            self.tabs.addTab(scroll, "General")
            self.tabs.addTab(privacy, "Privacy")
            outer.addWidget(self.tabs)
        outer.addWidget(QLabel("* reloads the model when changed"))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        outer.addWidget(buttons)

    def _plain_http_note(self, line: QLineEdit) -> QLabel:
        """Shown while the URL typed is plain http to another machine."""
        self.url_warning = QLabel(self)  # a parent before it is shown: never a window of its own
        self.url_warning.setTextFormat(Qt.TextFormat.PlainText)
        self.url_warning.setWordWrap(True)
        self.url_warning.setStyleSheet(f"color: {qt_palette.readable(qt_palette.ORANGE)}")
        line.textChanged.connect(self.on_base_url_edited)
        self.on_base_url_edited(line.text())
        return self.url_warning

    @Slot(str)
    @reports_errors
    def on_base_url_edited(self, url: str) -> None:
        warning = plain_http_warning(url)
        self.url_warning.setText(warning or "")
        self.url_warning.setVisible(warning is not None)

    def _model_picker(self, line: QWidget) -> QWidget:
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
        """Settings whose edited value differs from the current one (raw values; the store converts)."""
        changed = {}
        for name, editor in self.editors.items():
            value = _read(editor)
            current = getattr(self.settings, name)
            if isinstance(current, tuple):
                if tuple(v.strip() for v in str(value).split(",") if v.strip()) != current:
                    changed[name] = value
            elif value != current:
                changed[name] = value
        return changed
