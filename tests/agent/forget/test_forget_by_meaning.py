"""Forget also finds what is about the request in other words, by vector similarity above a
threshold (measured with the bundled all-MiniLM-L6-v2; the forget_similarity setting's default)."""

from __future__ import annotations

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.memory.forget import Forgetting


def test_paraphrases_are_found_by_meaning_and_unrelated_text_is_not(memdesk_home, clock, real_embedder):
    services = open_services(Paths.from_environment(), embedder=real_embedder, clock=clock)
    try:
        agent = services.create_agent("sam")
        archival = services.memory.archival
        archival.insert(agent.id, "Mark and Julia are getting divorced")
        archival.insert(agent.id, "I had pasta for dinner")
        archival.insert(agent.id, "My brother Paul works in Berlin")
        forgetting = Forgetting(services.db, clock, embedder=real_embedder, threshold=Settings().forget_similarity)
        preview = forgetting.preview(agent.id, "Mark's divorce")  # neither the phrase nor its words in that order
        assert preview.counts() == {"passages": 1} and preview.similar == 1
        assert preview.kinds[0].samples == ("Mark and Julia are getting divorced",)
        strict = Forgetting(services.db, clock, embedder=real_embedder, threshold=0.95)
        assert strict.preview(agent.id, "Mark's divorce").empty
    finally:
        services.close()
