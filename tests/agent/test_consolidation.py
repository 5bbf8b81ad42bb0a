"""Idle-time consolidation on the scripted runtime: what it reads, what it may call, the three
modes, cancel and resume, and nothing at all on a tiny conversation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memdesk.app.agents import open_consolidator
from memdesk.app.services import open_services
from memdesk.core.base.errors import ConfigError, StoreBusyError
from memdesk.core.base.paths import Paths
from memdesk.core.consolidation.consolidator import BUSY
from memdesk.core.consolidation.modes import parse_mode
from memdesk.core.consolidation.prompt import FINISH, MEMORY_FUNCTIONS
from memdesk.core.consolidation.store import ACCEPTED, APPLIED, FAILED, REJECTED, RUNNING
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.storage import open_database

KNOWN = "Lives in Portugal."
CHAT = [
    ("Hi! I'm Ana and I moved to Porto last spring with my partner Rui.", "Welcome to Porto, Ana!"),
    ("I work as a nurse at the children's hospital, mostly night shifts.", "Night shifts must be tiring."),
    ("Also I switched from coffee to green tea last month.", "Green tea it is."),
]


def finish() -> str:
    return call(FINISH, "memory is up to date")


def append(content: str, label: str = "human") -> str:
    return call("core_memory_append", "a lasting fact", label=label, content=content)


@pytest.fixture
def chatted(services, runtime, make_agent):
    """An agent that had a short real conversation (through the loop) with the user."""
    agent = make_agent("ana", human=KNOWN)
    for text, reply in CHAT:
        runtime.enqueue(say(reply))
        agent.send_user_message(text)
    runtime.prompts.clear()
    runtime.tools_seen.clear()
    return agent


def consolidator(services, agent, runtime, mode="apply", **settings):
    chosen = replace(services.settings, consolidation=mode, **settings)
    return open_consolidator(services, agent.record, runtime, settings=chosen)


def test_apply_mode_edits_memory_with_memory_functions_only(services, runtime, chatted):
    runtime.enqueue(
        append("Name: Ana. Lives in Porto with partner Rui."),
        call("archival_memory_insert", "an event", content="Ana moved to Porto in spring with Rui."),
        append("Drinks green tea, not coffee."),
        finish(),
    )
    result = consolidator(services, chatted, runtime).run()
    assert result.status == "done" and result.applied == 3 and result.changed_blocks == {"human"}
    human = services.memory.core.get(chatted.id, "human").value
    assert "Lives in Porto" in human and "green tea" in human
    assert services.memory.archival.count(chatted.id) == 1
    # The grammar held the memory functions and the finish call, nothing else, and no heartbeat.
    assert all(set(seen) == {*MEMORY_FUNCTIONS, FINISH} for seen in runtime.tools_seen)
    system, body = runtime.prompts[0]
    assert "night shifts" in body.content and "Welcome to Porto" in body.content  # both sides of the conversation
    assert '"type"' not in body.content  # plain text, not the JSON events
    # Every change is recorded as coming from consolidation, and the watermark moved to the end.
    store = consolidator(services, chatted, runtime).store
    changes = store.changes(result.run_id)
    assert [c.status for c in changes] == [APPLIED] * 3
    assert changes[0].arguments == {"label": "human", "content": "Name: Ana. Lives in Porto with partner Rui."}
    last_said = max(m.id for m in services.memory.recall.all(chatted.id) if m.kind == "assistant_call")
    assert store.watermark(chatted.id) == last_said
    # Every step starts with the same system message and transcript (a KV cache keeps them) ...
    first, second = runtime.prompts[0][1].content, runtime.prompts[1][1].content
    stable = first.index("### Memory now")
    assert runtime.prompts[0][0] == runtime.prompts[1][0] and second[:stable] == first[:stable]
    # ... and later edits show below it: the model sees memory as it is now.
    assert "Lives in Porto" in runtime.prompts[1][1].content
    assert "applied: add to human: Name: Ana." in runtime.prompts[1][1].content


def test_a_pass_builds_on_the_conversations_own_prompt_so_the_kv_cache_holds_it(services, runtime, chatted):
    runtime.enqueue(append("Name: Ana. Lives in Porto."), append("Drinks green tea."), finish())
    conversation = chatted.prompt_prefix()
    chosen = replace(services.settings, consolidation="apply")
    result = open_consolidator(services, chatted.record, runtime, settings=chosen, prefix=chatted.prompt_prefix).run()
    assert result.status == "done" and result.applied == 2
    assert "Drinks green tea." in services.memory.core.get(chatted.id, "human").value  # the edits still land
    requests = []
    for prompt in runtime.prompts:
        # Every step sends the conversation's prompt unchanged, then the pass's request below it ...
        assert prompt[: len(conversation)] == conversation and len(prompt) == len(conversation) + 1
        requests.append(prompt[-1].content)
    # ... whose top (instructions, functions) stays put while memory and the changes below it move on.
    stable = requests[0].index("### Memory now")
    assert all(r[:stable] == requests[0][:stable] for r in requests)
    assert "finish_consolidation" in requests[0] and "Name: Ana. Lives in Porto." in requests[1]
    # The messages are in the conversation above: not written out a second time.
    assert "night shifts" not in requests[0] and "Earlier messages" not in requests[0]


def test_a_pass_on_the_conversations_prompt_lists_the_messages_evicted_from_it(services, runtime, chatted):
    said = [m for m in services.memory.recall.all(chatted.id) if m.kind == "user_message"]
    services.agents.update(chatted.id, context_start_id=said[1].id)  # the first exchange was evicted
    runtime.enqueue(finish())
    chosen = replace(services.settings, consolidation="apply")
    open_consolidator(services, chatted.record, runtime, settings=chosen, prefix=chatted.prompt_prefix).run()
    request = runtime.prompts[0][-1].content
    assert "moved to Porto last spring" in request and "Welcome to Porto" in request  # out of view: listed
    assert "night shifts" not in request  # in view above: not repeated


def test_a_pass_goes_standalone_when_the_conversations_prompt_leaves_no_room(services, chatted):
    small = ScriptedRuntime(context_window=2048)
    full = chatted.prompt_prefix()
    padded = lambda: [*full, *[full[-1]] * 200]  # noqa: E731 - a conversation that fills the window
    small.enqueue(finish())
    chosen = replace(services.settings, consolidation="apply")
    open_consolidator(services, chatted.record, small, settings=chosen, prefix=padded).run()
    system, body = small.prompts[0]
    assert system.role == "system" and "consolidation process" in system.content and "night shifts" in body.content


def test_nothing_happens_on_an_empty_or_tiny_conversation(services, runtime, make_agent):
    agent = make_agent("quiet")
    assert consolidator(services, agent, runtime).run().reason == "nothing new since the last pass"
    runtime.enqueue(say("Hello!"))
    agent.send_user_message("hi there")
    calls = len(runtime.prompts)
    result = consolidator(services, agent, runtime).run()
    assert result.status == "skipped" and result.reason == "too little conversation to consolidate"
    assert len(runtime.prompts) == calls and runtime.text_prompts == []  # no model call at all
    assert consolidator(services, agent, runtime).store.runs(agent.id) == []


def test_off_mode_never_calls_the_model(services, runtime, chatted):
    pass_ = consolidator(services, chatted, runtime, mode="off")
    assert not pass_.due()
    assert pass_.run().status == "skipped" and runtime.prompts == []


def test_a_pass_is_due_at_most_every_n_user_turns(services, runtime, chatted):
    assert consolidator(services, chatted, runtime, consolidation_every_turns=4).due() is False
    assert consolidator(services, chatted, runtime, consolidation_every_turns=3).due() is True
    runtime.enqueue(finish())
    consolidator(services, chatted, runtime).run()
    assert consolidator(services, chatted, runtime, consolidation_every_turns=1).due() is False  # nothing new since
    runtime.enqueue(say("Sure."))
    chatted.send_user_message("One more thing about my week")
    assert consolidator(services, chatted, runtime, consolidation_every_turns=1).due() is True


def test_ask_mode_proposes_and_the_user_accepts_or_rejects(services, runtime, chatted):
    runtime.enqueue(
        append("Works as a night-shift nurse."),
        call("core_memory_replace", "fix", label="human", old_content="not there", new_content="x"),
        append("Partner: Rui."),
        finish(),
    )
    pass_ = consolidator(services, chatted, runtime, mode="ask")
    result = pass_.run()
    assert (result.proposed, result.failed, result.applied) == (2, 1, 0)
    assert services.memory.core.get(chatted.id, "human").value == KNOWN  # nothing written yet
    # The invalid proposal was caught against real memory and the model told so.
    assert "not found in the human block" in runtime.prompts[2][1].content
    pending = pass_.pending()
    assert [c.describe() for c in pending] == [
        "add to human: Works as a night-shift nurse.",
        "add to human: Partner: Rui.",
    ]
    accepted = pass_.accept(pending[0].id)
    rejected = pass_.reject(pending[1].id)
    assert (accepted.status, rejected.status) == (ACCEPTED, REJECTED)
    assert services.memory.core.get(chatted.id, "human").value == f"{KNOWN}\nWorks as a night-shift nurse."
    assert pass_.pending() == []
    with pytest.raises(Exception, match="already accepted"):
        pass_.accept(pending[0].id)


def test_an_accepted_proposal_that_no_longer_fits_memory_fails_cleanly(services, runtime, chatted):
    runtime.enqueue(
        call("core_memory_replace", "fix", label="human", old_content="Portugal", new_content="Porto, Portugal"),
        finish(),
    )
    pass_ = consolidator(services, chatted, runtime, mode="ask")
    pass_.run()
    (proposal,) = pass_.pending()
    services.memory.core.set_value(chatted.id, "human", "Lives in Spain now.")  # the user edits first
    outcome = pass_.accept(proposal.id)
    assert outcome.status == FAILED and "could not be applied" in outcome.result and "not found" in outcome.result
    assert services.memory.core.get(chatted.id, "human").value == "Lives in Spain now."


def test_a_new_message_cancels_the_pass_and_the_next_one_resumes_it(services, runtime, chatted):
    cancel = CancelToken()

    def interrupted(_messages):
        cancel.cancel()  # the user typed while the model was generating this call
        return append("Drinks green tea.")

    runtime.enqueue(append("Name: Ana."), interrupted)
    pass_ = consolidator(services, chatted, runtime)
    first = pass_.run(cancel)
    assert first.status == "cancelled" and first.applied == 1
    store = pass_.store
    assert store.unfinished(chatted.id).id == first.run_id and store.watermark(chatted.id) == 0
    assert services.memory.core.get(chatted.id, "human").value == f"{KNOWN}\nName: Ana."  # the finished step is kept

    runtime.enqueue(append("Drinks green tea."), finish())
    second = consolidator(services, chatted, runtime).run()
    assert second.resumed and second.run_id == first.run_id and second.status == "done"
    assert "applied: add to human: Name: Ana." in runtime.prompts[-2][1].content  # not made twice
    assert services.memory.core.get(chatted.id, "human").value == f"{KNOWN}\nName: Ana.\nDrinks green tea."
    assert store.watermark(chatted.id) > 0


@pytest.fixture
def other_writer(services):
    """A second connection that can hold the store's write lock (the graph extractor catching up);
    the pass's own connection gives up on it quickly instead of after five seconds."""
    services.db.set_busy_timeout(0.05)
    other = open_database(services.db.path)
    yield other
    other.close()  # rolls back a lock a failed test left held


