"""The agent acts on its own by default, and says so: a login event when it is opened after a gap,
and timed heartbeats exactly as its instructions promise."""

from __future__ import annotations

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import say


def test_login_is_due_for_a_new_agent_and_after_a_gap_only(services, runtime, make_agent, clock):
    agent = make_agent(settings=Settings(login_after_minutes=60))
    assert agent.login_due()  # never talked: MemGPT's "first login" greeting
    runtime.enqueue(say("Hello!"))
    agent.send_user_message("hi")
    assert not agent.login_due()
    clock.advance(minutes=59)
    assert not agent.login_due()
    clock.advance(minutes=2)
    assert agent.login_due()
    assert not make_agent(settings=Settings(login_after_minutes=0)).login_due()


def test_the_instructions_say_what_the_heartbeat_setting_does(services, runtime, make_agent):
    on = make_agent(settings=Settings(heartbeat_minutes=45)).static_prefix()[0].content
    assert "every 45 minutes while the user is idle" in on
    off = make_agent(settings=Settings(heartbeat_minutes=0)).static_prefix()[0].content
    assert "Timed heartbeats are off" in off and "every 0 minutes" not in off
    assert Settings().heartbeat_minutes > 0 and Settings().login_after_minutes > 0  # on by default
