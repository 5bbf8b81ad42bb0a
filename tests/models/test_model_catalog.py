"""The curated catalog: every figure sourced, permissive licences first, the bundled model's figures
matching its file, and per-model behaviour kept as data."""

from __future__ import annotations

import json
import re

import pytest

from memdesk.core.base.errors import ConfigError
from memdesk.core.models.bundled import default_model_path
from memdesk.core.models.catalog import CATALOG_FILE, load_catalog
from memdesk.core.runtime.base import SamplingParams
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
    base = SamplingParams(temperature=0.3, top_k=40)
    tuned = profile.sampling_params(base)
    assert (tuned.temperature, tuned.top_k, tuned.top_p, tuned.min_p) == (0.7, 20, 0.8, 0.0)
    assert profile.sampling_params(base, keep=frozenset({"temperature"})).temperature == 0.3
    assert profile.tool_section == "json"
    assert profile.step_cap(4) == 6 and profile.step_cap(10) == 10  # raises, never lowers


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
