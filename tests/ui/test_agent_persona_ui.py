"""The window keeps an agent's persona true to its name: the New agent dialog writes the default
persona for the name typed, renaming offers to update the persona, and the block editor says
MemDesk wrote the default text (issue 22)."""

from __future__ import annotations

from memdesk.ui.panels.agents import CreateAgentDialog


def test_the_block_editor_says_memdesk_wrote_the_default_persona(make_window, roomy_runtime):
    window = make_window(roomy_runtime)
    persona = window.memory.editors["persona"]
    assert "My name is Companion." in persona.editor.toPlainText()
    assert "by MemDesk" in persona.last_change.text() and "by you" not in persona.last_change.text()


def test_renaming_offers_to_update_the_persona_and_does_it_when_accepted(
    make_window, roomy_runtime, qtbot, services, settle
):
    window = make_window(roomy_runtime)
    asked: list[tuple[str, str, str]] = []
    window.agent_actions.confirm_persona_update = lambda name, before, after: (
        asked.append((name, before, after)) or True
    )
    qtbot.waitUntil(lambda: not window.state.busy, timeout=10_000)
    window.agent_actions.rename(window.state.agent_id, "Ada")
    assert [a[0] for a in asked] == ["Ada"] and "My name is Companion." in asked[0][1]
    stored = services.memory.core.get(window.state.agent_id, "persona").value
    assert stored.startswith("My name is Ada.") and "Companion" not in stored
    settle(window)  # the editor reads the block again, off the GUI thread
    assert window.memory.editors["persona"].editor.toPlainText() == stored
    assert "by you" in window.memory.editors["persona"].last_change.text()  # the user chose this change


def test_renaming_keeps_the_persona_when_the_user_declines(make_window, roomy_runtime, services):
    window = make_window(roomy_runtime)
    window.agent_actions.confirm_persona_update = lambda *_args: False
    window.agent_actions.rename(window.state.agent_id, "Ada")
    assert services.agents.get(window.state.agent_id).name == "Ada"
    assert services.memory.core.get(window.state.agent_id, "persona").value.startswith("My name is Companion.")


def test_renaming_asks_nothing_when_the_persona_does_not_use_the_name(make_window, roomy_runtime, services):
    window = make_window(roomy_runtime)
    services.memory.core.set_value(window.state.agent_id, "persona", "I am a quiet librarian.")
    window.agent_actions.confirm_persona_update = lambda *_args: (_ for _ in ()).throw(AssertionError("asked"))
    window.agent_actions.rename(window.state.agent_id, "Ada")
    assert services.memory.core.get(window.state.agent_id, "persona").value == "I am a quiet librarian."


def test_the_new_agent_dialog_writes_the_default_persona_for_the_name_typed(qtbot, services):
    dialog = CreateAgentDialog(services.prompts)
    qtbot.addWidget(dialog)
    qtbot.keyClicks(dialog.name, "Bo")
    assert dialog.values()[1].startswith("My name is Bo.")
    dialog.persona.setPlainText("A pirate who loves maps.")  # the user's own text survives a name change
    dialog.name.setText("Bob")
    assert dialog.values() == ("Bob", "A pirate who loves maps.", "")