def test_an_idle_pass_that_meets_a_held_write_lock_resumes_where_it_stopped_instead_of_failing(
    services, runtime, chatted, other_writer
):
    def meanwhile_the_extractor_writes(_messages):
        other_writer.execute("BEGIN IMMEDIATE")
        return append("Drinks green tea.")

    runtime.enqueue(append("Name: Ana."), meanwhile_the_extractor_writes)
    first = consolidator(services, chatted, runtime).run_when_idle()
    assert first.status == BUSY and "busy" in first.describe()
    assert services.memory.core.get(chatted.id, "human").value == f"{KNOWN}\nName: Ana."  # the finished step is kept

    other_writer.execute("ROLLBACK")
    runtime.enqueue(append("Drinks green tea."), finish())
    second = consolidator(services, chatted, runtime).run_when_idle()
    assert second.status == "done" and second.resumed
    assert services.memory.core.get(chatted.id, "human").value == f"{KNOWN}\nName: Ana.\nDrinks green tea."


def test_a_pass_the_user_asked_for_still_reports_a_busy_store(services, runtime, chatted, other_writer):
    other_writer.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreBusyError):
        consolidator(services, chatted, runtime).run()
    other_writer.execute("ROLLBACK")


def test_a_cancel_before_the_first_call_still_resumes_later(services, runtime, chatted):
    cancel = CancelToken()
    cancel.cancel()
    assert consolidator(services, chatted, runtime).run(cancel).status == "cancelled"
    assert runtime.prompts == []
    runtime.enqueue(finish())
    assert consolidator(services, chatted, runtime).run().resumed


