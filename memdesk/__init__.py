"""MemDesk: an offline desktop companion that gives a local LLM long-term memory.

Layers, from the bottom up:
- ``memdesk.core``: Qt-free engine (storage, memory, tools, agent loop, runtimes, documents).
- ``memdesk.cli``: the terminal front end.
- ``memdesk.ui``: the PySide6 window (the only package allowed to import Qt).
- ``memdesk.app``: the composition root that wires the pieces together.
"""

__version__ = "0.1.0"
