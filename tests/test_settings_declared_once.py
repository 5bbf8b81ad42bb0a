"""Every setting is declared once (memdesk/core/base/settings_table.py): the store, the terminal,
docs/settings.md and the settings types of the runtime and the agent read it from there. A
component's settings type keeps no default for a value that is a setting: it is built from a
``Settings`` by one function beside it."""

from __future__ import annotations

import ast
import json
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from memdesk.cli.main import main
from memdesk.cli.settings_cmd import line_for
from memdesk.core.agent.recall.search import RecallSettings
from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.errors import ConfigError, ModelError
from memdesk.core.base.settings_doc import settings_markdown
from memdesk.core.base.settings_table import SETTINGS, Declared, Settings, declared
from memdesk.core.consolidation.modes import MODES as CONSOLIDATION_MODES
from memdesk.core.consolidation.modes import ConsolidationSettings
from memdesk.core.runtime.base import sampling
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from memdesk.core.runtime.openai_http import OpenAISettings
from memdesk.core.storage.settings_store import SettingsStore
from memdesk.core.tools.http import HttpPolicy

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memdesk"

#: Each component settings type, built from a ``Settings`` by its one function.
BUILT_FROM_SETTINGS = {
    "SamplingParams": sampling,
    "LlamaSettings": lambda settings: LlamaSettings.from_settings(settings, settings.model_path or "bundled.gguf"),
    "OpenAISettings": OpenAISettings.from_settings,
    "AgentSettings": AgentSettings.from_settings,
    "RecallSettings": RecallSettings.from_settings,
    "ConsolidationSettings": ConsolidationSettings.from_settings,
    "HttpPolicy": HttpPolicy.from_settings,
}


def _another_value(item: Declared):
    """A value of the setting other than its default."""
    if item.choices:
        return next(choice for choice in item.choices if choice != item.default)
    if item.kind is bool:
        return not item.default
    if item.kind is int:
        return item.default + 1 if item.maximum is None or item.default < item.maximum else item.default - 1
    if item.kind is float:
        return item.default / 2 if item.default else 0.25
    if item.kind is tuple:
        return ("example.org",)
    return item.default + "x"


@pytest.mark.parametrize("name", BUILT_FROM_SETTINGS)
def test_a_components_settings_follow_every_setting_they_hold(name):
    # A field without a default is a setting's: built from other settings, it holds another value.
    build = BUILT_FROM_SETTINGS[name]
    usual = build(Settings())
    changed = build(Settings(**{setting: _another_value(item) for setting, item in SETTINGS.items()}))
    held = [f.name for f in fields(usual) if f.default is MISSING and f.default_factory is MISSING]
    assert held
    assert [f for f in held if getattr(usual, f) == getattr(changed, f)] == []


def _reads_a_setting(node: ast.AST) -> bool:
    """``node`` reads one setting's value: ``Settings().x``, ``DEFAULTS.x``, ``SETTINGS["x"]``, or
    builds a component from settings (``sampling(...)``, ``X.from_settings(...)``)."""
    if isinstance(node, ast.Name):
        return node.id == "DEFAULTS"
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id == "SETTINGS"
    if isinstance(node, ast.Attribute):
        whole = node.value
        made = isinstance(whole, ast.Call) and isinstance(whole.func, ast.Name) and whole.func.id == "Settings"
        return node.attr == "from_settings" or made
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "sampling"
    return False


def _defaults_read_from_the_declaration(path: Path) -> list[str]:
    """Parameter and dataclass-field defaults, and module constants, in ``path`` that read a
    setting: a setting's default copied into a component."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defaults: list[ast.expr] = [
        item.value for item in tree.body if isinstance(item, ast.Assign | ast.AnnAssign) and item.value
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            defaults += [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
        elif isinstance(node, ast.ClassDef):
            defaults += [item.value for item in node.body if isinstance(item, ast.AnnAssign) and item.value]
    return [
        f"{path.relative_to(ROOT)}:{default.lineno}"
        for default in defaults
        if any(_reads_a_setting(part) for part in ast.walk(default))
    ]


def test_no_component_keeps_a_default_of_its_own_for_a_setting():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        offenders += _defaults_read_from_the_declaration(path)
    assert offenders == []


def test_the_core_reads_settings_only_as_it_is_given_them():
    # One way to read a value: the composition root reads the store (Services.settings) and hands
    # the core a Settings, the values, or a function that reads them again.
    readers = [
        str(path.relative_to(ROOT))
        for path in sorted((PACKAGE / "core").rglob("*.py"))
        if "settings_store import" in path.read_text(encoding="utf-8") and path.name != "settings_store.py"
    ]
    assert readers == []


def test_the_seeds_minus_one_is_a_random_seed_for_the_runtime():
    assert sampling(Settings()).seed is None and sampling(Settings(seed=7)).seed == 7


def test_the_words_a_component_accepts_are_the_declared_choices():
    assert CONSOLIDATION_MODES == SETTINGS["consolidation"].choices
    for style in SETTINGS["openai_schema"].choices:
        assert OpenAISettings.from_settings(Settings(openai_schema=style)).schema_style == style
    with pytest.raises(ModelError, match="Unknown JSON schema style 'xml'"):
        OpenAISettings.from_settings(Settings(openai_schema="xml"))


def test_docs_settings_md_is_the_declaration_as_generated():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert page == settings_markdown(), (
        "docs/settings.md is stale: python -m memdesk.core.base.settings_doc > docs/settings.md"
    )
    assert all(f"| `{name}` |" in page for name in SETTINGS)


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
        "context_size = 8192\t# Context window in tokens (capped at the model's training context)"
        " (from 256 to 1048576) [reloads the model]"
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
