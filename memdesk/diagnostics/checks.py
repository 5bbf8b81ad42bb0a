"""The checks of ``memdesk doctor`` and Help -> Diagnostics, in the order they run.

Each check returns one ``Check`` and never raises: the doctor exists for machines where things
are broken, so an unexpected error becomes a failing line naming it. What could crash the process
(llama.cpp, Qt's platform plugin) runs in a child process (``child.run_in_child``). Nothing here
writes to the user's data: the store is opened read-only.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdesk import __version__
from memdesk.core.base.errors import MemDeskError, StoreError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.net.plain_http import plain_http_warning
from memdesk.core.runtime.base import sampling
from memdesk.diagnostics import cpu, system_libs
from memdesk.diagnostics.child import ChildResult, run_in_child
from memdesk.diagnostics.crash import explain_exit, rebuild_portable, signal_name
from memdesk.diagnostics.report import Check, Report

CHECK_NAMES = ("python", "sqlite", "store", "disk", "model", "cpu", "decode", "embedder", "window")
MIN_PYTHON = (3, 11)
MIN_FREE_BYTES = 500 * 1024 * 1024  # a model download, the KV cache and a few saves
DECODE_TOKENS = 16
#: Named by module and function: the probes run in a child, and this package imports neither
#: llama_cpp nor Qt (tests pass probes of their own).
DECODE_PROBE = ("memdesk.diagnostics.model_probe", "decode")
WINDOW_PROBE = ("memdesk.ui.startup.probe", "probe")
HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc")


@dataclass
class Doctor:
    """Runs the checks. ``embedder``: an already loaded one (the window's) instead of a fresh load."""

    paths: Paths
    embedder: Any = None
    decode_probe: tuple[str, str] = DECODE_PROBE
    window_probe: tuple[str, str] = WINDOW_PROBE
    timeout: float = 180.0
    settings: Settings = field(default_factory=Settings)
    _model_ok: bool = True
    _decode: ChildResult | None = None

    def run(self, only: Sequence[str] | None = None, on_check: Callable[[Check], None] | None = None) -> Report:
        report = Report()
        self.settings = self._read_settings()
        for name in CHECK_NAMES:
            if only and name not in only:
                continue
            try:
                check = getattr(self, f"check_{name}")()
            except Exception as error:  # a bug or an unforeseen environment: still one clear line
                check = Check(
                    name, False, f"the check itself failed: {type(error).__name__}: {error}", "report this as a bug"
                )
            report.checks.append(check)
            if on_check is not None:
                on_check(check)
        return report

    # --- helpers ----------------------------------------------------------------------------
    def _read_settings(self) -> Settings:
        """The saved settings, read without migrating or writing; defaults when unreadable."""
        if not self.paths.database.is_file():
            return Settings()
        try:
            from memdesk.core.storage.settings_store import SettingsStore

            conn, db = _open_read_only(self.paths.database)
            try:
                return SettingsStore(db).load()
            finally:
                conn.close()
        except Exception:
            return Settings()

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

    def _run_decode(self) -> ChildResult:
        if self._decode is None:
            module, function = self.decode_probe
            self._decode = run_in_child(module, function, str(self._model_path()), DECODE_TOKENS, timeout=self.timeout)
        return self._decode

    # --- the checks -------------------------------------------------------------------------
    def check_python(self) -> Check:
        frozen = " (bundled)" if getattr(sys, "frozen", False) else ""
        detail = (
            f"MemDesk {__version__}{frozen}, Python {platform.python_version()} ({platform.python_implementation()}) "
            f"on {platform.system()} {platform.release()} {platform.machine()}"
        )
        if sys.version_info[:2] < MIN_PYTHON:
            return Check("python", False, detail, f"use Python {'.'.join(map(str, MIN_PYTHON))} or newer")
        return Check("python", True, detail)

    def check_sqlite(self) -> Check:
        import sqlite_vec

        from memdesk.core.storage.driver import sqlite_module

        sqlite = sqlite_module()
        conn = sqlite.connect(":memory:")
        try:
            try:
                conn.enable_load_extension(True)
                sqlite_vec.load(conn)
                vec = conn.execute("SELECT vec_version()").fetchone()[0]
            except Exception as error:
                return Check(
                    "sqlite",
                    False,
                    f"SQLite {sqlite.sqlite_version}: sqlite-vec does not load ({error})",
                    "reinstall MemDesk's dependencies (make install)",
                )
            try:
                conn.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
            except Exception:
                return Check(
                    "sqlite",
                    False,
                    f"SQLite {sqlite.sqlite_version}, sqlite-vec {vec}, no FTS5",
                    "install sqlean.py (a SQLite with FTS5)",
                )
        finally:
            conn.close()
        return Check(
            "sqlite", True, f"SQLite {sqlite.sqlite_version} ({sqlite.__name__}), sqlite-vec {vec}, FTS5 available"
        )

    def check_store(self) -> Check:
        from memdesk.core.storage.driver import file_is_encrypted
        from memdesk.core.storage.migrations import MIGRATIONS

        path = self.paths.database
        if not path.exists():
            return Check("store", True, f"{path} does not exist yet (created at first start)")
        if file_is_encrypted(path):
            # Without the passphrase an encrypted file cannot be read, and must not be called damaged.
            return self._encrypted_store(path)
        try:
            conn, db = _open_read_only(path)
        except Exception as error:
            return Check("store", False, f"{path} cannot be opened: {_message(error)}", self._restore_hint())
        try:
            version = db.schema_version
            known = len(MIGRATIONS)
            if version > known:
                return Check(
                    "store",
                    False,
                    f"{path} was written by a newer MemDesk (schema {version}; this version knows {known})",
                    "upgrade MemDesk to open it (nothing was changed)",
                )
            problems = [row[0] for row in db.query("PRAGMA integrity_check")]
            if problems != ["ok"]:
                return Check("store", False, f"{path} is damaged: {'; '.join(problems[:3])}", self._restore_hint())
            pending = f", {known - version} migration(s) pending (applied at next start)" if version < known else ""
            size = path.stat().st_size
            return Check(
                "store",
                True,
                f"{path}: integrity ok, schema {version} of {known}{pending}, {_size(size)}, not encrypted",
            )
        except Exception as error:
            return Check("store", False, f"{path} cannot be read: {_message(error)}", self._restore_hint())
        finally:
            conn.close()

    @staticmethod
    def _encrypted_store(path: Path) -> Check:
        try:
            from memdesk.core.storage.driver import cipher_module

            cipher = cipher_module()
        except StoreError:
            return Check(
                "store",
                False,
                f"{path} is encrypted, and SQLCipher (sqlcipher3) is not installed",
                "reinstall MemDesk's dependencies (make install)",
            )
        return Check(
            "store",
            True,
            f"{path}: encrypted (SQLCipher on SQLite {cipher.sqlite_version}), {_size(path.stat().st_size)}; "
            "its integrity and schema are checked when it is opened with the passphrase",
        )

    def check_disk(self) -> Check:
        folder = self.paths.home
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        free = shutil.disk_usage(folder).free
        detail = f"{_size(free)} free in {folder}"
        if free < MIN_FREE_BYTES:
            return Check(
                "disk",
                False,
                f"{detail} (less than {_size(MIN_FREE_BYTES)})",
                "free some disk space, or set MEMDESK_HOME to a folder on a roomier disk",
            )
        return Check("disk", True, detail)

    def check_model(self) -> Check:
        from memdesk.core.runtime.gguf import read_gguf

        if self.settings.runtime != "llamacpp":
            url = self.settings.openai_base_url
            return Check(
                "model",
                True,
                f"served by {url} ({self.settings.openai_model or 'its default model'}): no local file",
                warning=plain_http_warning(url) or "",
            )
        try:
            path = self._model_path()
            info = read_gguf(path)
        except MemDeskError as error:
            self._model_ok = False
            return Check("model", False, error.message, error.hint or "pick another model in Settings")
        context = f", trained context {info.context_length}" if info.context_length else ""
        return Check(
            "model",
            True,
            f"{path.name}: GGUF v{info.version}, {info.architecture}, {_size(path.stat().st_size)}{context}",
        )

    def check_cpu(self) -> Check:
        if self.settings.runtime != "llamacpp":
            return Check("cpu", True, "the model runs on a server; llama.cpp is not used")
        result = self._run_decode()
        build = _stage(result, "build")
        if build is None:
            cause, fix = _failure(result, "loading llama.cpp")
            return Check("cpu", False, f"llama.cpp could not be loaded: {cause}", fix)
        features = cpu.build_features(build.get("system_info", ""))
        flags = (build.get("flags") or "").strip()
        kind = build.get("kind", "unknown")
        made = f"{kind} build ({flags})" if flags else "a build not made by scripts/llama-wheel (pip compiles natively)"
        uses = f"uses {' '.join(features) or 'no optional CPU features'}"
        found = cpu.cpu_flags()
        if found is None:
            return Check(
                "cpu",
                True,
                f"llama.cpp {build.get('version', '')}, {made}, {uses};"
                " this system does not list CPU features (the decode check tests them)",
            )
        model, cpu_flags = found
        missing = cpu.missing_features(features, cpu_flags)
        if missing:
            return Check(
                "cpu",
                False,
                f"llama.cpp {made} {uses}, but this CPU ({model}) lacks {' '.join(missing)}",
                rebuild_portable(),
            )
        unused = cpu.unused_features(features, cpu_flags)
        spare = f"; unused here: {' '.join(unused)}" if unused and kind == "portable" else ""
        return Check("cpu", True, f"llama.cpp {build.get('version', '')}, {made} {uses}; {model} has them all{spare}")

    def check_decode(self) -> Check:
        if self.settings.runtime != "llamacpp":
            return self._server_decode()
        if not self._model_ok:
            return Check(
                "decode",
                False,
                "not run: the model file failed its check (see model)",
                "pick another model in Settings",
            )
        result = self._run_decode()
        decoded = _stage(result, "decoded")
        if decoded is None:
            stage = "decoding" if _stage(result, "loaded") else "loading the model"
            cause, fix = _failure(
                result, stage, native=(_stage(result, "build") or {}).get("kind", "").startswith("native")
            )
            return Check("decode", False, f"the model process failed while {stage}: {cause}", fix)
        loaded = _stage(result, "loaded") or {}
        tokens, seconds = decoded["tokens"], max(decoded["seconds"], 1e-6)
        return Check(
            "decode",
            True,
            f"{self._model_path().name}: {tokens} tokens in {seconds:.2f} s ({tokens / seconds:.0f} tokens/s,"
            f" prompt included), loaded in {loaded.get('seconds', 0):.2f} s, in a child process",
        )

    def _server_decode(self) -> Check:
        from memdesk.app.runtimes import make_runtime
        from memdesk.core.runtime.base import ChatMessage, TextRequest

        started = time.perf_counter()
        try:
            runtime = make_runtime(self.settings)
            try:
                text = runtime.generate_text(
                    TextRequest(
                        [ChatMessage("user", "Say hello.")],
                        sampling(Settings(temperature=0.0, max_answer_tokens=DECODE_TOKENS)),
                    )
                )
            finally:
                runtime.close()
        except MemDeskError as error:
            return Check(
                "decode",
                False,
                f"the server at {self.settings.openai_base_url} failed: {error.message}",
                error.hint or "check that the server runs",
            )
        return Check(
            "decode", True, f"the server answered {len(text)} characters in {time.perf_counter() - started:.2f} s"
        )

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

    def check_window(self) -> Check:
        requested = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0]
        headless = requested in HEADLESS_PLATFORMS
        if sys.platform.startswith("linux") and not headless:
            display, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
            if requested == "xcb" or (not requested and not wayland):
                missing = system_libs.missing_libraries()
                if missing:
                    packages = " ".join(sorted({system_libs.debian_package(name) for name in missing}))
                    return Check(
                        "window",
                        False,
                        f"Qt's xcb platform plugin cannot load: this system lacks {' '.join(missing)}",
                        f"make system-deps (or: sudo apt-get install {packages})",
                    )
            if not display and not wayland:
                return Check(
                    "window",
                    False,
                    "no display: DISPLAY and WAYLAND_DISPLAY are unset, so the window cannot open",
                    "start MemDesk from a desktop session (or use `memdesk chat` in this terminal;"
                    " QT_QPA_PLATFORM=offscreen runs the window headless)",
                )
        module, function = self.window_probe
        result = run_in_child(module, function, timeout=60)
        if not result.finished or not result.items:
            if result.error is not None:
                return Check(
                    "window",
                    False,
                    f"Qt failed to start: {result.error[0]}: {result.error[1]}",
                    "reinstall PySide6 (make install)",
                )
            said = _qt_complaint(result.stderr)
            code = result.exitcode
            how = (
                "timed out"
                if result.timed_out
                else signal_name(code)
                if code is not None and code < 0
                else f"exit code {code}"
            )
            return Check(
                "window",
                False,
                f"Qt's platform plugin {requested or '(default)'} could not start ({how}){': ' + said if said else ''}",
                "make system-deps, and check DISPLAY (or run `memdesk chat` in a terminal)",
            )
        info = result.items[0]
        where = " (headless: no window will be visible)" if headless else ""
        return Check(
            "window",
            True,
            f"Qt {info['qt']}, platform plugin {info['platform']}, {info['screens']} screen(s)"
            f" {info['size']}{where}".rstrip(),
        )


