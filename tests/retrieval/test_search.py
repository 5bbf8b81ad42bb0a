"""conversation_search and archival_memory_search through the retrieval layer, on a real store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memdesk.core.base.clock import ManualClock
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, PassageRanker, VectorIndex
from memdesk.core.storage import open_database

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _say(recall, text, *, minutes, author="Ana"):
    return recall.add(
        1,
        role="user",
        kind="user_message",
        content=text,
        search_text=text,
        author=author,
        created_at=START + timedelta(minutes=minutes),
    )


def test_exact_substring_matches_rank_first_even_inside_words(db):
    recall = RecallMemory(db, HashingEmbedder())
    _say(recall, "Blueberry pancakes for breakfast again", minutes=0)
    target = _say(recall, "My locker code is XK-42z, don't forget", minutes=1)
    for n in range(30):
        _say(recall, f"code review number {n} about the locker room code", minutes=2 + n)
    page = recall.search_text(1, "xk-42Z")  # case differs; FTS would split the token
    assert page.hits[0].id == target.id
    [first] = recall.search_ranked(1, "KER CODE IS x", page_size=1)
    assert first.message.id == target.id and first.exact


def test_messages_are_embedded_lazily_and_found_by_meaning(db, real_embedder):
    recall = RecallMemory(db, real_embedder)
    _say(recall, "I adopted a puppy from the shelter last week", minutes=0)
    for n, text in enumerate(["The weather is grey today", "Work was busy with reports", "I made lasagna for dinner"]):
        _say(recall, text, minutes=10 + n)
    assert db.scalar("SELECT COUNT(*) FROM messages WHERE embedded = 0") == 4
    page = recall.search_text(1, "new dog")
    assert "puppy" in page.hits[0].content
    assert db.scalar("SELECT COUNT(*) FROM messages WHERE embedded = 0") == 0
    _say(recall, "The dog chewed my slippers", minutes=30)
    assert recall.search_text(1, "dog").hits[0].content == "The dog chewed my slippers"


def test_paging_is_stable_and_total_counted_once(db):
    recall = RecallMemory(db, HashingEmbedder())
    for n in range(12):
        _say(recall, f"garden note {n}: tomatoes need water", minutes=n)
    first = recall.search_text(1, "tomatoes", page=0)
    second = recall.search_text(1, "tomatoes", page=1)
    third = recall.search_text(1, "tomatoes", page=2)
    assert first.total == 12 and len(third.hits) == 2
    ids = [m.id for m in first.hits + second.hits + third.hits]
    assert len(set(ids)) == 12


def test_archival_search_fuses_words_and_meaning_and_sees_unembedded_text(db, real_embedder):
    archival = ArchivalMemory(db, real_embedder, ManualClock())
    archival.insert(1, "The boiler in the basement was serviced in March.")
    archival.insert(1, "Invoice 77-ALPHA covers the roof repair.")
    assert archival.search(1, "when was the heating maintained").hits[0].passage.text.startswith("The boiler")
    assert "77-ALPHA" in archival.search(1, "77-ALPHA").hits[0].passage.text
    # A chunk whose vector is not computed yet is still found by its words.
    db.execute(
        "INSERT INTO passages(agent_id, text, created_at) VALUES (1, 'Zanzibar ferry tickets are in the drawer',"
        " '2026-01-01T00:00:00+00:00')"
    )
    assert "Zanzibar" in archival.search(1, "zanzibar tickets").hits[0].passage.text


def test_vector_index_follows_writes(db):
    ranker = PassageRanker(db, HashingEmbedder())
    archival = ArchivalMemory(db, HashingEmbedder(), ManualClock(), ranker=ranker)
    ids = archival.insert(1, "first passage about owls")
    query = HashingEmbedder().embed(["owls"])[0]
    assert ranker.vector_candidates(1, query, 5)[0].tolist() == ids
    archival.delete(ids)
    assert ranker.vector_candidates(1, query, 5)[0].tolist() == []


def test_rankings_belong_to_their_store_even_when_a_freed_address_is_reused(tmp_path, monkeypatch):
    """CPython gives a new object the address of a freed one, so a cache keyed by id(db) answered
    for a store opened after another was closed. Simulated by making every id() collide; the
    rankers' caches now belong to the objects built for one store."""
    from memdesk.core.retrieval import messages as ranking_messages
    from memdesk.core.retrieval import passages as ranking_passages

    for module in (ranking_messages, ranking_passages):
        monkeypatch.setattr(module, "id", lambda _obj: 7, raising=False)
    found = {}
    for fruit, order in (("apples", ("fruit", "weather")), ("pears", ("weather", "fruit"))):
        database = open_database(tmp_path / f"{fruit}.sqlite3")
        database.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')"
        )
        recall = RecallMemory(database, HashingEmbedder())
        archival = ArchivalMemory(database, HashingEmbedder(), ManualClock())
        for n, kind in enumerate(order):  # same row counts and ids in both stores, other order
            text = f"I like {fruit}" if kind == "fruit" else "grey skies and rain"
            _say(recall, text, minutes=n)
            archival.insert(1, text)
        found[fruit] = (  # the best hit: a ranking from the other store would put the weather first
            [m.content for m in recall.search_text(1, "like").hits][:1],
            [h.passage.text for h in archival.search(1, "like").hits][:1],
        )
        database.close()
    assert found["apples"] == (["I like apples"], ["I like apples"])
    assert found["pears"] == (["I like pears"], ["I like pears"])


