"""Every setting is declared once (memdesk/core/base/settings_table.py): the store, the terminal and the
settings types of the runtime and the agent read it from there, and none keeps a default of its own."""

from __future__ import annotations

import inspect
import json
from dataclasses import MISSING, fields

import pytest

from memdesk.cli.main import main
from memdesk.cli.settings_cmd import line_for
from memdesk.core.agent.chain import ChainLimits
from memdesk.core.agent.recall.search import RecallSettings
from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.errors import ConfigError
from memdesk.core.base.settings_table import SETTINGS, Declared, Settings, declared
from memdesk.core.consolidation.modes import MODES as CONSOLIDATION_MODES
from memdesk.core.consolidation.modes import ConsolidationSettings
from memdesk.core.graph.facts import MentionsAndFacts
from memdesk.core.graph.render import TOP_ENTITIES
from memdesk.core.memory.forget.finder import DEFAULT_THRESHOLD
from memdesk.core.memory.history import DEFAULT_MAX_CHANGES
from memdesk.core.runtime.base import SamplingParams, sampling
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from memdesk.core.runtime.openai_http import OpenAIRuntime, OpenAISettings
from memdesk.core.storage.backup import Backups
from memdesk.core.storage.settings_store import SettingsStore
from memdesk.core.tools.http import HttpPolicy


def _default(dataclass, name):
    field = next(f for f in fields(dataclass) if f.name == name)
    return field.default_factory() if field.default is MISSING else field.default


def _parameter(function, name):
    return inspect.signature(function).parameters[name].default


#: (where, what it assumes when given nothing, the setting it must equal). A component built
#: without a value then behaves as the app does by default.
COPIES = [
    ("SamplingParams.temperature", _default(SamplingParams, "temperature"), "temperature"),
    ("SamplingParams.top_k", _default(SamplingParams, "top_k"), "top_k"),
    ("SamplingParams.top_p", _default(SamplingParams, "top_p"), "top_p"),
    ("SamplingParams.min_p", _default(SamplingParams, "min_p"), "min_p"),
    ("SamplingParams.repeat_penalty", _default(SamplingParams, "repeat_penalty"), "repeat_penalty"),
    ("SamplingParams.max_tokens", _default(SamplingParams, "max_tokens"), "max_answer_tokens"),
    ("LlamaSettings.context_size", _default(LlamaSettings, "context_size"), "context_size"),
    ("LlamaSettings.threads", _default(LlamaSettings, "threads"), "threads"),
    ("LlamaSettings.gpu_layers", _default(LlamaSettings, "gpu_layers"), "gpu_layers"),
    ("OpenAISettings.context_window", _default(OpenAISettings, "context_window"), "context_size"),
    ("OpenAISettings.schema_style", _default(OpenAISettings, "schema_style"), "openai_schema"),
    ("OpenAIRuntime(context_window)", _parameter(OpenAIRuntime, "context_window"), "context_size"),
    ("OpenAIRuntime(schema_style)", _parameter(OpenAIRuntime, "schema_style"), "openai_schema"),
    ("AgentSettings.max_steps", _default(AgentSettings, "max_steps"), "max_chained_steps"),
    ("AgentSettings.searches_per_turn", _default(AgentSettings, "searches_per_turn"), "max_searches_per_turn"),
    ("AgentSettings.heartbeat_minutes", _default(AgentSettings, "heartbeat_minutes"), "heartbeat_minutes"),
    ("AgentSettings.login_after_minutes", _default(AgentSettings, "login_after_minutes"), "login_after_minutes"),
    ("AgentSettings.top_entities", _default(AgentSettings, "top_entities"), "graph_top_entities"),
    ("AgentSettings.thoughts_chars", _default(AgentSettings, "thoughts_chars"), "max_thought_chars"),
    ("ChainLimits.max_steps", _default(ChainLimits, "max_steps"), "max_chained_steps"),
    ("ChainLimits.searches_per_turn", _default(ChainLimits, "searches_per_turn"), "max_searches_per_turn"),
    ("RecallSettings.enabled", _default(RecallSettings, "enabled"), "auto_recall"),
    ("RecallSettings.budget_fraction", _default(RecallSettings, "budget_fraction"), "auto_recall_budget"),
    ("RecallSettings.timeout_ms", _default(RecallSettings, "timeout_ms"), "auto_recall_timeout_ms"),
    ("ConsolidationSettings.mode", _default(ConsolidationSettings, "mode"), "consolidation"),
    ("ConsolidationSettings.every_turns", _default(ConsolidationSettings, "every_turns"), "consolidation_every_turns"),
    ("forget's DEFAULT_THRESHOLD", DEFAULT_THRESHOLD, "forget_similarity"),
    ("history's DEFAULT_MAX_CHANGES", DEFAULT_MAX_CHANGES, "history_max_changes"),
    ("render's TOP_ENTITIES", TOP_ENTITIES, "graph_top_entities"),
    ("top_entities(limit)", _parameter(MentionsAndFacts.top_entities, "limit"), "graph_top_entities"),
    ("HttpPolicy.enabled", _default(HttpPolicy, "enabled"), "http_enabled"),
    ("HttpPolicy.allowed_hosts", tuple(_default(HttpPolicy, "allowed_hosts")), "http_allowlist"),
    ("Backups(keep_daily)", _parameter(Backups, "keep_daily"), "backup_keep_daily"),
    ("Backups(keep_weekly)", _parameter(Backups, "keep_weekly"), "backup_keep_weekly"),
]


