"""While the bundled demo model answers, a quiet line says it is a toy and points to File > Models;
closing it hides it for good (issue 22)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from memdesk.core.models.catalog import machine_memory


def test_the_bundled_model_gets_a_hint_that_opens_the_models_page(make_window, roomy_runtime, qtbot):
    window = make_window(roomy_runtime)  # the settings select the bundled model (an empty model_path)
    hint = window.model_hint
    assert hint.isVisible() and "demo model" in hint.label.text()
    pick = window.services.models.catalog.recommended_for_memory(machine_memory())
    if pick is not None:
        assert pick.name in hint.label.text()
    qtbot.mouseClick(hint.models_button, Qt.MouseButton.LeftButton)
    assert window.model_actions.dialog is not None and window.model_actions.dialog.isVisible()
    window.model_actions.dialog.close()


def test_closing_the_hint_hides_it_for_good(make_window, roomy_runtime, qtbot, services):
    window = make_window(roomy_runtime)
    qtbot.mouseClick(window.model_hint.close_button, Qt.MouseButton.LeftButton)
    assert not window.model_hint.isVisible() and services.settings.bundled_model_hint is False
    window.close()
    again = make_window(roomy_runtime)
    assert not again.model_hint.isVisible()


def test_no_hint_for_another_model(make_window, roomy_runtime, services, tmp_path):
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    services.settings_store.set("model_path", str(own))  # the scripted runtime answers whatever the setting
    window = make_window(roomy_runtime)
    assert not window.model_hint.isVisible()
    services.settings_store.set("runtime", "openai")
    assert services.models.uses_bundled(services.settings) is False
