"""The graph store: aliases merge and split, contradicting facts close older ones, edits undo."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memdesk.core.base.errors import ToolError


def test_a_name_and_its_variants_are_one_entity(graph, agent_id):
    first = graph.resolve(agent_id, "the Louvre", "place")
    assert graph.resolve(agent_id, "Louvre", "place") == first
    assert graph.resolve(agent_id, "LOUVRE", "place") == first
    assert graph.find(agent_id, "louvre").name == "Louvre"


def test_a_shorter_name_becomes_an_alias_of_a_longer_one(graph, agent_id):
    full = graph.resolve(agent_id, "Ann Smith", "person")
    short = graph.resolve(agent_id, "Ann", "person")
    assert short != full and graph.root(short) == full
    entity = graph.find(agent_id, "Ann")
    assert entity.name == "Ann Smith" and entity.aliases == ("Ann",)


def test_an_ambiguous_short_name_stays_apart(graph, agent_id):
    graph.resolve(agent_id, "Ann Smith", "person")
    graph.resolve(agent_id, "Ann Lee", "person")
    ann = graph.resolve(agent_id, "Ann", "person")
    assert graph.root(ann) == ann


def test_concepts_do_not_merge_by_words(graph, agent_id):
    coffee = graph.resolve(agent_id, "coffee", "concept")
    shop = graph.resolve(agent_id, "coffee shop", "concept")
    assert graph.root(shop) == shop != coffee


def test_names_merge_by_meaning_with_an_embedder(services, agent_id, clock):
    from memdesk.core.graph.store import KnowledgeGraph

    class Embedder:  # two spellings of one city, one vector; another city far away
        def embed(self, texts):
            return [[1.0, 0.0] if t.lower() in ("nyc", "new york city") else [0.0, 1.0] for t in texts]

    graph = KnowledgeGraph(services.db, clock, Embedder())
    city = graph.resolve(agent_id, "New York City", "place")
    graph.resolve(agent_id, "Berlin", "place")
    assert graph.root(graph.resolve(agent_id, "NYC", "place")) == city


def test_a_merge_is_reversible(graph, agent_id, clock):
    ann = graph.resolve(agent_id, "Ann", "person")
    sis = graph.resolve(agent_id, "Annie", "person")
    paris = graph.resolve(agent_id, "Paris", "place")
    graph.add_fact(agent_id, sis, "lives in", paris, author="extractor")
    edit = graph.merge(sis, ann)
    assert [f.subject for f in graph.facts(ann)] == ["Ann"]
    graph.undo(edit)
    assert graph.root(sis) == sis and graph.facts(ann) == []
    graph.merge(sis, ann)
    graph.split(sis)
    assert [f.subject for f in graph.facts(sis)] == ["Annie"]


def test_a_newer_contradicting_fact_closes_the_older_one(graph, agent_id, clock):
    ann = graph.resolve(agent_id, "Ann", "person")
    london = graph.resolve(agent_id, "London", "place")
    paris = graph.resolve(agent_id, "Paris", "place")
    old = graph.add_fact(agent_id, ann, "lives in", london, author="extractor", valid_from=clock.now())
    moved = clock.now() + timedelta(days=30)
    new = graph.add_fact(agent_id, ann, "moved to", paris, author="extractor", valid_from=moved)
    facts = {f.id: f for f in graph.facts(ann)}
    assert facts[old].valid_to == moved and facts[new].current
    # Many-valued relations accumulate.
    tea = graph.resolve(agent_id, "tea", "concept")
    graph.add_fact(agent_id, ann, "likes", tea, author="extractor")
    graph.add_fact(agent_id, ann, "likes", london, author="extractor")
    assert len([f for f in graph.facts(ann) if f.relation == "likes" and f.current]) == 2


def test_an_older_fact_arriving_late_is_closed_by_the_newer_one(graph, agent_id, clock):
    ann = graph.resolve(agent_id, "Ann", "person")
    paris = graph.resolve(agent_id, "Paris", "place")
    london = graph.resolve(agent_id, "London", "place")
    graph.add_fact(agent_id, ann, "lives in", paris, author="extractor", valid_from=clock.now())
    late = graph.add_fact(
        agent_id, ann, "lives in", london, author="extractor", valid_from=clock.now() - timedelta(days=365)
    )
    assert graph.fact(late).valid_to == clock.now()
    assert [f.object for f in graph.facts(ann, current_only=True)] == ["Paris"]


def test_the_same_fact_twice_is_stored_once(graph, agent_id):
    ann, paris = graph.resolve(agent_id, "Ann", "person"), graph.resolve(agent_id, "Paris", "place")
    first = graph.add_fact(agent_id, ann, "lives in", paris, author="extractor")
    assert graph.add_fact(agent_id, ann, "lives in", paris, author="agent") == first
    assert graph.add_fact(agent_id, ann, "likes", ann, author="agent") is None


def test_edits_are_undone_exactly(graph, agent_id):
    ann = graph.resolve(agent_id, "Ann", "person")
    paris = graph.resolve(agent_id, "Paris", "place")
    fact_id = graph.add_fact(agent_id, ann, "lives in", paris, author="extractor")
    rename = graph.rename(ann, "Ann Smith", "person")
    assert graph.find(agent_id, "Ann Smith").id == ann
    graph.undo(rename)
    assert graph.entity(ann).name == "Ann"
    delete = graph.delete_entity(paris)
    assert graph.facts(ann) == [] and graph.find(agent_id, "Paris") is None
    graph.undo(delete)
    assert graph.facts(ann)[0].object == "Paris"
    change = graph.edit_fact(fact_id, relation="works in", valid_to=None)
    assert graph.fact(fact_id).relation == "works in" and graph.fact(fact_id).author == "user"
    graph.undo(change)
    assert graph.fact(fact_id).relation == "lives in" and graph.fact(fact_id).author == "extractor"
    removal = graph.delete_fact(fact_id)
    assert graph.fact(fact_id) is None
    graph.undo(removal)
    assert graph.fact(fact_id) is not None


def test_a_deleted_entity_is_not_brought_back_by_the_extractor(graph, agent_id):
    junk = graph.resolve(agent_id, "Lol", "person")
    graph.delete_entity(junk)
    assert graph.resolve(agent_id, "Lol", "person") == junk
    assert graph.find(agent_id, "Lol") is None and graph.entities(agent_id) == []


def test_inserting_a_fact_by_name_creates_entities_and_undo_removes_them(graph, agent_id):
    fact, edit = graph.insert_fact(agent_id, "Ann", "works at", "Siemens", author="user")
    assert (fact.subject, fact.relation, fact.object, fact.author) == ("Ann", "works at", "Siemens", "user")
    graph.undo(edit)
    assert graph.find(agent_id, "Siemens") is None and graph.all_facts(agent_id) == []
    with pytest.raises(ToolError):
        graph.insert_fact(agent_id, "Ann", "  ", "Bob", author="user")
    with pytest.raises(ToolError):
        graph.insert_fact(agent_id, "Ann", "is", "ann", author="user")


def test_renaming_to_another_entitys_name_is_refused(graph, agent_id):
    ann = graph.resolve(agent_id, "Ann", "person")
    graph.resolve(agent_id, "Bob", "person")
    with pytest.raises(ToolError, match="merge"):
        graph.rename(ann, "bob")


def test_top_entities_rank_by_frequency_times_recency(graph, agent_id, clock, say):
    old_favourite = graph.resolve(agent_id, "Rex", "thing")
    newcomer = graph.resolve(agent_id, "Mia", "person")
    rare = graph.resolve(agent_id, "Tokyo", "place")
    message = say("hello")
    for _ in range(6):  # often, but two months ago
        graph.add_mention(agent_id, old_favourite, at=clock.now() - timedelta(days=60), message_id=message)
    for _ in range(3):  # fairly often, this week
        graph.add_mention(agent_id, newcomer, at=clock.now() - timedelta(days=1), message_id=message)
    graph.add_mention(agent_id, rare, at=clock.now(), message_id=message)
    ranked = [e.name for e, _score in graph.top_entities(agent_id, 3, now=clock.now())]
    assert ranked == ["Mia", "Tokyo", "Rex"]
    user = graph.resolve(agent_id, "User", "self")
    for _ in range(50):
        graph.add_mention(agent_id, user, at=clock.now(), message_id=message)
    assert "User" not in [e.name for e, _ in graph.top_entities(agent_id, 5, now=clock.now())]


def test_neighbourhood_reaches_two_hops(graph, agent_id):
    ann, bob, paris, louvre = (
        graph.resolve(agent_id, n, k)
        for n, k in (("Ann", "person"), ("Bob", "person"), ("Paris", "place"), ("Louvre", "place"))
    )
    graph.add_fact(agent_id, ann, "sister of", bob, author="extractor")
    graph.add_fact(agent_id, bob, "lives in", paris, author="extractor")
    graph.add_fact(agent_id, paris, "has", louvre, author="extractor")
    nodes, facts = graph.neighbourhood(ann, 2)
    assert nodes == [ann, bob, paris] and len(facts) == 2  # Paris-Louvre would be a third hop
    nodes, facts = graph.neighbourhood(ann, 1)
    assert len(facts) == 1
