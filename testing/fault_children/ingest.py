"""An ingestion that can be killed: a folder into agent 1 of a store, with the hashing embedder.
Prints ``ready`` once imported and about to ingest, then ``ADDED UNCHANGED EMBEDDED``.
``python -m testing.fault_children.ingest STORE FOLDER``; the fault campaign kills it at a random
moment, tests/documents/test_resume.py crashes it at a chosen one (memdesk.core.documents.ingest's
CRASH_ENV). ``ingest`` is the same work in the calling process (an uninterrupted reference run)."""

from __future__ import annotations

import sys
from pathlib import Path

from memdesk.core.base.clock import SystemClock
from memdesk.core.documents.ingest import Ingestor
from memdesk.core.documents.progress import IngestReport
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.storage import open_database


def ingest(store: Path | str, folder: Path | str, *, ready=lambda: None) -> IngestReport:
    db = open_database(store)
    try:
        clock = SystemClock()
        ingestor = Ingestor(db, ArchivalMemory(db, HashingEmbedder(), clock), clock)
        ready()
        return ingestor.ingest([folder], 1)
    finally:
        db.close()


if __name__ == "__main__":
    report = ingest(sys.argv[1], sys.argv[2], ready=lambda: print("ready", flush=True))
    print(report.added, report.unchanged, report.embedded)