def test_a_crash_mid_pass_loses_nothing_and_the_pass_resumes_on_the_same_messages(
    services, runtime, chatted, memdesk_home, clock
):
    def power_cut(_messages):
        raise SystemExit("power cut")  # not an error the pass handles: the process dies here

    runtime.enqueue(append("Name: Ana."), power_cut)
    with pytest.raises(SystemExit):
        consolidator(services, chatted, runtime).run()
    range_before = consolidator(services, chatted, runtime).store.unfinished(chatted.id)
    services.close()

    # A new process on the same file.
    reopened = open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock)
    try:
        fresh = ScriptedRuntime(context_window=16384)
        fresh.enqueue(append("Works nights."), finish())
        record = reopened.agents.get(chatted.id)
        pass_ = open_consolidator(reopened, record, fresh, settings=replace(reopened.settings, consolidation="apply"))
        result = pass_.run()
        assert result.resumed and result.run_id == range_before.id and result.applied == 2
        run = pass_.store.run(result.run_id)
        assert (run.first_message_id, run.last_message_id) == (
            range_before.first_message_id,
            range_before.last_message_id,
        )
        assert reopened.memory.core.get(chatted.id, "human").value == f"{KNOWN}\nName: Ana.\nWorks nights."
    finally:
        reopened.close()


