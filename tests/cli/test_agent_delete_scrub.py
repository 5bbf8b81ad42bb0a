"""Deleting an agent removes its words from the file, not only from the rows: freed pages, the
full-text index's older segments and the WAL keep deleted text until they are scrubbed."""

from __future__ import annotations

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder

SECRET = "PIN-4711-Zanzibar"


def _bytes_on_disk(paths: Paths) -> bytes:
    store = paths.database
    return b"".join(p.read_bytes() for p in (store, store.with_name(store.name + "-wal")) if p.exists())


def test_agents_delete_leaves_no_text_of_the_agent_in_a_plain_store(capsys):
    assert main(["agents", "create", "Keeper"]) == 0
    assert main(["agents", "create", "Sam", "--human", f"The user's {SECRET}"]) == 0
    paths = Paths.from_environment()
    with open_services(paths, embedder=HashingEmbedder()) as services:
        sam = services.agents.get_by_name("Sam")
        keeper = services.agents.get_by_name("Keeper")
        for number in range(300):
            for agent in (sam, keeper):
                text = f"{SECRET} note {number}" if agent is sam else f"an ordinary note {number}"
                services.memory.recall.add(
                    agent.id,
                    role="user",
                    kind="user_message",
                    content=text,
                    search_text=text,
                    created_at=services.clock.now(),
                )
    assert SECRET.encode() in _bytes_on_disk(paths)
    assert main(["agents", "delete", "Sam", "--yes"]) == 0
    assert SECRET.encode() not in _bytes_on_disk(paths)
    with open_services(paths, embedder=HashingEmbedder()) as services:
        keeper = services.agents.get_by_name("Keeper")
        assert services.memory.recall.search_text(keeper.id, "ordinary").total == 300