def test_words_are_matched_in_any_of_their_forms(db):
    """Lexical search alone (no vectors): the question's "research" and "camp" find "Researching"
    and "camping"; a user rarely repeats the exact word form they once wrote."""
    recall = RecallMemory(db, HashingEmbedder())
    research = _say(recall, "Researching adoption agencies has been a dream of mine", minutes=0)
    camping = _say(recall, "We went camping at the beach with the kids", minutes=1)
    for n in range(10):
        _say(recall, f"Lunch was fine, note {n}", minutes=2 + n)
    assert recall.rank(1, "What did I research?", dense=False)[0].id == research.id
    assert recall.rank(1, "where did we camp", dense=False)[0].id == camping.id


def test_a_question_naming_a_speaker_finds_what_that_speaker_said(db):
    """App messages have no author, but the person's name (a setting) and the agent's name say who
    wrote each. The name in "What did Ana research?" then selects Ana's own messages instead of
    matching the agent's replies that address her by name."""
    ranker = MessageRanker(db, HashingEmbedder(), VectorIndex(db), user_name=lambda: "Ana")
    recall = RecallMemory(db, HashingEmbedder(), ranker=ranker)
    db.execute("UPDATE agents SET name = 'Sam' WHERE id = 1")

    def said(role, text, minutes):
        return recall.add(
            1,
            role=role,
            kind="user_message" if role == "user" else "assistant_message",
            content=text,
            search_text=text,
            created_at=START + timedelta(days=minutes),
        )

    own = said("user", "I researched adoption agencies all week", 0)
    said("assistant", "Ana, I researched adoption agencies for you too", 1)
    for n in range(6):
        said("user" if n % 2 else "assistant", f"Small talk number {n} about the weather", 2 + n)
    assert recall.rank(1, "What did Ana research?", dense=False)[0].id == own.id
    # Without the setting the name is just a word, which the agent's replies are full of.
    ranker_without = MessageRanker(db, HashingEmbedder(), VectorIndex(db))
    unnamed = RecallMemory(db, HashingEmbedder(), ranker=ranker_without)
    assert unnamed.rank(1, "What did Ana research?", dense=False)[0].id != own.id


def test_the_newer_value_of_what_is_asked_ranks_above_the_older_one(db):
    """A knowledge update: the question is worded like the first statement, which scores best; the
    later statement of another count of the same thing still comes first."""
    recall = RecallMemory(db, HashingEmbedder())
    older = _say(recall, "So far 150 commits are merged into the main branch of the repository.", minutes=0)
    for n in range(8):
        _say(recall, f"Reviewing pull request {n} about the login form", minutes=10 + n)
    newer = _say(recall, "Update: the branch now has 165 commits merged.", minutes=60 * 24 * 7)
    ranked = [hit.id for hit in recall.rank(1, "how many commits are merged into the main branch")]
    assert ranked.index(newer.id) == ranked.index(older.id) - 1
    plain = MessageRanker(db, HashingEmbedder(), VectorIndex(db))
    hits = plain.rank(1, "So far 150 commits")
    assert hits[0].exact and hits[0].id == older.id  # a verbatim match stays first