@pytest.mark.parametrize(("where", "value", "setting"), COPIES, ids=[where for where, _, _ in COPIES])
def test_a_runtime_or_agent_default_is_the_declared_one(where, value, setting):
    assert value == SETTINGS[setting].default, (
        f"{where} assumes {value!r}; the setting {setting} is declared {SETTINGS[setting].default!r}"
    )


def test_the_default_sampling_is_what_the_runtime_assumes_unasked():
    # The seed's -1 ("random") is the runtime's None.
    assert sampling(Settings()) == SamplingParams()


def test_the_words_a_component_accepts_are_the_declared_choices():
    assert CONSOLIDATION_MODES == SETTINGS["consolidation"].choices
    assert _parameter(OpenAIRuntime, "schema_style") in SETTINGS["openai_schema"].choices


def test_each_declaration_is_complete_and_its_default_allowed():
    assert list(SETTINGS) == [f.name for f in fields(Settings)]
    for name, item in SETTINGS.items():
        assert item.description, name
        assert item.kind in (bool, int, float, str, tuple), name
        assert item.validate(item.default) == item.default, name
        if item.kind in (int, float):
            assert item.minimum is not None and item.maximum is not None, f"{name}: a number needs a declared range"


def test_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(ConfigError, match="known settings: model_path, runtime"):
        declared("temprature")


def test_the_store_refuses_a_value_out_of_its_declared_range_and_keeps_the_old_one(services):
    store = services.settings_store
    store.set("temperature", 0.3)
    with pytest.raises(ConfigError, match="temperature must be from 0 to 5"):
        store.set("temperature", 9)
    with pytest.raises(ConfigError, match="backup_keep_daily must be from 0 to 3650"):
        store.set("backup_keep_daily", -1)
    with pytest.raises(ConfigError, match="temperature expects a number"):
        store.set("temperature", "nan")
    with pytest.raises(ConfigError, match="one of off, apply, ask"):
        store.set("consolidation", "sometimes")
    assert store.load().temperature == 0.3 and store.load().backup_keep_daily == 7


def test_values_an_older_store_holds_keep_their_names_and_values(services):
    # Rows as every earlier version wrote them: JSON under the setting's name. A value outside a
    # range declared since is kept (it was the user's), and an unknown name is left alone.
    rows = {"context_size": 200, "http_allowlist": ["example.org"], "consolidation": "off", "retired_setting": 3}
    for name, value in rows.items():
        services.db.execute("INSERT INTO settings(key, value) VALUES (?, ?)", (name, json.dumps(value)))
    settings = SettingsStore(services.db).load()
    assert (settings.context_size, settings.http_allowlist, settings.consolidation) == (200, ("example.org",), "off")


def test_the_terminal_lists_every_setting_with_its_description_values_and_flags(capsys):
    assert main(["settings"]) == 0
    lines = {line.split(" = ")[0]: line for line in capsys.readouterr().out.splitlines() if " = " in line}
    assert list(lines) == list(SETTINGS)
    assert lines["context_size"] == (
        "context_size = 8192\t# Context window in tokens (capped at the model's training context) (from 256 to 1048576) [reloads the model]"
    )
    assert lines["top_p"].endswith("(from 0 to 1) [advanced]")
    assert lines["window_layout"].endswith("[kept by the window]")
    assert "one of off, apply, ask" in lines["consolidation"]


def test_the_terminal_shows_the_default_beside_a_changed_value_and_says_when_the_model_reloads(capsys):
    assert main(["settings", "context_size", "4096"]) == 0
    out = capsys.readouterr().out
    assert "context_size = 4096" in out and "default 8192" in out
    assert "# context_size takes effect the next time the model loads" in out
    assert main(["settings", "heartbeat_minutes", "15"]) == 0
    assert "model loads" not in capsys.readouterr().out


def test_a_setting_reset_in_the_terminal_is_the_default_again_and_no_longer_the_users_choice(capsys, services):
    assert main(["settings", "temperature", "0.3"]) == 0
    capsys.readouterr()
    assert main(["settings", "temperature", "--reset"]) == 0
    assert capsys.readouterr().out.startswith("temperature = 0.7\t# Sampling temperature (from 0 to 5)\n")
    assert "temperature" not in services.settings_store.stored_names()
    assert main(["settings", "--reset"]) == 1
    assert "--reset takes a setting's name and no value" in capsys.readouterr().err


def test_the_terminal_refuses_what_the_window_refuses(capsys):
    assert main(["settings", "context_size", "100"]) == 1
    assert "context_size must be from 256 to 1048576, got '100'" in capsys.readouterr().err
    main(["settings", "context_size"])
    assert "context_size = 8192" in capsys.readouterr().out


def test_the_terminal_describes_every_setting_for_scripts(capsys):
    assert main(["settings", "--json"]) == 0
    listed = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    assert list(listed) == list(SETTINGS)
    assert listed["gpu_layers"]["flags"] == ["restart", "advanced"] and listed["gpu_layers"]["minimum"] == 0
    assert listed["openai_schema"]["choices"] == ["json_schema", "json_object", "none"]
    assert listed["http_allowlist"]["type"] == "list" and listed["http_allowlist"]["value"] == []


def test_a_secret_setting_is_never_printed():
    key = Declared("api_key", str, "", "Key of the server", secret=True)
    assert line_for(key, "sk-private") == "api_key = (set)\t# Key of the server [secret]"
    assert line_for(key, "") == "api_key = (not set)\t# Key of the server [secret]"
