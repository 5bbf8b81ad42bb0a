"""The panels the window shows: the chat and its transcript, memory, archival, documents, knowledge, history,
budget, agents."""
