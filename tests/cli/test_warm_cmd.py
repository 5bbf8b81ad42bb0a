"""`memdesk warm` (run by make install): the static prompt's KV state is on disk before the first
start, so the window's first warm-up is a disk load and the first message does not pay for it."""

from __future__ import annotations

import pytest

from desktop.app import make_runtime, open_agent, open_services
from desktop.cli.main import main
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.paths import Paths

pytestmark = pytest.mark.model


def test_warm_prepares_the_first_agents_prompt_cache_and_creates_nothing(memdesk_home, capsys):
    assert main(["warm"]) == 0
    assert "Prompt cache ready" in capsys.readouterr().err
    paths = Paths.from_environment()
    assert len(list(paths.kv_cache.glob("*.kv"))) == 1
    services = open_services(paths, embedder=HashingEmbedder())
    try:
        assert services.agents.list() == []  # the agent it borrowed was rolled back
        record = services.create_agent("Companion")  # as the window does at its first start
        runtime = make_runtime(services.settings)
        try:
            agent = open_agent(services, record, runtime, settings=services.settings)
            assert runtime.warm(agent.static_prefix()) == 0  # loaded from disk, nothing evaluated
        finally:
            runtime.close()
    finally:
        services.close()
    assert main(["warm"]) == 0  # again: a disk load, still one state file
    assert len(list(paths.kv_cache.glob("*.kv"))) == 1
