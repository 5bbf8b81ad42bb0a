from __future__ import annotations

import pytest

from testing.sync_devices import Fleet


@pytest.fixture
def fleet(tmp_path, migrated_store):
    """Devices with homes under the test's temporary folder (each a copy of a migrated store, or a
    new encrypted one), and their sync folder."""
    made = Fleet(tmp_path / "fleet", migrated_store)
    yield made
    made.close()
