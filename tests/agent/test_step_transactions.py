"""A step holds the store's write lock only for its short commit: consent dialogs, network and
generation run outside it; consent is enforced centrally for every tool that asks for it; a
stopped turn stops a tool that generates."""

from __future__ import annotations

import threading

import pytest

from memdesk.app.agents import open_agent
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.memory.core_memory import CoreMemory
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.storage import open_database
from memdesk.core.tools.context import AllowAll, DenyAll

USER_TOOL = '''
RAN = []


def water_plants(ctx, minutes: int) -> str:
    """Turn on the garden sprinkler.

    Args:
        minutes: How long to water.
    """
    RAN.append(minutes)
    return f"watered for {minutes} minutes"


water_plants.writes_store = False
TOOLS = [water_plants]
'''


class SavesWhileAsked:
    """Consent that, while "the dialog is open", has the user save core memory in the window
    (another connection to the same file, with a short busy timeout)."""

    def __init__(self, path, agent_id: int, clock) -> None:
        self.path, self.agent_id, self.clock = path, agent_id, clock
        self.saved = None

    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        other = open_database(self.path, busy_timeout=0.3)
        try:
            self.saved = CoreMemory(other, self.clock).set_value(self.agent_id, "human", "Saved by the user meanwhile")
        finally:
            other.close()
        return True


def test_the_store_is_not_locked_while_a_tool_waits_for_consent(services, runtime, make_agent, clock):
    agent = make_agent()
    consent = SavesWhileAsked(services.paths.database, agent.id, clock)
    agent.consent = consent
    runtime.enqueue(call("append_to_text_file", "write", False, filename="notes.txt", content="hello"), say("Written."))
    result = agent.send_user_message("write a note")
    assert result.steps[0].ok, result.steps[0].result
    assert consent.saved is not None and consent.saved.value == "Saved by the user meanwhile"
    assert (agent.files.root / "notes.txt").read_text() == "hello\n"


def test_message_chatgpt_is_stopped_with_the_turn(services, make_agent):
    started = threading.Event()

    class Thinking(ScriptedRuntime):
        def generate_text(self, request, *, cancel=None):
            if len(request.messages) == 2 and request.messages[1].content == "What is a tulip?":
                started.set()
                for _ in range(1000):  # a generation of about 10 s, unless stopped
                    if cancel is not None and cancel.cancelled:
                        raise GenerationCancelled("Generation stopped")
                    threading.Event().wait(0.01)
                return "A tulip is a flower."
            return super().generate_text(request, cancel=cancel)

    runtime = Thinking([call("message_chatgpt", "ask", True, message="What is a tulip?")], context_window=16384)
    agent = make_agent(runtime=runtime)
    from memdesk.core.runtime.base import CancelToken

    token = CancelToken()
    stopper = threading.Thread(target=lambda: started.wait(10) and token.cancel())
    stopper.start()
    with pytest.raises(GenerationCancelled):
        agent.send_user_message("ask the other AI", token)
    stopper.join()
    # The stopped step left nothing behind; the user's message is kept.
    assert [m.kind for m in services.memory.recall.all(agent.id)] == ["user_message"]


def test_consent_is_enforced_for_user_tools_and_a_denial_is_a_failed_call(services, runtime, make_agent, memdesk_home):
    (memdesk_home / "tools").mkdir(parents=True, exist_ok=True)
    (memdesk_home / "tools" / "garden.py").write_text(USER_TOOL)
    asked = []

    class Recorder:
        def __init__(self, answer):
            self.answer = answer

        def allow(self, agent_id, tool, summary):
            asked.append((tool, summary))
            return self.answer

    agent = make_agent(consent=Recorder(False))
    runtime.enqueue(call("water_plants", "water", False, minutes=5), say("I may not, sorry."))
    result = agent.send_user_message("water the garden")
    step = result.steps[0]
    assert not step.ok and "did not allow water_plants" in step.result
    assert asked == [("water_plants", 'run water_plants(minutes)\nits arguments (17 characters):\n{\n "minutes": 5\n}')]
    ran = agent.tools.resolve("water_plants").function.__globals__["RAN"]
    assert ran == []
    agent.consent = Recorder(True)
    runtime.enqueue(call("water_plants", "water", False, minutes=5), say("Watered."))
    assert agent.send_user_message("please, water it").steps[0].ok and ran == [5]


def test_a_disabled_feature_never_asks_the_user(services, runtime, make_agent):
    asked = []

    class Recorder:
        def allow(self, agent_id, tool, summary):
            asked.append(tool)
            return True

    agent = make_agent(consent=Recorder())
    runtime.enqueue(
        call("http_request", "fetch", False, method="GET", url="http://127.0.0.1:9/x", payload_json=""), say("no")
    )
    result = agent.send_user_message("fetch")
    assert not result.steps[0].ok and "disabled" in result.steps[0].result and asked == []


def test_a_failing_store_tool_leaves_no_partial_write(services, runtime, make_agent, monkeypatch):
    agent = make_agent()
    original = services.memory.core.append

    def half_then_fail(agent_id, label, content, **kwargs):
        original(agent_id, label, "half-written", **kwargs)
        raise RuntimeError("disk hiccup")

    monkeypatch.setattr(services.memory.core, "append", half_then_fail)
    runtime.enqueue(call("core_memory_append", "save", False, label="human", content="Ada"), say("Hi"))
    result = agent.send_user_message("I am Ada")
    assert not result.steps[0].ok and "disk hiccup" in result.steps[0].result
    assert "half-written" not in services.memory.core.get(agent.id, "human").value
    # The failed call itself was saved, so the model reads about it.
    assert [m.kind for m in services.memory.recall.all(agent.id)][1:4] == [
        "assistant_call",
        "function_result",
        "heartbeat",
    ]


def test_deny_all_is_the_default_for_an_agent_without_a_consent_policy(services, runtime):
    record = services.create_agent("plain")
    agent = open_agent(services, record, runtime)
    runtime.enqueue(call("append_to_text_file", "write", False, filename="a.txt", content="x"), say("denied"))
    assert not agent.send_user_message("write").steps[0].ok
    assert isinstance(agent.consent, DenyAll) and not isinstance(agent.consent, AllowAll)
