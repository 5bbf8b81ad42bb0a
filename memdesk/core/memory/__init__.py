"""The three memory kinds of MemGPT: core (always in context), recall (every message), archival
(an unbounded passage store searched by meaning)."""
