"""The agent's side: knowledge_graph_search and knowledge_graph_insert through the real loop (on
the scripted runtime), the top-entities section below the messages, and the chat model's facts
under the entity grammar."""

from __future__ import annotations

import json

import pytest

from memdesk.core.agent.context import SECTIONS
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.model_facts import ModelFactExtractor, fact_spec
from memdesk.core.runtime.base import CancelToken, ChatMessage
from memdesk.core.runtime.grammar import build_call_grammar
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say


def last_result(services, agent_id: int) -> dict:
    result = [
        m
        for m in services.memory.recall.all(agent_id)
        if m.kind == "function_result" and m.function_name != "send_message"
    ][-1]
    return json.loads(result.content)


def test_the_agent_records_and_finds_facts(services, runtime, make_agent, clock):
    agent = make_agent("sam")
    runtime.enqueue(
        call("knowledge_graph_insert", "remember", True, subject="Ann", relation="lives in", object="London"), say("ok")
    )
    agent.send_user_message("My sister Ann lives in London.")
    clock.advance(days=40)
    runtime.enqueue(
        call("knowledge_graph_insert", "update", True, subject="Ann", relation="moved to", object="Paris"), say("ok")
    )
    agent.send_user_message("Ann moved to Paris!")
    runtime.enqueue(call("knowledge_graph_search", "look", True, entity="ann"), say("She lives in Paris."))
    agent.send_user_message("Where does Ann live?")
    result = last_result(services, agent.id)
    assert result["status"] == "OK"
    text = result["message"]
    assert text.startswith("Ann: thing, mentioned 0 times. Showing 2 of 2 facts (page 1/1):")
    lines = text.splitlines()[1:]
    assert lines[0].startswith("- Ann | moved to | Paris (since 2027-01-09; message of 2027-01-09 09:15 by user)")
    assert lines[1].startswith(
        "- Ann | lives in | London (2026-11-30 to 2027-01-09; message of 2026-11-30 09:15 by user)"
    )
    fact = services.memory.graph.facts(services.memory.graph.find(agent.id, "Ann").id)[0]
    assert fact.author == "agent"


def test_search_pages_and_explains_misses(services, runtime, make_agent):
    agent = make_agent("sam")
    graph = services.memory.graph
    hobbies = "chess golf tennis opera sushi jazz karate poetry origami rowing salsa yoga baking".split()
    for hobby in hobbies:
        graph.insert_fact(agent.id, "Ann", "likes", hobby, author="user")
    runtime.enqueue(call("knowledge_graph_search", "", True, entity="Ann", page=1), say("ok"))
    agent.send_user_message("more")
    assert "Showing 3 of 13 facts (page 2/2)" in last_result(services, agent.id)["message"]
    runtime.enqueue(call("knowledge_graph_search", "", True, entity="Ann", page=5), say("ok"))
    agent.send_user_message("more")
    assert last_result(services, agent.id)["status"] == "Failed"
    runtime.enqueue(call("knowledge_graph_search", "", True, entity="Anna"), say("ok"))
    agent.send_user_message("who?")
    assert last_result(services, agent.id)["message"] == "No entity named 'Anna' in the knowledge graph."
    runtime.enqueue(call("knowledge_graph_search", "", True, entity="Ann Marie"), say("ok"))
    agent.send_user_message("who?")
    assert "Known entities with a similar name: Ann" in last_result(services, agent.id)["message"]
    runtime.enqueue(call("knowledge_graph_insert", "", True, subject="Ann", relation="is", object="ann"), say("ok"))
    agent.send_user_message("x")
    assert last_result(services, agent.id)["status"] == "Failed"  # a bad insert is the model's to fix


def test_top_entities_are_shown_with_the_memory_section_and_count_in_the_budget(
    services, runtime, make_agent, say_as_user=None
):
    agent = make_agent("sam")
    assert agent.budget().tokens("knowledge") == 0
    graph = services.memory.graph
    message = services.memory.recall.add(
        agent.id, role="user", kind="user_message", content="x", search_text="x", created_at=services.clock.now()
    )
    for name in ("Ann", "Paris", "Ann"):
        graph.add_mention(
            agent.id, graph.resolve(agent.id, name, "person"), at=services.clock.now(), message_id=message.id
        )
    budget = agent.budget()
    assert [s.name for s in budget.sections] == list(SECTIONS) and budget.tokens("knowledge") > 0
    runtime.enqueue(say("hi"))
    agent.send_user_message("hello")
    memory = runtime.prompts[-1][1]  # rendered with core memory, so it never moves the queue below it
    assert "### Knowledge graph\nTop entities: Ann (person, 2x" in memory.content
    assert agent.prompt_prefix() == agent.prompt.parts().chat_messages()  # nothing live below the messages


