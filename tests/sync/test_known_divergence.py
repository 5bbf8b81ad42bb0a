"""A divergence the sync state machine found on 6 December 2026 (seed
283372025438785250213178966727055839496), kept as its own case until it is fixed: two devices
append a line each to the same block between two exchanges, and after the exchange one device
shows the two lines in the other order, although all three hold the same block versions (the
versions say "tea 2" then "tea 6"; the phone's block row says the reverse). Present on main before
that day's changes too. Strict: when the fix lands this case passes and the marker must go."""

from __future__ import annotations

import pytest

from tests.sync.test_sync_state_machine import SyncMachine


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="known: one device's block row keeps its own merge order (see module doc)",
)
def test_two_devices_appending_to_one_block_show_the_same_text_after_the_exchange(tmp_path, migrated_store):
    SyncMachine.tmp_root = tmp_path
    SyncMachine.migrated = migrated_store
    machine = SyncMachine()
    try:
        machine.start(skews=[0, 0, 0])
        machine.full_exchange()
        machine.append(index=0, who="Bruno", word="tea")
        machine.late_joiner()
        machine.full_exchange()
        machine.full_exchange()
        machine.forget(index=0, who="Bruno")
        machine.append(index=2, who="Alice", word="tea")
        machine.note(index=0, who="Alice", word="tea")
        machine.tell(index=0, who="Alice", word="tea")
        machine.tell(index=0, who="Alice", word="tea")
        machine.append(index=0, who="Alice", word="tea")
        machine.full_exchange()
    finally:
        machine.teardown()
