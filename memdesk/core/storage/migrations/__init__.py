"""Schema migrations: an ordered list, each applied once in its own transaction and recorded
(``Database.migrate`` in memdesk/core/storage/database.py).

Add a migration as the next module here (``mNNN_what_it_does.py`` with one ``migrate(db)``) and append
it to ``MIGRATIONS``; never edit one that has shipped. A database whose recorded version is newer than
``len(MIGRATIONS)`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memdesk.core.storage.migrations import (
    m001_initial,
    m002_retrieval_indexes,
    m003_consolidation,
    m004_knowledge_graph,
    m005_memory_history,
    m006_memory_view,
    m007_recall_shown,
    m008_recall_expired,
    m009_stemmed_search,
    m010_agent_ids_never_reused,
    m011_imported_document_paths,
    m012_app_written_blocks,
    m013_vector_search_form,
    m014_row_changes,
    m015_graph_mention_changes,
    m016_stopped_replies,
    m017_graph_user_names,
    m018_sync_identities,
    m019_imported_conversations,
    m020_mcp_connections,
    m021_sync_facts_keys_imports,
)

#: One migration: it changes the schema of the connection it is given (a ``Database``; typed loosely
#: because the database module imports this list).
Migration = Callable[[Any], None]

MIGRATIONS: list[Migration] = [
    m001_initial.migrate,
    m002_retrieval_indexes.migrate,
    m003_consolidation.migrate,
    m004_knowledge_graph.migrate,
    m005_memory_history.migrate,
    m006_memory_view.migrate,
    m007_recall_shown.migrate,
    m008_recall_expired.migrate,
    m009_stemmed_search.migrate,
    m010_agent_ids_never_reused.migrate,
    m011_imported_document_paths.migrate,
    m012_app_written_blocks.migrate,
    m013_vector_search_form.migrate,
    m014_row_changes.migrate,
    m015_graph_mention_changes.migrate,
    m016_stopped_replies.migrate,
    m017_graph_user_names.migrate,
    m018_sync_identities.migrate,
    m019_imported_conversations.migrate,
    m020_mcp_connections.migrate,
    m021_sync_facts_keys_imports.migrate,
]
