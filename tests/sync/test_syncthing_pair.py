"""Two MemDesk homes whose sync folder two real Syncthing daemons carry (loopback only, discovery,
relays and NAT off): what one device is told, the other's memory search finds."""

from __future__ import annotations

import pytest

from memdesk.core.sync import setup
from testing.syncthing import SyncthingPair

pytestmark = pytest.mark.processes

#: Bounded waits: Syncthing notices a change within a second or two on loopback.
CARRY_S = 90


def test_a_fact_told_on_one_device_is_found_by_the_others_memory_search(fleet, tmp_path):
    with SyncthingPair(tmp_path / "syncthing") as pair:
        laptop_folder, desktop_folder = pair.folders
        laptop, desktop = fleet.device("laptop"), fleet.device("desktop")
        laptop.agent()
        desktop.agent()
        code = setup.start(laptop.db, laptop.clock, laptop_folder / "memdesk", "laptop")
        laptop.sync()
        pair.scan()
        pair.wait_for(lambda: (desktop_folder / "memdesk" / "group.mds").exists(), CARRY_S, "the folder to arrive")
        setup.join(desktop.db, desktop.clock, desktop_folder / "memdesk", code, "desktop")
        desktop.sync()

        laptop.tell("My grandmother's village is called Pitões das Júnias")
        laptop.note("The spare key is under the blue flowerpot")
        laptop.append("human", "Allergic to walnuts")
        laptop.sync()
        pair.scan()

        def arrived() -> bool:
            desktop.sync()
            return bool(desktop.services.memory.recall.search_text(desktop.agent(), "grandmother village").hits)

        pair.wait_for(arrived, CARRY_S, "the laptop's message to reach the desktop")
        assert desktop.services.memory.archival.search(desktop.agent(), "spare key flowerpot").hits
        assert "Allergic to walnuts" in desktop.block("human")

        def converged() -> bool:
            for device in (desktop, laptop):
                device.sync()
            pair.scan()
            return laptop.digest() == desktop.digest()

        pair.wait_for(converged, CARRY_S, "both devices to hold the same memory")
        assert not setup.status(desktop.db)["problems"]
