"""The Qt-free core. Nothing under this package may import PySide6; only
``memdesk.core.runtime.llamacpp`` may import llama_cpp (tests/test_layering.py enforces both)."""
