"""The one SQLite file that holds everything: agents, memory blocks, messages, passages, documents, settings."""

from memdesk.core.storage.database import Database, open_database

__all__ = ["Database", "open_database"]
