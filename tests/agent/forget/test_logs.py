"""Logs carry no conversation text, and a forget removes any log line that still names it."""

from __future__ import annotations

import logging

from memdesk.core.graph.model_facts import _parse


def test_an_unusable_model_fact_is_logged_without_its_text(caplog):
    with caplog.at_level(logging.INFO):
        assert _parse('{"params": {"subject": "Eva", "relation": "sister of"', ["Eva", "User"]) == []
    assert "not usable" in caplog.text and "Eva" not in caplog.text


def test_a_forget_removes_the_log_lines_that_name_it_and_keeps_the_others(services, eva_agent, forgetting):
    logs = services.paths.logs
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "memdesk.log").write_text("INFO started\nWARNING tool said: Eva is coming\nINFO closed\n", encoding="utf-8")
    (logs / "crash-previous.log").write_text("Traceback: ValueError('evie')\n", encoding="utf-8")
    result = forgetting.apply(eva_agent.id, "Eva")
    assert result.file_lines_removed == 2
    assert (logs / "memdesk.log").read_text(encoding="utf-8") == "INFO started\nINFO closed\n"
    assert (logs / "crash-previous.log").read_text(encoding="utf-8") == ""
