"""Documents into archival memory: parsers per format, then chunk, store and embed (Qt-free)."""
