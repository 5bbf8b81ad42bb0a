"""The window says when the model server is reached over plain http on another machine: in the
settings dialog while such a URL is typed, and while such a server runs the model (a mark in the
status bar, the full sentence once in the message bar). The scripted runtime stands in for the
server: nothing is contacted (192.0.2.10 is a documentation address)."""

from __future__ import annotations

from memdesk.ui.dialogs.settings import SettingsDialog

REMOTE = "http://192.0.2.10:8080/v1"


def test_the_settings_dialog_warns_while_the_url_typed_is_remote_plain_http(qtbot, services):
    dialog = SettingsDialog(services.settings, services.paths)
    qtbot.addWidget(dialog)
    url = dialog.editors["openai_base_url"]
    assert dialog.url_warning.isHidden()  # the default: a server on this machine
    url.setText(REMOTE)
    assert not dialog.url_warning.isHidden() and "unencrypted to 192.0.2.10" in dialog.url_warning.text()
    url.setText("https://192.0.2.10/v1")
    assert dialog.url_warning.isHidden()


def test_the_dialog_opens_with_the_warning_for_a_stored_remote_plain_http_url(qtbot, services):
    services.settings_store.set("openai_base_url", REMOTE)
    dialog = SettingsDialog(services.settings, services.paths)
    qtbot.addWidget(dialog)
    assert not dialog.url_warning.isHidden()


def test_the_window_marks_a_remote_plain_http_server_while_it_runs_the_model(
    make_window, roomy_runtime, services, qtbot, settle
):
    services.settings_store.set("runtime", "openai")
    services.settings_store.set("openai_base_url", REMOTE)
    window = make_window(roomy_runtime)
    assert not window.server_warning.isHidden() and "unencrypted to 192.0.2.10" in window.server_warning.toolTip()
    assert window.message_bar.isVisible() and "unencrypted to 192.0.2.10" in window.message_bar.label.text()
    with qtbot.waitSignal(window.model_ready, timeout=10_000):
        window.window_settings.apply({"runtime": "llamacpp"})
    settle(window)  # the settings the model runs with are read off the GUI thread
    assert window.server_warning.isHidden()


def test_no_mark_for_a_server_on_this_machine(make_window, roomy_runtime, services):
    services.settings_store.set("runtime", "openai")
    services.settings_store.set("openai_base_url", "http://127.0.0.1:8080/v1")
    window = make_window(roomy_runtime)
    assert window.server_warning.isHidden() and "unencrypted" not in window.message_bar.label.text()
