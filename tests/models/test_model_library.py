"""The local models, choosing one, removing one, the per-model behaviour reaching the agent, and a
switch of model keeping every agent's memory while the budget follows the new model."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from memdesk.app.agents import open_agent
from memdesk.core.base.errors import UnknownModelError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.download import DownloadResult
from memdesk.core.models.library import ModelLibrary
from memdesk.core.runtime.base import sampling
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.tools.context import AllowAll


@pytest.fixture
def paths(memdesk_home) -> Paths:
    return Paths.from_environment().ensure()


@pytest.fixture
def checkout(tmp_path):
    folder = tmp_path / "checkout-models"
    folder.mkdir()
    return folder


def downloaded(library: ModelLibrary, entry_id: str, content: bytes = b"GGUF...") -> None:
    entry = library.catalog.find(entry_id)
    path = library.paths.user_models / entry.file
    path.write_bytes(content)
    library.record_download(entry, DownloadResult(path, "ab" * 32, False, 0, len(content)))


def test_local_models_are_the_bundled_one_then_downloads_then_own_files(paths, checkout):
    library = ModelLibrary(paths, checkout_models=checkout)
    downloaded(library, "qwen3-1.7b")
    (paths.user_models / "mine.gguf").write_bytes(b"GGUF")
    (checkout / "dev.gguf").write_bytes(b"GGUF")
    (paths.user_models / "notes.txt").write_text("not a model")
    models = library.local_models()
    assert [(m.kind, m.name) for m in models] == [
        ("bundled", "SmolLM2 135M Instruct"),
        ("downloaded", "Qwen3 1.7B"),
        ("own", "mine"),
        ("own", "dev"),
    ]
    qwen = next(m for m in models if m.kind == "downloaded")
    assert qwen.licence == "Apache-2.0" and qwen.context_length == 32768 and qwen.checksum == "published"
    assert models[0].size > 50_000_000


def test_choosing_a_model_is_a_settings_change(paths, checkout):
    library = ModelLibrary(paths, checkout_models=checkout)
    downloaded(library, "qwen3-1.7b")
    choice = library.choose("qwen3-1.7b")
    assert choice.changes == {"runtime": "llamacpp", "model_path": str(paths.user_models / "Qwen3-1.7B-Q4_K_M.gguf")}
    assert library.choose("SmolLM2 135M Instruct").changes == {"runtime": "llamacpp", "model_path": ""}
    with pytest.raises(UnknownModelError, match="not downloaded yet") as raised:
        library.choose("qwen3-4b")
    assert "memdesk models get qwen3-4b" in raised.value.user_message
    with pytest.raises(UnknownModelError, match="No model called"):
        library.choose("gpt-17")


def test_the_active_model_and_the_bundled_one_cannot_be_removed(paths, checkout):
    library = ModelLibrary(paths, checkout_models=checkout)
    downloaded(library, "qwen3-1.7b")
    downloaded(library, "qwen3-4b")
    settings = replace(Settings(), model_path=str(paths.user_models / "Qwen3-1.7B-Q4_K_M.gguf"))
    with pytest.raises(UnknownModelError, match="is the active model"):
        library.remove("qwen3-1.7b", settings)
    with pytest.raises(UnknownModelError, match="ships with MemDesk"):
        library.remove("smollm2-135m", settings)
    (checkout / "dev.gguf").write_bytes(b"GGUF")
    with pytest.raises(UnknownModelError, match="not in MemDesk's models folder"):
        library.remove("dev", settings)
    removed = library.remove("qwen3-4b", settings)
    assert not removed.path.exists()
    assert "Qwen3-4B-Q4_K_M.gguf" not in (paths.user_models / "installed.json").read_text()
    assert [m.name for m in library.local_models()] == ["SmolLM2 135M Instruct", "Qwen3 1.7B", "dev"]


def test_the_active_models_catalog_behaviour_reaches_the_agent(services, paths):
    runtime = ScriptedRuntime([say("hi")], context_window=16384)
    record = services.create_agent("sam")
    downloaded(services.models, "qwen3-1.7b")
    settings = replace(services.settings, model_path=str(paths.user_models / "Qwen3-1.7B-Q4_K_M.gguf"))
    agent = open_agent(services, record, runtime, consent=AllowAll(), settings=settings)
    params = agent.settings.params
    assert (params.temperature, params.top_k, params.top_p, params.min_p) == (0.7, 20, 0.8, 0.0)
    assert agent.settings.tool_section == "json"
    assert agent.settings.max_steps == max(Settings().max_chained_steps, 6)
    agent.send_user_message("hello")
    tools_section = runtime.prompts[0][0].content.split("### Functions")[1]
    assert re.search(r'^\{"name": "send_message", "description": ', tools_section, re.MULTILINE)

    # A setting the user chose beats the catalog's default.
    services.settings_store.set("temperature", 0.2)
    services.settings_store.set("max_chained_steps", 3)
    settings = replace(services.settings, model_path=settings.model_path)
    agent = open_agent(services, record, runtime, consent=AllowAll(), settings=settings)
    assert agent.settings.params.temperature == 0.2 and agent.settings.params.top_k == 20
    assert agent.settings.max_steps == 3


def test_an_unknown_model_keeps_the_apps_defaults(services):
    record = services.create_agent("sam")
    agent = open_agent(
        services,
        record,
        ScriptedRuntime(),
        consent=AllowAll(),
        settings=replace(services.settings, model_path="/x/mine.gguf"),
    )
    assert agent.settings.params == sampling(Settings()) and agent.settings.tool_section == "signatures"


class HalfWordRuntime(ScriptedRuntime):
    """Another model: a smaller window and a tokenizer that counts two tokens per word."""

    def count_tokens(self, text: str) -> int:
        return 2 * super().count_tokens(text)

    def count_prompt(self, messages) -> int:
        return 2 * super().count_prompt(messages)


def test_switching_models_keeps_every_agents_memory_and_the_budget_follows_the_new_model(services):
    first = ScriptedRuntime(context_window=16384)
    first.enqueue(
        call("core_memory_append", "Save it.", label="human", content="Name: Leo. Teaches piano.", heartbeat=True),
        call("archival_memory_insert", "Note it.", content="Leo's recital is on May 3.", heartbeat=True),
        say("Nice to meet you, Leo!"),
    )
    record = services.create_agent("sam")
    other = services.create_agent("ada")
    agent = open_agent(services, record, first, consent=AllowAll())
    agent.send_user_message("Hi, I'm Leo. I teach piano; my recital is on May 3.")
    before = agent.budget()
    messages_before = len(services.memory.recall.all(record.id))
    blocks_before = services.memory.core.render(record.id)

    # A second answer for the memory-pressure alert this smaller window may raise.
    second = HalfWordRuntime([say("Welcome back, Leo."), say("Noted.")], context_window=12288)
    switched = open_agent(services, services.agents.get(record.id), second, consent=AllowAll())
    after = switched.budget()
    assert services.memory.core.render(record.id) == blocks_before and "Teaches piano" in blocks_before
    assert len(services.memory.recall.all(record.id)) == messages_before
    assert services.memory.archival.count(record.id) == 1
    assert services.agents.get(other.id).name == "ada"
    assert before.window == 16384 and after.window == 12288
    assert after.tokens("core_memory") > before.tokens("core_memory")  # counted by the new tokenizer
    switched.send_user_message("Do you remember me?")
    prompt = second.prompts[0][0].content
    assert "Teaches piano" in prompt
