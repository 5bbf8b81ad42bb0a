"""A store in which an agent has heard about Eva everywhere memory keeps things, and a small real
backup store over SQLite copies of it (backups_double.py)."""

from __future__ import annotations

import json

import pytest

from memdesk.core.base.clock import iso
from memdesk.core.memory.forget import Forgetting
from memdesk.core.memory.forget.files import DataFolder
from memdesk.core.runtime.scripted import call, say
from tests.agent.forget.backups_double import FolderBackups


@pytest.fixture
def eva_agent(services, runtime, make_agent):
    """Eva in messages, a call, core memory, archival, the graph (with an alias and a fact), the
    summary, an automatic-recall event, a consolidation proposal and the memory history."""
    agent = make_agent("sam")
    runtime.enqueue(
        call(
            "core_memory_append",
            "she told me about her sister",
            True,
            label="human",
            content="Sister: Eva, lives in Lisbon",
        ),
        say("How nice that Eva is in Lisbon!"),
    )
    agent.send_user_message("My sister Eva moved to Lisbon")
    runtime.enqueue(say("Tea is lovely.", "a hot drink"))
    agent.send_user_message("I like green tea")
    memory = services.memory
    first_user, second_user = [m for m in memory.recall.all(agent.id) if m.kind == "user_message"]
    memory.archival.insert(agent.id, "Eva's birthday is on 3 May; she loves orchids.")
    memory.archival.insert(agent.id, "The garden needs water every Tuesday.")
    graph = memory.graph
    with services.db.transaction():
        eva = graph.resolve(agent.id, "Eva", "person", message_id=first_user.id)
        evie = graph.resolve(agent.id, "Evie", "person")
        graph.resolve(agent.id, "Lisbon", "place")
        tea = graph.resolve(agent.id, "green tea", "thing")
        graph.add_mention(agent.id, eva, at=first_user.created_at, message_id=first_user.id)
        graph.add_mention(agent.id, tea, at=second_user.created_at, message_id=second_user.id)
    graph.merge(evie, eva)
    graph.insert_fact(agent.id, "Eva", "lives in", "Lisbon", author="extractor", message_id=first_user.id)
    services.agents.update(agent.id, summary="They talked about tea. Evie moved to Lisbon in spring.")
    now = iso(services.clock.now())
    memories = memory.recall.add(
        agent.id,
        role="user",
        kind="memories",
        created_at=services.clock.now(),
        content=json.dumps({"type": "memories", "memories": ["2024-05-01 you said: my sister Eva moved"]}),
    )
    services.db.execute(
        "INSERT INTO recall_shown(agent_id, event_id, position, source, ref, at, place, text)"
        " VALUES (?, ?, 0, 'conversation', ?, ?, 'you', ?)",
        (agent.id, memories.id, f"message:{first_user.id}", now, "my sister Eva moved to Lisbon"),
    )
    run = services.db.execute(
        "INSERT INTO consolidation_runs(agent_id, first_message_id, last_message_id, mode, status, started_at)"
        " VALUES (?, 1, 2, 'ask', 'done', ?)",
        (agent.id, now),
    ).lastrowid
    services.db.execute(
        "INSERT INTO consolidation_changes(run_id, agent_id, function, arguments, thoughts, status, created_at)"
        " VALUES (?, ?, 'core_memory_append', ?, 'her sister', 'pending', ?)",
        (run, agent.id, json.dumps({"label": "human", "content": "Eva visits in June"}), now),
    )
    return agent


@pytest.fixture
def backups(services, tmp_path) -> FolderBackups:
    return FolderBackups(services.db, tmp_path / "backups")


@pytest.fixture
def forgetting(services, backups) -> Forgetting:
    memory = services.memory
    return Forgetting(
        services.db,
        services.clock,
        embedder=services.embedder,
        history=memory.archival.history,
        graph=memory.graph,
        kv_cache=services.paths.kv_cache,
        data=DataFolder.of(services.paths, backups.folder),
        backups=backups,
        threshold=services.settings.forget_similarity,
    )
