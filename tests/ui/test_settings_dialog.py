"""The settings dialog's rows are generated from the settings' one declaration
(memdesk/core/base/settings_table.py): which settings it shows and where, their editors' ranges and
choices, which ones reload the model."""

from __future__ import annotations

import json

from PySide6.QtWidgets import QDoubleSpinBox, QLabel, QLineEdit, QSpinBox

from memdesk.core.base.settings_table import SETTINGS, Declared
from memdesk.ui.dialogs.settings import SettingsDialog, editor_for


def _dialog(qtbot, services) -> SettingsDialog:
    dialog = SettingsDialog(services.settings, services.paths)
    qtbot.addWidget(dialog)
    return dialog


def _tab_of(dialog: SettingsDialog, name: str) -> str:
    editor = dialog.editors[name]
    return next(
        dialog.tabs.tabText(i) for i in range(dialog.tabs.count()) if dialog.tabs.widget(i).isAncestorOf(editor)
    )


def test_tuning_knobs_are_on_the_advanced_tab_and_the_rest_on_general(qtbot, services):
    dialog = _dialog(qtbot, services)
    for name, declared in SETTINGS.items():
        if declared.hidden:
            assert name not in dialog.editors
        else:
            assert _tab_of(dialog, name) == ("Advanced" if declared.advanced else "General"), name
    assert _tab_of(dialog, "temperature") == "General" and _tab_of(dialog, "top_p") == "Advanced"


def test_settings_that_reload_the_model_are_starred(qtbot, services):
    dialog = _dialog(qtbot, services)
    starred = {label.text() for label in dialog.findChildren(QLabel) if label.text().endswith("*")}
    assert starred == {
        name.replace("_", " ").capitalize() + "*" for name, d in SETTINGS.items() if d.restart and not d.hidden
    }
    assert "Context size*" in starred and "Temperature*" not in starred


def test_number_editors_take_the_declared_range(qtbot, services):
    dialog = _dialog(qtbot, services)
    temperature, context = dialog.editors["temperature"], dialog.editors["context_size"]
    assert isinstance(temperature, QDoubleSpinBox) and (temperature.minimum(), temperature.maximum()) == (0.0, 5.0)
    assert isinstance(context, QSpinBox) and (context.minimum(), context.maximum()) == (256, 1 << 20)
    context.setValue(100)  # below the range: the editor holds it at the declared minimum
    assert dialog.changes() == {"context_size": 256}


def test_a_value_stored_outside_a_range_declared_since_is_shown_and_not_changed(qtbot, services):
    services.db.execute("INSERT INTO settings(key, value) VALUES ('context_size', ?)", (json.dumps(128),))
    dialog = _dialog(qtbot, services)
    assert dialog.editors["context_size"].value() == 128
    assert dialog.changes() == {}


def test_a_secret_is_typed_unseen(qtbot):
    editor = editor_for(Declared("api_key", str, "", "Key of the server", secret=True), "sk-private")
    qtbot.addWidget(editor)
    assert isinstance(editor, QLineEdit) and editor.echoMode() == QLineEdit.EchoMode.Password
    plain = editor_for(SETTINGS["openai_model"], "qwen")
    qtbot.addWidget(plain)
    assert plain.echoMode() == QLineEdit.EchoMode.Normal
