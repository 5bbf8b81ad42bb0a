"""What every layer of the core may use: typed errors, paths and private files, the clock, the
settings' declaration, log privacy."""