def test_a_change_and_its_record_are_written_together(services, runtime, chatted, monkeypatch):
    pass_ = consolidator(services, chatted, runtime)

    def broken(*args, **kwargs):
        raise SystemExit("crash between the memory write and its record")

    monkeypatch.setattr(pass_.store, "add_change", broken)
    runtime.enqueue(append("Name: Ana."))
    with pytest.raises(SystemExit):
        pass_.run()
    assert services.memory.core.get(chatted.id, "human").value == KNOWN  # rolled back with the record
    assert pass_.store.unfinished(chatted.id).status == RUNNING


def test_unknown_functions_and_bad_json_are_failed_steps_the_model_sees(services, runtime, chatted):
    runtime.enqueue("not json", call("send_message", "hi", message="hello"), finish())
    result = consolidator(services, chatted, runtime).run()
    assert result.failed == 2
    assert "not valid JSON" in runtime.prompts[1][1].content
    assert "send_message is not available during consolidation" in runtime.prompts[2][1].content


def test_the_step_cap_ends_a_pass(services, runtime, chatted):
    pass_ = consolidator(services, chatted, runtime)
    pass_.settings = replace(pass_.settings, max_steps=2)
    runtime.enqueue(append("fact 1"), append("fact 2"), append("fact 3"))
    result = pass_.run()
    assert result.status == "done" and result.applied == 2 and runtime.pending == 1


def test_only_known_modes_are_accepted(services):
    assert parse_mode(" Ask ") == "ask"
    with pytest.raises(ConfigError):
        parse_mode("sometimes")
    with pytest.raises(ConfigError):
        services.settings_store.set("consolidation", "sometimes")
    assert services.settings_store.set("consolidation", "apply").consolidation == "apply"
