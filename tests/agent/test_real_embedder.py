"""Archival memory with the real embedding model finds passages by meaning, not by shared words."""

from __future__ import annotations

from memdesk.app.agents import open_agent
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll


def test_archival_search_finds_a_paraphrase_with_the_real_embedder(real_embedder, clock):
    services = open_services(Paths.from_environment(), embedder=real_embedder, clock=clock)
    try:
        record = services.create_agent("semantic")
        archival = services.memory.archival
        for fact in (
            "The user's daughter was born in March 2019.",
            "The user dislikes spicy food and avoids chili.",
            "The user works as a nurse on night shifts at the city hospital.",
            "The user's favourite film is a 1950s Japanese drama.",
        ):
            archival.insert(record.id, fact)
        runtime = ScriptedRuntime(
            [call("archival_memory_search", "what job?", False, query="What is their profession?"), say("A nurse.")],
            context_window=16384,
        )
        # Without automatic recall, which would place the passage itself and leave no search to make.
        agent = open_agent(services, record, runtime, consent=AllowAll(), settings=Settings(auto_recall=False))
        result = agent.send_user_message("Do you remember what I do for a living?")
        first_hit = result.steps[0].result.splitlines()[1]
        assert "nurse" in first_hit
        space = services.db.query_one("SELECT model_id, dimension FROM embedding_space")
        assert tuple(space) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    finally:
        services.close()
