"""Moving agents in and out: Letta agent files, MemDesk's JSON, and the knowledge graph's part of both."""
