"""Consolidation on the real bundled model (llama.cpp in its child process): every call it makes
is a memory function or the finish call, never malformed, and the pass ends and is recorded."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from memdesk.app.agents import open_agent, open_consolidator
from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.consolidation.prompt import FINISH, MEMORY_FUNCTIONS
from memdesk.core.consolidation.store import APPLIED, FAILED
from memdesk.core.runtime.base import sampling
from memdesk.core.runtime.scripted import ScriptedRuntime, say

pytestmark = pytest.mark.model


def test_a_pass_on_the_bundled_model_makes_only_valid_memory_calls(real_embedder, clock, bundled_runtime):
    services = open_services(Paths.from_environment(), embedder=real_embedder, clock=clock)
    runtime = bundled_runtime
    try:
        record = services.create_agent("ana", human="Nothing is known about the user yet.")
        chat_runtime = ScriptedRuntime(context_window=4096)
        agent = open_agent(services, record, chat_runtime)
        for text in (
            "Hi, I'm Ana. I moved to Porto last spring with my partner Rui.",
            "I work as a nurse at the children's hospital, mostly night shifts.",
            "I stopped drinking coffee; green tea only now.",
        ):
            chat_runtime.enqueue(say("Noted."))
            agent.send_user_message(text)
        consolidation = open_consolidator(
            services, record, runtime, settings=replace(services.settings, consolidation="apply")
        )
        consolidation.settings = replace(
            consolidation.settings,
            max_steps=2,
            params=sampling(Settings(temperature=0.3, seed=3, max_answer_tokens=96)),
        )
        result = consolidation.run()
        assert result.status == "done"
        changes = consolidation.store.changes(result.run_id)
        run = consolidation.store.run(result.run_id)
        assert run.steps == len(changes) + (1 if run.steps > len(changes) else 0) and run.steps <= 2
        for change in changes:
            assert change.function in MEMORY_FUNCTIONS
            assert change.status in (APPLIED, FAILED)
            assert "not valid JSON" not in change.result  # the grammar allows no malformed call
            json.dumps(change.arguments)
        assert consolidation.store.watermark(record.id) == run.last_message_id > 0
        assert FINISH not in [c.function for c in changes]
    finally:
        services.close()


class Recording:
    """The real runtime, keeping each call's figures."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.turns = []

    def __getattr__(self, name: str):
        return getattr(self._runtime, name)

    def generate_call(self, request, **options):
        turn = self._runtime.generate_call(request, **options)
        self.turns.append(turn)
        return turn


def test_a_pass_on_the_conversations_prompt_evaluates_only_its_own_request(real_embedder, clock, bundled_runtime):
    services = open_services(Paths.from_environment(), embedder=real_embedder, clock=clock)
    runtime = bundled_runtime
    try:
        record = services.create_agent("ana", human="Nothing is known about the user yet.")
        chat_runtime = ScriptedRuntime(context_window=4096)
        scripted = open_agent(services, record, chat_runtime)
        for text in (
            "Hi, I'm Ana. I moved to Porto last spring with my partner Rui.",
            "I work as a nurse, mostly night shifts.",
        ):
            chat_runtime.enqueue(say("Noted."))
            scripted.send_user_message(text)
        agent = open_agent(services, record, runtime)
        conversation = agent.prompt_prefix()
        runtime.warm(conversation)  # the KV cache as the conversation's last step left it
        recording = Recording(runtime)
        consolidation = open_consolidator(
            services,
            record,
            recording,
            settings=replace(services.settings, consolidation="apply"),
            prefix=agent.prompt_prefix,
        )
        consolidation.settings = replace(
            consolidation.settings,
            max_steps=2,
            params=sampling(Settings(temperature=0.3, seed=3, max_answer_tokens=96)),
        )
        result = consolidation.run()
        assert result.status == "done"
        first = recording.turns[0].stats
        request = first.prompt_tokens - runtime.count_prompt(conversation)
        assert request > 0 and first.evaluated_tokens <= request + 8 < first.prompt_tokens
        for change in consolidation.store.changes(result.run_id):  # the calls stay valid on this prompt too
            assert change.function in MEMORY_FUNCTIONS and "not valid JSON" not in change.result
    finally:
        services.close()
