"""One search of automatic recall embeds the user's message once: the conversation's and the
archival search read the same query vector. (Embedding a query costs 15-35 ms of the section's
150 ms; the two searches used to embed two texts, the whole message for the passages and the
message without the speakers' names and punctuation for the conversation.)"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest

from memdesk.app.agents import recall_sources
from memdesk.app.services import open_services
from memdesk.core.agent.recall.search import AutoRecall, RecallSettings
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.embedding.minilm import MiniLMEmbedder

#: Far beyond what the search takes: the deadline is not what these tests look at.
PATIENT = RecallSettings.from_settings(Settings(auto_recall_timeout_ms=60_000))

SAID = [
    ("Caroline", "I went to the museum with my kids last Saturday, the dinosaur hall was a hit."),
    ("Melanie", "Pottery class again tonight; my bowl finally came out of the kiln in one piece."),
    ("Caroline", "The adoption agency called back about the meeting next week."),
    ("Melanie", "We camped by the lake and watched the meteor shower."),
] * 5
NOTES = [
    "Caroline's museum trip was on a Saturday in May.",
    "Melanie makes pottery on Tuesdays.",
    "They camp by Lake Tahoe every August.",
]
QUESTIONS = [
    "When did Caroline go to the museum?",  # names a speaker: the conversation leaves the name out
    "What did Melanie make in pottery class?",
    "Where did they camp?",  # no name, but punctuation, which the conversation's search also leaves out
]


class Asked:
    """The store's embedder, recording every text it is asked for."""

    def __init__(self, embedder) -> None:
        self._embedder = embedder
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self._embedder, name)

    def embed(self, texts):
        with self._lock:
            self.texts.extend(texts)
        return self._embedder.embed(texts)


class Passes:
    """Stands in for the loaded model's encoder and counts the texts it runs."""

    def __init__(self, encoder) -> None:
        self._encoder = encoder
        self.texts = 0

    def mean_pooled(self, sequences):
        self.texts += len(sequences)
        return self._encoder.mean_pooled(sequences)


def _store(memdesk_home, clock, new_store, embedder):
    paths = Paths.from_environment().ensure()
    new_store(paths.database)
    services = open_services(paths, embedder=embedder, clock=clock)
    agent = services.create_agent("friend")
    start = datetime(2023, 5, 1, tzinfo=UTC)
    recall = services.memory.recall
    for n, (speaker, text) in enumerate(SAID):
        recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=json.dumps({"type": "user_message", "message": text}),
            created_at=start + timedelta(hours=n),
            search_text=text,
            author=speaker,
        )
    for note in NOTES:
        services.memory.archival.insert(agent.id, note)
    recall.index_pending(agent.id)
    first_in_context = recall.all(agent.id)[-2].id
    return services, agent.id, first_in_context


def _search(auto: AutoRecall, agent_id: int, question: str, first_in_context: int, side_by_side: bool):
    """What automatic recall's section is made of (AutoRecall.gather searches so, in its thread)."""
    found, _ = auto.search_with_support(agent_id, question, first_in_context=first_in_context, parallel=side_by_side)
    return found


@pytest.mark.parametrize("side_by_side", [False, True], ids=["in-turn", "side-by-side"])
def test_both_memories_are_searched_with_one_text_of_the_question(memdesk_home, clock, new_store, side_by_side):
    asked = Asked(HashingEmbedder())
    services, agent_id, first_in_context = _store(memdesk_home, clock, new_store, asked)
    auto = AutoRecall(recall_sources(services), PATIENT)
    try:
        for question in QUESTIONS:
            asked.texts.clear()
            found = _search(auto, agent_id, question, first_in_context, side_by_side)
            assert {m.source for m in found} == {"conversation", "archival"}
            assert len(asked.texts) == 2 and len(set(asked.texts)) == 1, (question, asked.texts)
    finally:
        auto.close()
        services.close()


@pytest.mark.parametrize("side_by_side", [False, True], ids=["in-turn", "side-by-side"])
def test_one_search_of_both_memories_runs_the_model_once(memdesk_home, clock, new_store, side_by_side):
    embedder = MiniLMEmbedder()
    embedder.load()
    services, agent_id, first_in_context = _store(memdesk_home, clock, new_store, embedder)
    passes = embedder._model.encoder = Passes(embedder._model.encoder)
    auto = AutoRecall(recall_sources(services), PATIENT)
    try:
        for question in QUESTIONS:
            before = passes.texts
            found = _search(auto, agent_id, question, first_in_context, side_by_side)
            assert {m.source for m in found} == {"conversation", "archival"}
            assert passes.texts - before == 1, question
    finally:
        auto.close()
        services.close()


def test_a_query_asked_by_two_threads_at_once_is_embedded_once():
    embedder = MiniLMEmbedder()
    embedder.load()
    passes = embedder._model.encoder = Passes(embedder._model.encoder)
    together = threading.Barrier(4)
    vectors = []

    def ask() -> None:
        together.wait()
        vectors.append(embedder.embed(["When did Caroline go to the museum?"])[0])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert passes.texts == 1
    assert len(vectors) == 4 and all((v == vectors[0]).all() for v in vectors)
