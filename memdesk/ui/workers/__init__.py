"""The window's background threads and their workers: the conversation, ingestion, the knowledge graph, short jobs."""
