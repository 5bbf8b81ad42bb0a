"""Sync: one memory on several devices through a folder some other program carries (Syncthing, a
cloud drive, a USB stick). Each device writes its own append-only, numbered, encrypted and signed
change files there and applies the others' once each, in order, one transaction per file; merge
rules per kind of data live in ``apply.py`` and ``blocks.py``. The live database is never copied."""
