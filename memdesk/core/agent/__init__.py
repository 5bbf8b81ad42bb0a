"""The MemGPT agent: events in, function calls out, memory kept in the store."""
