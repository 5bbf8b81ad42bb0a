"""Automatic recall searches its sources side by side under its deadline: the reply waits for the
slowest source, not for their sum. Inside a transaction of the store it searches them in turn."""

from __future__ import annotations

import threading

from memdesk.core.agent.recall.search import AutoRecall, RecallSettings, Visible
from memdesk.core.agent.recall.sources import Memory
from memdesk.core.base.settings_table import Settings

#: Far beyond what the search takes: the deadline is not what these tests look at.
PATIENT = RecallSettings.from_settings(Settings(auto_recall_timeout_ms=60_000))


class Meeting:
    """A source that answers only once every source of the search is inside ``find`` at once: a
    search that asks them in turn breaks the barrier instead of answering."""

    def __init__(self, name: str, barrier: threading.Barrier, texts: list[str]) -> None:
        self.name, self.barrier, self.texts = name, barrier, texts
        self.threads: list[str] = []

    def find(self, agent_id, query, *, first_in_context, limit):
        self.threads.append(threading.current_thread().name)
        self.barrier.wait()
        return [Memory(self.name, f"{self.name}:{n}", text, None) for n, text in enumerate(self.texts)][:limit]


def _gather(recall: AutoRecall, **options):
    return recall.gather(
        1,
        "the trip",
        first_in_context=10,
        visible=Visible(),
        budget_tokens=1000,
        count_tokens=lambda text: len(text),
        truncate=lambda text, n: text[:n],
        **options,
    )


def test_the_sources_are_searched_at_once_and_merged_as_when_searched_in_turn():
    barrier = threading.Barrier(2, timeout=10)
    conversation = Meeting("conversation", barrier, ["we camped by the lake", "the tent leaked"])
    archival = Meeting("archival", barrier, ["packing list.txt"])
    recall = AutoRecall([conversation, archival], PATIENT)
    try:
        result = _gather(recall)
        assert result.status == "placed"
        assert [m.ref for m in result.memories] == ["conversation:0", "archival:0", "conversation:1"]
        assert conversation.threads[0] != archival.threads[0]
        assert not barrier.broken
    finally:
        recall.close()


def test_inline_searches_the_sources_in_turn_in_the_calling_thread():
    """A caller inside a transaction holds the store: a source in another thread would wait for it."""
    barrier = threading.Barrier(1)  # each source passes alone
    first, second = Meeting("conversation", barrier, ["a"]), Meeting("archival", barrier, ["b"])
    recall = AutoRecall([first, second], PATIENT)
    result = _gather(recall, inline=True)
    assert [m.ref for m in result.memories] == ["conversation:0", "archival:0"]
    assert first.threads == second.threads == [threading.current_thread().name]
