"""The composition root: the one place that builds MemDesk's objects and wires them together."""
