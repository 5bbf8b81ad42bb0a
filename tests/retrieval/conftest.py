"""A store with one agent ('sam'), for the search tests."""

from __future__ import annotations

import pytest

from memdesk.core.storage import open_database


@pytest.fixture
def db(tmp_path, new_store):
    database = open_database(new_store(tmp_path / "memdesk.sqlite3"))
    database.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')"
    )
    yield database
    database.close()
