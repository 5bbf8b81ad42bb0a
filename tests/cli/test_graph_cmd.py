"""`memdesk graph AGENT [ENTITY] [--json]`."""

from __future__ import annotations

import json

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder


def _conversation(name: str, *texts: str) -> None:
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        record = services.create_agent(name)
        with services.db.transaction():
            for text in texts:
                services.memory.recall.add(
                    record.id,
                    role="user",
                    kind="user_message",
                    content=text,
                    search_text=text,
                    created_at=services.clock.now(),
                )
    finally:
        services.close()


def test_graph_lists_top_entities_and_shows_one(capsys):
    _conversation("Ivo", "My sister Ann lives in Paris.", "Ann loves the Louvre.", "I bought a bike.")
    assert main(["graph", "Ivo", "--json"]) == 0
    empty = json.loads(capsys.readouterr().out)
    assert empty["entities"] == 0 and empty["top"] == []
    assert main(["graph", "Ivo", "--extract", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["extracted"]["sources"] == 3
    assert report["top"][0]["name"] == "Ann" and report["top"][0]["mentions"] == 2
    assert main(["graph", "Ivo", "ann"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Ann (person): 2 mentions")
    assert "Ann | live in | Paris (since" in out and "Ann | sister of | User" in out
    assert main(["graph", "Ivo", "Ann", "--depth", "1", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["facts"]
    assert {(f["relation"], f["object"]) for f in facts} >= {("live in", "Paris"), ("love", "Louvre")}
    assert all(f["source"].startswith("message of") for f in facts)


def test_unknown_agent_or_entity_is_one_clear_line(capsys):
    assert main(["graph", "Ghost"]) == 1
    assert "No agent named 'Ghost'" in capsys.readouterr().err
    _conversation("Ivo")
    assert main(["graph", "Ivo", "Nobody"]) == 1
    assert "no entity named 'Nobody'" in capsys.readouterr().err
