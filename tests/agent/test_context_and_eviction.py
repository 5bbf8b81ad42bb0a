"""Context budget, memory pressure, eviction with a recursive summary, and oversized content."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from memdesk.core.agent.context import SECTIONS
from memdesk.core.base.errors import ContextOverflowError
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say

WORDS = "the quick brown fox jumps over the lazy dog and keeps running far away "


def base_tokens(make_agent) -> int:
    """Prompt size of a fresh agent (system, tools, memory) on a roomy scripted runtime."""
    return make_agent("probe", runtime=ScriptedRuntime(context_window=100_000)).budget().used


def test_budget_sections_add_up_to_the_exact_prompt(services, runtime, make_agent):
    agent = make_agent(human="Name: Ana")
    runtime.enqueue(say("Hello Ana"))
    agent.send_user_message("hi there")
    budget = agent.budget()
    assert [s.name for s in budget.sections] == list(SECTIONS)
    prompt = runtime.prompts[-1]
    # Recount the next prompt independently: the sections add up to it exactly.
    assert budget.used == runtime.count_prompt(agent.prompt.parts().chat_messages())
    assert budget.used + budget.free == budget.window
    assert all(s.tokens >= 0 for s in budget.sections)
    assert budget.tokens("tools") > budget.tokens("core_memory") > 0
    assert budget.tokens("summary") == 0
    assert len(prompt) >= 2


def test_the_prompt_keeps_static_sections_first(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("one"))
    agent.send_user_message("first")
    runtime.enqueue(say("two"))
    agent.send_user_message("second")
    first, second = runtime.prompts
    # The second prompt starts with the whole first prompt: a KV cache can reuse it.
    assert second[: len(first)] == first


def test_pressure_alert_is_sent_once_until_the_next_eviction(services, make_agent):
    base = base_tokens(make_agent)
    # Room between the 75% warning and eviction for at least one whole turn (about 200 tokens).
    runtime = ScriptedRuntime(context_window=int(base / 0.55))
    agent = make_agent("pressed", runtime=runtime)
    alerts = 0
    for turn in range(6):
        runtime.enqueue(say("noted"), call("archival_memory_insert", "saving", False, content=f"fact {turn}"))
        agent.send_user_message(WORDS * 6)
        runtime.clear()
        alerts = sum(1 for m in services.memory.recall.all(agent.id) if m.kind == "system_alert")
        if alerts:
            break
    assert alerts == 1
    alert = [m for m in services.memory.recall.all(agent.id) if m.kind == "system_alert"][0]
    assert json.loads(alert.content)["type"] == "system_alert"
    assert "Save what matters" in alert.content
    assert services.agents.get(agent.id).pressure_alert_sent
    # Another turn above 75% does not repeat the alert.
    runtime.enqueue(say("still here"))
    agent.send_user_message("short")
    assert sum(1 for m in services.memory.recall.all(agent.id) if m.kind == "system_alert") == 1


def test_fixed_sections_above_the_warning_line_alert_once_however_many_evictions(services, make_agent):
    """Instructions, tools and memory alone fill 80% of the window: every eviction leaves the
    context above the warning line, so re-arming the alert there would add a step to every turn."""
    # Full blocks: the window's other fifth must still hold a turn, its recalled memories and the answer.
    blocks = {"persona": (WORDS * 26).strip(), "human": (WORDS * 26).strip()}
    base = make_agent("crowded", runtime=ScriptedRuntime(context_window=100_000), **blocks).budget().used
    runtime = ScriptedRuntime(context_window=int(base / 0.8), summaries=[f"Summary {i}." for i in range(50)])
    agent = make_agent("crowded", runtime=runtime, settings=replace(services.settings, max_answer_tokens=128))
    evictions = []
    agent.observer.on_event = lambda kind, text: evictions.append(kind) if kind == "eviction" else None
    steps = []
    for turn in range(8):
        runtime.enqueue(*[say(f"reply {turn}.{n}") for n in range(4)])
        steps.append(len(agent.send_user_message(WORDS * 3).steps))
        runtime.clear()
    alerts = [m for m in services.memory.recall.all(agent.id) if m.kind == "system_alert"]
    assert len(evictions) >= 2 and len(alerts) == 1
    assert steps.count(2) == 1 and set(steps) <= {1, 2}  # the alert's own step, once; otherwise one step a turn


def test_eviction_summarizes_recursively_and_never_overflows(services, make_agent):
    base = base_tokens(make_agent)
    runtime = ScriptedRuntime(context_window=base + 1200, summaries=[f"Summary number {i}." for i in range(50)])
    agent = make_agent("long", runtime=runtime)
    for turn in range(40):
        runtime.enqueue(say(f"reply {turn}"), say("after alert"))
        agent.send_user_message(f"turn {turn}: " + WORDS * 3)
        runtime.clear()
    record = services.agents.get(agent.id)
    assert record.evicted_count > 0
    assert record.summary.startswith(f"Note: prior messages ({record.evicted_count} of ")
    assert "The following is a summary of the previous" in record.summary
    # Recursive: a later summary was asked to fold in the earlier one.
    assert len(runtime.text_prompts) >= 2
    assert "Summary number 0." in runtime.text_prompts[1][1].content
    assert "summarize" in runtime.text_prompts[0][0].content.lower()
    # Every prompt the runtime saw fit in its window (the scripted runtime refuses otherwise)
    # and the first kept message starts a turn: no call was split from its result.
    first_kept = services.memory.recall.get(record.context_start_id)
    assert first_kept.kind in ("user_message", "heartbeat", "system_alert", "login")
    # Nothing was deleted: every turn is still in recall memory.
    assert "turn 0:" in services.memory.recall.search_text(agent.id, "turn 0:").hits[0].search_text
    assert services.memory.recall.count(agent.id) >= 40 * 3
    budget = agent.budget()
    assert budget.tokens("summary") > 0
    # The prompt may outgrow the eviction point after a turn; the next step evicts before it runs.
    seen = len(runtime.prompts)
    runtime.enqueue(say("one more"), say("after alert"), say("after another alert"))
    agent.send_user_message("one more turn")
    assert all(runtime.count_prompt(prompt) <= budget.eviction_at for prompt in runtime.prompts[seen:])


def test_a_giant_function_result_is_truncated_and_says_so(services, make_agent, memdesk_home):
    base = base_tokens(make_agent)
    runtime = ScriptedRuntime(context_window=base + 2500)
    agent = make_agent("reader", runtime=runtime)
    agent.files.root.mkdir(parents=True, exist_ok=True)
    (agent.files.root / "big.txt").write_text("\n".join(f"line {i} " + "word " * 60 for i in range(300)))
    runtime.enqueue(
        call("read_from_text_file", "read it", True, filename="big.txt", line_start=1, num_lines=200),
        say("done"),
        say("saved"),
    )
    result = agent.send_user_message("read big.txt")
    assert result.replies[0] == "done"
    stored = [m for m in services.memory.recall.all(agent.id) if m.kind == "function_result"][0]
    assert "truncated: the result had" in stored.content
    seen = runtime.prompts[1][-2].content  # the result as the model saw it, before the heartbeat
    assert "truncated" in seen
    assert runtime.count_tokens(seen) <= int(runtime.info.context_window * 0.2)


def test_a_giant_user_message_is_kept_whole_but_truncated_in_context(services, make_agent):
    base = base_tokens(make_agent)
    runtime = ScriptedRuntime(context_window=base + 3000)
    agent = make_agent("pasted", runtime=runtime)
    huge = "Remember this: " + WORDS * 3000
    runtime.enqueue(say("That was long."))
    agent.send_user_message(huge)
    stored = services.memory.recall.all(agent.id)[0]
    assert json.loads(stored.content)["message"] == huge
    assert "the full text is kept in recall memory" in runtime.prompts[0][-1].content


def test_a_window_too_small_for_the_system_prompt_is_a_clear_error(services, make_agent):
    runtime = ScriptedRuntime(context_window=500)
    agent = make_agent("tiny", runtime=runtime)
    runtime.enqueue(say("never"))
    with pytest.raises(ContextOverflowError, match="context window is 500"):
        agent.send_user_message("hello")
    # The user's message was saved before the model was asked.
    assert services.memory.recall.all(agent.id)[0].kind == "user_message"
