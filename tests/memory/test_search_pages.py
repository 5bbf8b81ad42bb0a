"""Conversation search and archival search page their results the same way, with one type."""

from __future__ import annotations

from memdesk.core.memory.page import Page


def test_messages_and_passages_come_in_the_same_kind_of_page(services, clock):
    agent = services.create_agent("sam")
    with services.db.transaction():
        for n in range(7):
            services.memory.recall.add(
                agent.id,
                role="user",
                kind="user_message",
                content=f"tea note {n}",
                search_text=f"tea note {n}",
                created_at=clock.now(),
            )
    services.memory.archival.insert(agent.id, "\n\n".join(f"Tea fact number {n}." for n in range(3)))

    messages = services.memory.recall.search_text(agent.id, "tea", page=1, page_size=3)
    passages = services.memory.archival.search(agent.id, "tea", page=0, page_size=2)

    assert type(messages) is Page and type(passages) is Page
    assert (messages.total, messages.page, messages.pages, len(messages.hits)) == (7, 1, 3, 3)
    assert passages.pages == -(-passages.total // 2) and len(passages.hits) == min(2, passages.total) > 0
