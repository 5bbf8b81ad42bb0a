"""Graph expansion at scale: its queries start from the entities' ids (merged aliases included),
and the count of messages that mention anything (its idf) is kept and follows the graph."""

from __future__ import annotations

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex
from memdesk.core.retrieval.graph_expansion import expansion_scores


class Ids(dict):
    """message id -> position, for expansion_scores."""


def _mention(graph, agent_id, clock, entity, message):
    with graph.db.transaction():
        graph.add_mention(agent_id, entity, at=clock.now(), message_id=message)


def test_facts_and_mentions_of_merged_aliases_count_for_their_entity_and_hidden_ones_not(
    services, graph, agent_id, clock, say
):
    ann, annie = graph.resolve(agent_id, "Ann", "person"), graph.resolve(agent_id, "Annie", "person")
    biscuit, puppy = graph.resolve(agent_id, "Biscuit", "thing"), graph.resolve(agent_id, "the puppy", "thing")
    lisbon = graph.resolve(agent_id, "Lisbon", "place")
    graph.add_fact(agent_id, annie, "adopted", puppy, author="user")  # stated of an alias, about an alias
    graph.add_fact(agent_id, ann, "visited", lisbon, author="user")
    graph.merge(annie, ann)
    graph.merge(puppy, biscuit)
    chewed, travelled, other = say("it chewed the sofa"), say("the flight was long"), say("the weather is grey")
    _mention(graph, agent_id, clock, puppy, chewed)
    _mention(graph, agent_id, clock, lisbon, travelled)
    position = Ids({chewed: 0, travelled: 1, other: 2})
    scores = expansion_scores(services.db, agent_id, "What did Ann do?", position, 3)
    assert scores[0] > 0 and scores[1] > 0 and scores[2] == 0
    graph.delete_entity(lisbon)
    scores = expansion_scores(services.db, agent_id, "What did Ann do?", position, 3)
    assert scores[0] > 0 and scores[1] == 0


def _ranking(recall, agent_id, query):
    return [(hit.id, round(hit.score, 9)) for hit in recall.rank(agent_id, query, dense=False, graph_weight=0.5)]


def test_the_kept_count_of_mentioned_messages_follows_new_and_removed_mentions(services, graph, agent_id, clock, say):
    ann, biscuit, lisbon = (
        graph.resolve(agent_id, n, k) for n, k in (("Ann", "person"), ("Biscuit", "thing"), ("Lisbon", "place"))
    )
    graph.add_fact(agent_id, ann, "adopted", biscuit, author="user")
    graph.add_fact(agent_id, ann, "visited", lisbon, author="user")
    embedder = HashingEmbedder()
    kept = RecallMemory(services.db, embedder, ranker=MessageRanker(services.db, embedder, VectorIndex(services.db)))
    query = "What did Ann do?"

    def fresh():
        return _ranking(
            RecallMemory(services.db, embedder, ranker=MessageRanker(services.db, embedder, VectorIndex(services.db))),
            agent_id,
            query,
        )

    # Biscuit is rarer than Lisbon, so how many messages mention anything sets the two's weights
    _mention(graph, agent_id, clock, biscuit, say("it chewed the sofa"))
    for text in ("the flight was long", "the tram up the hill", "custard tarts"):
        _mention(graph, agent_id, clock, lisbon, say(text))
    assert _ranking(kept, agent_id, query) == fresh()
    for n in range(4):  # the graph grows: new messages mention things
        message = say(f"more about the trip, day {n}")
        _mention(graph, agent_id, clock, lisbon if n % 2 else ann, message)
        _mention(graph, agent_id, clock, ann, message)  # a second mention of one message counts once
        assert _ranking(kept, agent_id, query) == fresh()
    assert kept._ranker._mentioned._counts[agent_id][2] == 8
    doomed = say("a note about Lisbon, deleted later")
    _mention(graph, agent_id, clock, lisbon, doomed)
    _mention(graph, agent_id, clock, biscuit, say("the newest mention"))
    assert _ranking(kept, agent_id, query) == fresh()
    services.db.execute("DELETE FROM messages WHERE id = ?", (doomed,))  # its mention goes by cascade
    assert _ranking(kept, agent_id, query) == fresh()
    assert kept._ranker._mentioned._counts[agent_id][2] == 9


def test_opening_an_agent_counts_the_mentioned_messages_before_the_first_search(services, graph, agent_id, clock, say):
    ann = graph.resolve(agent_id, "Ann", "person")
    _mention(graph, agent_id, clock, ann, say("Ann called"))
    embedder = HashingEmbedder()
    ranker = MessageRanker(services.db, embedder, VectorIndex(services.db))
    recall = RecallMemory(services.db, embedder, ranker=ranker)
    recall.warm(agent_id)
    assert agent_id not in recall._ranker._mentioned._counts  # no graph expansion, nothing to count
    expanding = RecallMemory(services.db, embedder, ranker=ranker, graph_weight=lambda: 0.5)
    expanding.warm(agent_id)
    assert expanding._ranker._mentioned._counts[agent_id][2] == 1