def run_checks(
    paths: Paths | None = None,
    *,
    only: Sequence[str] | None = None,
    on_check: Callable[[Check], None] | None = None,
    **options: Any,
) -> Report:
    """Run every check (or those named in ``only``) and return the report."""
    return Doctor(paths or Paths.from_environment(), **options).run(only, on_check)


# --- helpers ------------------------------------------------------------------------------------
def _open_read_only(path: Path):
    """A read-only connection (sqlite-vec loaded) wrapped in ``Database``: the doctor never migrates."""
    import sqlite_vec

    from memdesk.core.storage.database import Database
    from memdesk.core.storage.driver import sqlite_module

    sqlite = sqlite_module()
    conn = sqlite.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=5
    )
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception:
        conn.close()
        raise
    return conn, Database(conn, path)


def _stage(result: ChildResult, name: str) -> dict[str, Any] | None:
    return next((item[1] for item in result.items if isinstance(item, tuple) and item[0] == name), None)


def _failure(result: ChildResult, stage: str, *, native: bool = False) -> tuple[str, str]:
    if result.error is not None:
        kind, message, hint = result.error
        return message, hint or "pick another model in Settings"
    if result.timed_out:
        return (
            "it did not finish in time (the machine may be very slow or out of memory)",
            "close other programs and run the check again",
        )
    cause, fix = explain_exit(result.exitcode, native_build=native)
    said = result.last_stderr_line()
    return (f"{cause} (it said: {said})" if said else cause), fix


def _qt_complaint(stderr: str) -> str:
    """Qt's own explanation from a failed start: its qpa lines say what is wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith("qt.qpa") or "could not" in line.lower()]
    return (useful or lines or [""])[0][:300]


def _message(error: BaseException) -> str:
    return error.user_message if isinstance(error, MemDeskError) else f"{type(error).__name__}: {error}"


def _size(count: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TB"