@pytest.fixture
def queued(services, graph, analyser, clock, say):
    agent_id = services.create_agent("kim").id
    with services.db.transaction():
        services.memory.recall.add(
            agent_id,
            role="user",
            kind="user_message",
            content="x",
            created_at=clock.now(),
            search_text="My sister Ann moved to Lisbon.",
        )
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=True))
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    return extractor, agent_id


def test_the_model_may_only_link_the_entities_found(queued):
    extractor, agent_id = queued
    seen = []

    def answer(messages):
        seen.append(messages)
        return call("record_fact", "", subject="Ann", relation="Lives In!", object="Lisbon")

    runtime = ScriptedRuntime([answer], context_window=4096)
    report = extractor.run_facts(ModelFactExtractor(runtime), agent_id)
    assert report.model_facts == 0  # the same fact the parse already gave ("move to" is "live in")
    spec = fact_spec(["User", "Ann", "Lisbon", "sister"])
    assert spec.parameters["properties"]["subject"]["enum"] == ["User", "Ann", "Lisbon", "sister"]
    grammar = build_call_grammar([spec]).text
    assert '"\\"Lisbon\\""' in grammar and "record_fact" in grammar
    assert runtime.tools_seen == [["record_fact"]]
    assert extractor.pending(agent_id) == 0


def test_a_new_fact_from_the_model_is_stored_with_its_source(queued, graph):
    extractor, agent_id = queued
    before = len(graph.all_facts(agent_id))
    runtime = ScriptedRuntime(
        [call("record_fact", "", subject="Lisbon", relation="home of", object="Ann")], context_window=4096
    )
    report = extractor.run_facts(ModelFactExtractor(runtime), agent_id)
    assert report.model_facts == 1 and len(graph.all_facts(agent_id)) == before + 1
    new = [f for f in graph.all_facts(agent_id) if f.relation == "home of"][0]
    assert new.author == "extractor" and new.source()[0] == "message"


def test_a_fact_relating_an_entity_to_itself_is_asked_again_with_only_other_objects():
    runtime = ScriptedRuntime(
        [
            call("record_fact", "", subject="Lisbon", relation="sister", object="Lisbon"),
            call("record_fact", "", subject="Lisbon", relation="home of", object="Ann"),
        ],
        context_window=4096,
    )
    triples = ModelFactExtractor(runtime).extract("Ann moved to Lisbon.", "User", ["Ann", "Lisbon"])
    assert [(t.subject, t.relation, t.object) for t in triples] == [("Lisbon", "home of", "Ann")]
    retry = runtime.specs_seen[1][0].parameters["properties"]
    assert retry["subject"]["enum"] == ["Lisbon"] and retry["object"]["enum"] == ["User", "Ann"]


def test_the_agents_prompt_is_the_prefix_when_it_fits(queued):
    extractor, agent_id = queued
    prefix = [ChatMessage("system", "You are Sam."), ChatMessage("user", "hello")]
    runtime = ScriptedRuntime(
        [call("record_fact", "", subject="Ann", relation="visit", object="Lisbon")], context_window=4096
    )
    extractor.run_facts(ModelFactExtractor(runtime), agent_id, prefix=lambda _agent: prefix)
    assert runtime.prompts[0][:2] == prefix and "Knowledge graph update" in runtime.prompts[0][2].content
    small = ScriptedRuntime(
        [call("record_fact", "", subject="Ann", relation="visit", object="Lisbon")], context_window=200
    )
    assert ModelFactExtractor(small).extract(
        "Ann visited Lisbon.", "User", ["Ann", "Lisbon"], prefix=[ChatMessage("system", "word " * 300)]
    )
    assert small.prompts[0][0].content.startswith("You maintain a knowledge graph")  # too long: standalone


def test_a_failing_model_is_retried_later_and_a_cancelled_call_keeps_its_place(queued, clock):
    extractor, agent_id = queued
    broken = ScriptedRuntime([], context_window=4096)  # no answer: a ModelError
    report = extractor.run_facts(ModelFactExtractor(broken), agent_id)
    assert report.failed == 1 and extractor.failures(agent_id)[0][3].startswith("ModelError")
    clock.advance(minutes=5)

    class Cancelled(ScriptedRuntime):
        def generate_call(self, request, *, on_event=None, cancel=None):
            raise GenerationCancelled("the user is waiting")

    token = CancelToken()
    report = extractor.run_facts(ModelFactExtractor(Cancelled([], context_window=4096)), agent_id, cancel=token)
    assert report.sources == 0 and extractor.pending(agent_id, "facts") == 1
    assert extractor.failures(agent_id)[0][2] == 1  # a cancel is not an attempt
