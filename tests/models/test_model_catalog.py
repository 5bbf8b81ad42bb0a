"""The curated catalog: every figure sourced, permissive licences first, the bundled model's figures
matching its file, and per-model behaviour kept as data."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from memdesk.core.base.errors import ConfigError
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.bundled import default_model_path
from memdesk.core.models.catalog import CATALOG_FILE, DEFAULT_PROFILE, ModelProfile, load_catalog
from memdesk.core.runtime.gguf import read_gguf

PERMISSIVE = {"Apache-2.0", "MIT"}
SOURCED = ("size", "licence", "context_length", "architecture")


def test_the_catalog_offers_five_to_ten_models_with_every_figure_sourced():
    catalog = load_catalog()
    assert 5 <= len(catalog) <= 10
    for entry in catalog:
        for figure in SOURCED:
            assert entry.sources.get(figure), f"{entry.id}: no source for {figure}"
        if entry.repo is not None:
            assert entry.sources.get("sha256") and entry.sources.get("revision"), entry.id
            assert entry.verified_checksum and re.fullmatch(r"[0-9a-f]{64}", entry.sha256), entry.id
            assert entry.size > 100_000_000 and entry.file.endswith(".gguf") and entry.good_for
        for figure in ("sampling", "max_chained_steps", "tool_calling"):
            has_value = (
                bool(entry.profile.sampling)
                if figure == "sampling"
                else bool(entry.profile.max_chained_steps if figure == "max_chained_steps" else entry.tool_calling)
            )
            assert not has_value or entry.sources.get(figure), f"{entry.id}: {figure} without a source"


def test_every_source_kind_the_entries_cite_is_named():
    catalog = load_catalog()
    for entry in catalog:
        for figure, text in entry.sources.items():
            assert text.split(":")[0] in catalog.source_names, f"{entry.id}.{figure}: {text}"


def test_permissive_licences_come_first_and_both_machine_sizes_have_a_recommendation():
    catalog = load_catalog()
    licences = [e.licence for e in catalog]
    first_other = next(i for i, licence in enumerate(licences) if licence not in PERMISSIVE)
    assert all(licence not in PERMISSIVE for licence in licences[first_other:])
    small, large = catalog.recommended("8gb"), catalog.recommended("16gb")
    assert small and large and small.licence in PERMISSIVE and large.licence in PERMISSIVE
    # Each leaves at least half of its machine's memory to the system and other apps.
    assert small.ram_estimate(8192) < 4e9 and large.ram_estimate(8192) < 8e9 and small.size < large.size


def test_the_bundled_entry_matches_the_file_that_ships():
    catalog = load_catalog()
    bundled = catalog.bundled
    path = default_model_path()
    header = read_gguf(path)
    arch = header.architecture
    assert bundled.file == path.name and bundled.size == path.stat().st_size and bundled.default
    assert bundled.context_length == header.context_length == 8192
    assert bundled.architecture.layers == header.metadata[f"{arch}.block_count"]
    assert bundled.architecture.kv_heads == header.metadata[f"{arch}.attention.head_count_kv"]
    assert (
        bundled.architecture.head_dim
        == header.metadata[f"{arch}.embedding_length"] // header.metadata[f"{arch}.attention.head_count"]
    )


def test_the_ram_estimate_is_the_file_plus_an_f16_kv_cache_capped_at_the_window():
    entry = load_catalog().find("qwen3-1.7b")
    kv_per_token = 2 * 28 * 8 * 128 * 2
    assert entry.ram_estimate(8192) == entry.size + 8192 * kv_per_token
    assert entry.ram_estimate(10**9) == entry.size + entry.context_length * kv_per_token


def test_models_are_found_by_id_file_or_name():
    catalog = load_catalog()
    assert catalog.find("QWEN3-4B") is catalog.find("Qwen3-4B-Q4_K_M.gguf") is catalog.find("Qwen3 4B")
    assert catalog.find("nope") is None


def test_per_model_behaviour_is_data_a_users_choice_overrides():
    profile = load_catalog().find("qwen3-1.7b").profile
    base = Settings(temperature=0.3, top_k=40)
    tuned = profile.settings_in_force(base, frozenset())
    assert (tuned.temperature, tuned.top_k, tuned.top_p, tuned.min_p) == (0.7, 20, 0.8, 0.0)
    assert profile.settings_in_force(base, frozenset({"temperature"})).temperature == 0.3
    assert profile.tool_section == "json"
    # The entry's step cap only raises the steps: a capable model chains more, none is held to fewer.
    assert profile.settings_in_force(Settings(max_chained_steps=4), frozenset()).max_chained_steps == 6
    assert profile.settings_in_force(Settings(max_chained_steps=10), frozenset()).max_chained_steps == 10


def test_a_setting_in_force_is_the_users_choice_else_the_models_else_the_declared_default():
    profile = ModelProfile(sampling={"temperature": 0.2}, max_chained_steps=6, thoughts_chars=90)
    defaults = Settings()
    by_model = profile.settings_in_force(defaults, frozenset())
    assert (by_model.temperature, by_model.max_chained_steps, by_model.max_thought_chars) == (0.2, 6, 90)
    assert by_model.top_p == defaults.top_p  # what the entry leaves out stays the declared default
    users = replace(defaults, temperature=0.9, max_chained_steps=3, max_thought_chars=300)
    chosen = frozenset({"temperature", "max_chained_steps", "max_thought_chars"})
    by_user = profile.settings_in_force(users, chosen)
    assert (by_user.temperature, by_user.max_chained_steps, by_user.max_thought_chars) == (0.9, 3, 300)
    assert DEFAULT_PROFILE.settings_in_force(defaults, frozenset()) == defaults


def test_a_catalog_with_an_unknown_behaviour_field_is_refused(tmp_path):
    data = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
    data["models"][1]["behaviour"]["sampling"]["warmth"] = 3
    broken = tmp_path / "catalog.json"
    broken.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="warmth"):
        load_catalog(broken)


def test_the_catalog_page_in_docs_matches_the_catalog():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text(encoding="utf-8")
    for entry in load_catalog():
        assert f"`{entry.id}`" in page and f"{entry.size:,}" in page, entry.id
        assert entry.sha256 is None or entry.sha256[:16] in page, entry.id


def test_the_recommendation_follows_the_machines_memory():
    catalog = load_catalog()
    assert catalog.recommended_for_memory(8 * 1024**3).id == "qwen3-1.7b"
    assert catalog.recommended_for_memory(int(15.5 * 1024**3)).id == "qwen3-4b"  # a "16 GB" machine
    assert catalog.recommended_for_memory(None) is None
