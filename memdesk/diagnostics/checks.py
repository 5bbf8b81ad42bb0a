"""The checks of ``memdesk doctor`` and Help -> Diagnostics, in the order they run.

Each check returns one ``Check`` and never raises: the doctor exists for machines where things
are broken, so an unexpected error becomes a failing line naming it. What could crash the process
(llama.cpp, Qt's platform plugin) runs in a child process (``child.run_in_child``). Nothing here
writes to the user's data: the store is opened read-only. The checks live by subject:
store_checks.py (SQLite, the store, the disk), model_checks.py (the model file, llama.cpp on this
CPU, a decode), window_check.py (Qt); this module runs them and checks Python and the embedder.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdesk import __version__
from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.diagnostics import store_checks
from memdesk.diagnostics.model_checks import ModelChecks
from memdesk.diagnostics.report import Check, Report
from memdesk.diagnostics.window_check import check_window

CHECK_NAMES = ("python", "sqlite", "store", "disk", "model", "cpu", "decode", "embedder", "window")
MIN_PYTHON = (3, 11)
#: Named by module and function: the probes run in a child, and this package imports neither
#: llama_cpp nor Qt (tests pass probes of their own).
DECODE_PROBE = ("memdesk.diagnostics.model_probe", "decode")
WINDOW_PROBE = ("memdesk.ui.startup.probe", "probe")


@dataclass
class Doctor:
    """Runs the checks. ``embedder``: an already loaded one (the window's) instead of a fresh load."""

    paths: Paths
    embedder: Any = None
    decode_probe: tuple[str, str] = DECODE_PROBE
    window_probe: tuple[str, str] = WINDOW_PROBE
    timeout: float = 180.0
    settings: Settings = field(default_factory=Settings)

    def run(self, only: Sequence[str] | None = None, on_check: Callable[[Check], None] | None = None) -> Report:
        report = Report()
        self.settings = store_checks.read_settings(self.paths.database)
        model = ModelChecks(self.settings, self._model_path, self.decode_probe, self.timeout)
        checks: dict[str, Callable[[], Check]] = {
            "python": check_python,
            "sqlite": store_checks.check_sqlite,
            "store": lambda: store_checks.check_store(self.paths.database, self._restore_hint),
            "disk": lambda: store_checks.check_disk(self.paths.home),
            "model": model.check_model,
            "cpu": model.check_cpu,
            "decode": model.check_decode,
            "embedder": self.check_embedder,
            "window": lambda: check_window(self.window_probe),
        }
        for name in CHECK_NAMES:
            if only and name not in only:
                continue
            try:
                check = checks[name]()
            except Exception as error:  # a bug or an unforeseen environment: still one clear line
                check = Check(
                    name, False, f"the check itself failed: {type(error).__name__}: {error}", "report this as a bug"
                )
            report.checks.append(check)
            if on_check is not None:
                on_check(check)
        return report

    def _restore_hint(self) -> str:
        """The newest good snapshot and the command that restores it (only their records are read)."""
        from memdesk.app.store_opening import backups_for
        from memdesk.core.base.clock import SystemClock

        backups = backups_for(self.paths, self.settings, SystemClock())
        try:
            snapshot = backups.newest_good()
        except OSError:
            snapshot = None
        if snapshot is None:
            return f"no snapshot to restore in {backups.folder}; move it aside to start afresh"
        return f"restore the snapshot of {snapshot.created_at:%Y-%m-%d %H:%M}: memdesk backup restore {snapshot.id}"

    def _model_path(self) -> Path:
        from memdesk.app.local_model import resolve_model_path

        return resolve_model_path(self.settings)

    def check_embedder(self) -> Check:
        import numpy as np

        started = time.perf_counter()
        try:
            embedder = self.embedder
            if embedder is None:
                from memdesk.app.services import default_embedder

                embedder = default_embedder()
            vectors = embedder.embed(["MemDesk remembers what matters."])
        except MemDeskError as error:
            return Check(
                "embedder", False, error.message, error.hint or "reinstall MemDesk's dependencies (make install)"
            )
        norm = float(np.linalg.norm(vectors[0])) if len(vectors) else 0.0
        if vectors.shape != (1, embedder.dimension) or abs(norm - 1.0) > 1e-3:
            return Check(
                "embedder",
                False,
                f"{embedder.model_id} returned a vector of shape {vectors.shape} and norm {norm:.3f}",
                "reinstall MemDesk's dependencies (make install)",
            )
        return Check(
            "embedder",
            True,
            f"{embedder.model_id}: {embedder.dimension} dimensions, ready in {time.perf_counter() - started:.2f} s",
        )


def check_python() -> Check:
    frozen = " (bundled)" if getattr(sys, "frozen", False) else ""
    detail = (
        f"MemDesk {__version__}{frozen}, Python {platform.python_version()} ({platform.python_implementation()}) "
        f"on {platform.system()} {platform.release()} {platform.machine()}"
    )
    if sys.version_info[:2] < MIN_PYTHON:
        return Check("python", False, detail, f"use Python {'.'.join(map(str, MIN_PYTHON))} or newer")
    return Check("python", True, detail)


def run_checks(
    paths: Paths | None = None,
    *,
    only: Sequence[str] | None = None,
    on_check: Callable[[Check], None] | None = None,
    **options: Any,
) -> Report:
    """Run every check (or those named in ``only``) and return the report."""
    return Doctor(paths or Paths.from_environment(), **options).run(only, on_check)
