"""The log is not encrypted with the store, so an unusable fact from the model is logged by its
kind and length, never by its text (which names people and places from the conversation)."""

from __future__ import annotations

import logging

from desktop.core.graph.model_facts import ModelFactExtractor
from desktop.core.runtime.scripted import ScriptedRuntime


def test_an_unusable_fact_is_logged_without_its_text(caplog):
    runtime = ScriptedRuntime(['{"function": "add_fact", "params": {"subject": "Evangeline", "relati'])
    with caplog.at_level(logging.INFO, logger="memdesk"):
        facts = ModelFactExtractor(runtime).extract("Evangeline moved to Lisbon", "Ann", ["Evangeline", "Lisbon"])
    assert facts == []
    assert "not usable" in caplog.text
    assert "Evangeline" not in caplog.text and "Lisbon" not in caplog.text
