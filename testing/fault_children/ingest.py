"""An ingestion that can be killed: a folder into agent 1 of a store, with the hashing embedder.
Prints ``ready`` once imported and about to ingest, then ``ADDED UNCHANGED EMBEDDED``.

``python -m testing.fault_children.ingest STORE FOLDER [--crash-after reading:N|embedding:N]``: the
fault campaign kills it at a random moment; tests/documents/test_resume.py crashes it at a chosen
one with ``--crash-after``, which this child observes through the progress the pipeline reports
(the product has no crash switch). ``ingest`` is the same work in the calling process (an
uninterrupted reference run)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memdesk.core.base.clock import SystemClock
from memdesk.core.documents.ingest import Ingestor
from memdesk.core.documents.progress import IngestProgress, IngestReport
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory
from memdesk.core.storage import open_database

#: The exit code of a crash at the chosen point (what a test tells from a crash elsewhere).
CRASHED = 75


class CrashAfter:
    """A progress callback that ends the process abruptly (no cleanup, no commit of anything more)
    right after the Nth document read or the Nth embedding batch committed. The pipeline reports
    progress at once after each: a "reading" event with ``done == N`` follows the Nth document's
    transaction; the "embedding" event after the Nth batch start (the next batch's start, or the
    last event of the phase) follows the Nth batch's transaction."""

    def __init__(self, point: str) -> None:
        phase, _, count = point.partition(":")
        if phase not in ("reading", "embedding") or not count.isdigit() or int(count) < 1:
            raise ValueError(f"--crash-after takes reading:N or embedding:N (N >= 1), not {point!r}")
        self.phase, self.count = phase, int(count)
        self._batches_started = 0

    def __call__(self, event: IngestProgress) -> None:
        if event.phase != self.phase:
            return
        if self.phase == "reading" and event.done == self.count:
            os._exit(CRASHED)
        if self.phase == "embedding":
            if self._batches_started == self.count:
                os._exit(CRASHED)
            if event.current_file is not None:  # a batch starts
                self._batches_started += 1


def ingest(store: Path | str, folder: Path | str, *, ready=lambda: None, progress=None) -> IngestReport:
    db = open_database(store)
    try:
        clock = SystemClock()
        ingestor = Ingestor(db, ArchivalMemory(db, HashingEmbedder(), clock), clock)
        ready()
        return ingestor.ingest([folder], 1, progress_callback=progress)
    finally:
        db.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testing.fault_children.ingest")
    parser.add_argument("store")
    parser.add_argument("folder")
    parser.add_argument("--crash-after", metavar="PHASE:N", help="reading:N or embedding:N")
    args = parser.parse_args(argv)
    crash = CrashAfter(args.crash_after) if args.crash_after else None
    report = ingest(args.store, args.folder, ready=lambda: print("ready", flush=True), progress=crash)
    print(report.added, report.unchanged, report.embedded)


if __name__ == "__main__":
    main()
