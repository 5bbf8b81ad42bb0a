"""The app's process builds the llama.cpp runtime's settings and hands them to the model's child
process; only the child may load the native library (a crash there must not take the window)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules_loaded_by(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return set(result.stdout.split())


def test_building_the_settings_loads_no_native_library():
    loaded = _modules_loaded_by(
        "from memdesk.core.base.settings_table import Settings\n"
        "from memdesk.core.runtime.llamacpp.settings import LlamaSettings\n"
        "LlamaSettings.from_settings(Settings(), 'model.gguf')"
    )
    assert "memdesk.core.runtime.llamacpp.settings" in loaded
    assert "llama_cpp" not in loaded
    assert "memdesk.core.runtime.llamacpp.native" not in loaded


def test_the_runtime_module_is_what_loads_it():
    """The other side of the same line: the test above would pass if nothing ever loaded it."""
    loaded = _modules_loaded_by("import memdesk.core.runtime.llamacpp.runtime")
    assert "llama_cpp" in loaded
