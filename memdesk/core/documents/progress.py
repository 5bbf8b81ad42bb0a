"""Progress events of an ingestion batch: plain data, so the CLI prints them and the GUI can
subscribe without either knowing about the other."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IngestProgress:
    phase: str  # 'reading' | 'embedding' | 'done'
    done: int  # files read, or chunks embedded
    total: int
    current_file: str | None
    eta_seconds: float | None  # None until there is a rate to go on
    failed: int = 0


@dataclass(frozen=True)
class FileFailure:
    path: str
    reason: str


@dataclass
class IngestReport:
    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    chunks: int = 0
    embedded: int = 0
    cancelled: bool = False
    failures: list[FileFailure] = field(default_factory=list)


class Eta:
    """Remaining time from the rate since the phase began."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.started = time.monotonic()

    def remaining(self, done: int) -> float | None:
        elapsed = time.monotonic() - self.started
        if done <= 0 or elapsed <= 0:
            return None
        return max(0.0, (self.total - done) * elapsed / done)
