"""The store keeps UTC; the model and the user see the user's time zone (the system's, or the
time_zone setting). Every test here runs in Los Angeles, eight hours behind UTC in November."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from memdesk.app.services import open_services
from memdesk.core.base.clock import ManualClock, system_zone
from memdesk.core.base.errors import ConfigError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import call, say

LOS_ANGELES = ZoneInfo("America/Los_Angeles")
#: 06:00 UTC on 30 November is 22:00 on 29 November in Los Angeles.
LATE_EVENING = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(LATE_EVENING, zone=LOS_ANGELES)


def _ask(agent, runtime, function, **arguments) -> None:
    runtime.enqueue(call(function, "looking", False, **arguments), say("ok"))
    agent.send_user_message("please look")
    runtime.clear()


def _result(services, agent) -> str:
    results = [
        m
        for m in services.memory.recall.all(agent.id)
        if m.kind == "function_result" and m.function_name != "send_message"
    ]
    return json.loads(results[-1].content)["message"]


def test_the_agent_is_told_local_time_and_the_store_keeps_utc(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Good evening!"))
    agent.send_user_message("What time is it?")
    event = services.memory.recall.all(agent.id)[0]
    assert json.loads(event.content)["time"] == "2026-11-29 22:00 PST"
    assert (
        services.db.scalar("SELECT created_at FROM messages WHERE id = ?", (event.id,)) == "2026-11-30T06:00:00+00:00"
    )
    assert event.created_at.utcoffset().total_seconds() == -8 * 3600


def test_conversation_search_date_cuts_days_in_the_users_zone(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("Noted."))
    agent.send_user_message("I planted the tulip bulbs tonight")
    _ask(agent, runtime, "conversation_search_date", start_date="2026-11-29", end_date="2026-11-29")
    found = _result(services, agent)
    assert "[2026-11-29 22:00]" in found and "tulip bulbs" in found
    _ask(agent, runtime, "conversation_search_date", start_date="2026-11-30", end_date="2026-11-30")
    assert "tulip bulbs" not in _result(services, agent)


def test_archival_and_search_results_show_local_dates(services, runtime, make_agent):
    agent = make_agent()
    services.memory.archival.insert(agent.id, "The spare key is under the blue pot.")
    _ask(agent, runtime, "archival_memory_search", query="spare key")
    assert "[2026-11-29]" in _result(services, agent)
    [passage] = services.memory.archival.list(agent.id)
    assert passage.created_at.tzinfo == LOS_ANGELES


def test_the_time_zone_setting_overrides_the_system_and_refuses_unknown_names(memdesk_home):
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        assert services.clock.zone == system_zone()
        with pytest.raises(ConfigError, match="Unknown time zone"):
            services.settings_store.set("time_zone", "Mars/Olympus_Mons")
        services.settings_store.set("time_zone", "Asia/Tokyo")
        assert services.clock.zone == ZoneInfo("Asia/Tokyo")
        assert services.clock.now().utcoffset().total_seconds() == 9 * 3600
    finally:
        services.close()


def test_the_system_zone_comes_from_tz(monkeypatch):
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    assert system_zone() == ZoneInfo("Pacific/Auckland")
