"""`memdesk warm` (run by make install): the KV states of the static prompt and of the first agent's
memory section are on disk before the first start, so the window's first warm-up is two disk loads
and the first message evaluates only its own tokens."""

from __future__ import annotations

import pytest

from memdesk.app.agents import open_agent
from memdesk.app.runtimes import make_runtime
from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.agents import FIRST_AGENT

pytestmark = pytest.mark.model


def test_warm_prepares_the_first_agents_prompt_cache_and_creates_nothing(memdesk_home, capsys):
    assert main(["warm"]) == 0
    assert "Prompt cache ready" in capsys.readouterr().err
    paths = Paths.from_environment()
    assert len(list(paths.kv_cache.glob("*.kv"))) == 2  # the static prefix, and it with the memory section
    services = open_services(paths, embedder=HashingEmbedder())
    try:
        assert services.agents.list() == []  # the agent it borrowed was rolled back
        record = services.create_agent(FIRST_AGENT)  # as the window does at its first start
        runtime = make_runtime(services.settings)
        try:
            agent = open_agent(services, record, runtime, settings=services.settings)
            # Loaded from disk, nothing evaluated: the window's warm-up, which the first message waits for.
            assert runtime.warm(agent.static_prefix()) == 0
            assert runtime.warm(agent.memory_prefix()) == 0
        finally:
            runtime.close()
    finally:
        services.close()
    assert main(["warm"]) == 0  # again: disk loads, still the same two state files
    assert len(list(paths.kv_cache.glob("*.kv"))) == 2


def test_warm_prepares_the_memory_section_of_each_existing_agent(memdesk_home, capsys):
    paths = Paths.from_environment()
    services = open_services(paths, embedder=HashingEmbedder())
    try:
        record = services.create_agent("Sam")
    finally:
        services.close()
    assert main(["warm"]) == 0
    services = open_services(paths, embedder=HashingEmbedder())
    try:
        runtime = make_runtime(services.settings)
        try:
            agent = open_agent(services, services.agents.get(record.id), runtime, settings=services.settings)
            assert runtime.warm(agent.static_prefix()) == 0
            assert runtime.warm(agent.memory_prefix()) == 0
        finally:
            runtime.close()
    finally:
        services.close()
