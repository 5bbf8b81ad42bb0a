"""The user appears in the knowledge graph under the name they gave (the ``user_name`` setting),
and the graph follows a name set or changed later: the old entity becomes an alias, so facts about
"User" still resolve, and the renaming is a change in the memory history that can be reverted
(and then stays reverted until the name changes again)."""

from __future__ import annotations

import pytest

from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
from memdesk.core.graph.model_facts import Triple
from memdesk.core.memory.revert import Reverter


@pytest.fixture
def user_name():
    """The setting as the extractor reads it, at each source."""
    return {"value": ""}


@pytest.fixture
def extractor(graph, analyser, clock, user_name):
    return GraphExtractor(
        graph, analyser, clock, ExtractionOptions(model_facts=False), user_name=lambda: user_name["value"]
    )


def extract(extractor, agent_id) -> bool:
    renamed = extractor.follow_user_name(agent_id)
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    return renamed


def facts_of(graph, agent_id, name) -> set[tuple[str, str, str]]:
    return {(f.subject, f.relation, f.object) for f in graph.facts(graph.find(agent_id, name).id, current_only=True)}


def test_a_named_user_is_in_the_graph_under_their_name(graph, extractor, agent_id, say, user_name):
    user_name["value"] = "Ada"
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    assert ("Ann", "sister of", "Ada") in facts_of(graph, agent_id, "Ann")
    assert graph.find(agent_id, "Ada").kind == "self"
    assert graph.find(agent_id, "User") is None


def test_the_name_in_a_message_and_the_speaker_are_one_entity(graph, extractor, agent_id, say, user_name):
    user_name["value"] = "Ada"
    say("Hi, I am Ada. I live in Lisbon.")
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    ada = graph.find(agent_id, "Ada")
    assert ada.kind == "self" and ada.mentions == 1
    assert [e.name for e in graph.entities(agent_id, text="Ada")] == ["Ada"]
    assert ("Ann", "sister of", "Ada") in facts_of(graph, agent_id, "Ada")


def test_without_a_name_the_user_is_user_and_a_name_given_later_renames_them(
    graph, extractor, agent_id, say, user_name, services
):
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    assert ("Ann", "sister of", "User") in facts_of(graph, agent_id, "Ann")
    user_name["value"] = "Ada"
    assert extract(extractor, agent_id)  # no new message needed
    assert ("Ann", "sister of", "Ada") in facts_of(graph, agent_id, "Ann")
    ada = graph.find(agent_id, "Ada")
    assert ada.kind == "self" and "User" in ada.aliases
    assert graph.find(agent_id, "User").id == ada.id  # what the agent or old facts call "User" is Ada
    renaming = services.memory.core.history.for_agent(agent_id, kind="graph_entity")[0]
    assert (renaming.source, renaming.label) == ("app", "User is now Ada")
    assert not extract(extractor, agent_id)  # taken once: nothing more to do


def test_a_new_name_keeps_the_old_ones_as_aliases(graph, extractor, agent_id, say, user_name):
    user_name["value"] = "Ada"
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    user_name["value"] = "Ada Lovelace"
    extract(extractor, agent_id)
    user = graph.find(agent_id, "Ada Lovelace")
    assert user.kind == "self" and graph.find(agent_id, "Ada").id == user.id
    assert ("Ann", "sister of", "Ada Lovelace") in facts_of(graph, agent_id, "Ann")
    say("I teach maths.")
    extract(extractor, agent_id)
    assert [e.name for e in graph.entities(agent_id) if e.kind == "self"] == ["Ada Lovelace"]


def test_a_person_the_texts_named_becomes_the_user_when_the_name_is_theirs(graph, extractor, agent_id, say, user_name):
    say("I met Ada at the library. My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    assert graph.find(agent_id, "Ada").kind == "person"
    user_name["value"] = "Ada"
    extract(extractor, agent_id)
    ada = graph.find(agent_id, "Ada")
    assert ada.kind == "self" and "User" in ada.aliases
    assert [e.name for e in graph.entities(agent_id, text="Ada")] == ["Ada"]


def revert_the_renaming(services, graph, agent_id) -> None:
    memory = services.memory
    renaming = memory.core.history.for_agent(agent_id, kind="graph_entity")[0]
    Reverter(memory.core.history, memory.core, memory.archival, graph).revert(renaming.id)


def test_a_renaming_is_reverted_in_the_history_and_stays_reverted(graph, extractor, agent_id, say, user_name, services):
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    user_name["value"] = "Ada"
    extract(extractor, agent_id)
    revert_the_renaming(services, graph, agent_id)
    assert ("Ann", "sister of", "User") in facts_of(graph, agent_id, "Ann")
    assert graph.find(agent_id, "Ada") is None  # hidden again
    say("I teach maths.")
    extract(extractor, agent_id)
    assert ("Ann", "sister of", "User") in facts_of(graph, agent_id, "Ann")
    user_name["value"] = "Ada Byron"  # a new name is followed again
    extract(extractor, agent_id)
    assert ("Ann", "sister of", "Ada Byron") in facts_of(graph, agent_id, "Ann")


def test_reverting_the_user_taking_over_a_person_gives_the_person_back(
    graph, extractor, agent_id, say, user_name, services
):
    say("I met Ada at the library. My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    user_name["value"] = "Ada"
    extract(extractor, agent_id)
    revert_the_renaming(services, graph, agent_id)
    assert graph.find(agent_id, "Ada").kind == "person"
    assert graph.find(agent_id, "User").kind == "self" and graph.find(agent_id, "User").aliases == ()


def test_the_chat_models_speaker_is_the_users_name_and_its_facts_land_on_the_user(
    graph, analyser, clock, agent_id, say, user_name
):
    told = []

    class FactModel:
        def extract(self, text, speaker, entities, *, prefix=(), cancel=None):
            told.append(speaker)
            return [Triple(speaker, "friend of", "Ann")]

    user_name["value"] = "Ada"
    extractor = GraphExtractor(
        graph, analyser, clock, ExtractionOptions(model_facts=True), user_name=lambda: user_name["value"]
    )
    say("Ann lives in Porto.")
    extract(extractor, agent_id)
    extractor.run_facts(FactModel(), agent_id)
    assert told == ["Ada"]
    assert ("Ada", "friend of", "Ann") in facts_of(graph, agent_id, "Ann")
    assert graph.find(agent_id, "Ada").kind == "self"


def test_a_user_entity_the_user_deleted_stays_deleted_under_a_new_name(graph, extractor, agent_id, say, user_name):
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    graph.delete_entity(graph.find(agent_id, "User").id)
    user_name["value"] = "Ada"
    assert not extract(extractor, agent_id)
    assert graph.find(agent_id, "Ada") is None and graph.find(agent_id, "User") is None


def test_what_the_agent_wrote_about_user_before_the_user_was_in_the_graph_is_about_them(
    graph, extractor, agent_id, say, user_name
):
    graph.insert_fact(agent_id, "User", "likes", "tea", author="agent")
    user_name["value"] = "Ada"
    say("My sister Ann moved to Porto.")
    extract(extractor, agent_id)
    ada = graph.find(agent_id, "Ada")
    assert ada.kind == "self" and "User" in ada.aliases
    assert ("Ada", "likes", "tea") in facts_of(graph, agent_id, "Ada")
