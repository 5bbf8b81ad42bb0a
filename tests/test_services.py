"""The composition root's Services bundle closes its store connection at the end of a with block."""

from __future__ import annotations

import pytest

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder


def _closed(services) -> bool:
    try:
        services.db.scalar("SELECT 1")
    except Exception:  # noqa: BLE001 - the driver's "closed database" error
        return True
    return False


def test_services_close_their_store_when_the_with_block_ends(memdesk_home, clock):
    with open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock) as services:
        services.create_agent("sam")
        assert not _closed(services)
    assert _closed(services)


def test_services_close_their_store_when_the_with_block_fails(memdesk_home, clock):
    with pytest.raises(KeyError):
        with open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock) as services:
            raise KeyError("a command failed")
    assert _closed(services)
