"""MemDesk: an offline desktop companion that gives a local LLM long-term memory.

Layers, from the bottom up:
- ``desktop.core``: Qt-free engine (storage, memory, tools, agent loop, runtimes, documents).
- ``desktop.cli``: the terminal front end.
- ``desktop.ui``: the PySide6 window (the only package allowed to import Qt).
- ``desktop.app``: the composition root that wires the pieces together.
"""

__version__ = "0.1.0"
