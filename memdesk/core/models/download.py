"""Verified, resumable model downloads from the Hugging Face hub (or the ``HF_ENDPOINT`` mirror).

The transfer itself runs in a child process through ``huggingface_hub`` (metadata request, then
``http_get`` with a Range header to resume). A child, not a thread, for three reasons: cancelling
is immediate even in the middle of a blocked read; the hub library's offline switch is
process-wide and the embedding model turns it on in the app process; and the window's process
never opens a network socket at all.

What the parent guarantees, whatever happens in the child:

* nothing reaches the models folder before it is verified: bytes go to
  ``$MEMDESK_HOME/cache/downloads/<file>.part``, which is kept after an interruption or a cancel
  so the next attempt resumes from it;
* the sha256 is checked against the catalog's published checksum, and the hub's own LFS hash
  must agree with it before a byte is fetched; an entry without a published checksum is pinned to
  the hub's LFS hash at this first download, and the library records it as such;
* the disk must hold the rest of the file (plus a margin) before the transfer starts;
* the verified file is moved into place with an atomic rename, and the working model is never
  touched: switching to the new file is a separate step (``library.choose``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import ChecksumMismatchError, DownloadCancelled, DownloadError, NotEnoughSpaceError
from memdesk.core.base.paths import Paths
from memdesk.core.models.catalog import CatalogEntry
from memdesk.core.models.download_child import ChildSession
from memdesk.core.models.hub import ENDPOINT_ENV, OFFLINE_ENV, HubConfig
from memdesk.core.runtime.base import CancelToken

SPACE_MARGIN = 64 * 1024 * 1024  # left free on the disk after a download
HASH_CHUNK = 4 * 1024 * 1024
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class DownloadProgress:
    file: str
    phase: str  # "connecting", "downloading", "verifying", "installed"
    done: int
    total: int
    bytes_per_second: float = 0.0

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def eta_seconds(self) -> float | None:
        if self.bytes_per_second <= 0 or self.total <= self.done:
            return None
        return (self.total - self.done) / self.bytes_per_second

    def describe(self) -> str:
        if self.phase == "connecting":
            return f"Connecting for {self.file}…"
        if self.phase == "verifying":
            return f"Verifying {self.file}: {format_bytes(self.done)} of {format_bytes(self.total)}"
        if self.phase == "installed":
            return f"{self.file} installed ({format_bytes(self.total)})"
        text = f"{format_bytes(self.done)} of {format_bytes(self.total)}"
        if self.bytes_per_second > 0:
            text += f" · {format_bytes(self.bytes_per_second)}/s"
        if (eta := self.eta_seconds) is not None:
            text += f" · {format_duration(eta)} left"
        return text


ProgressCallback = Callable[[DownloadProgress], None]


@dataclass(frozen=True)
class DownloadResult:
    path: Path
    sha256: str
    pinned_from_hub: bool  # the catalog had no checksum: the hub's LFS hash was trusted and pinned
    resumed_from: int  # bytes that were already there from an earlier attempt
    fetched: int  # bytes transferred this time


def format_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def sha256_of(path: Path, *, on_bytes: Callable[[int], None] | None = None, cancel: CancelToken | None = None) -> str:
    digest = hashlib.sha256()
    done = 0
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            if cancel is not None and cancel.cancelled:
                raise DownloadCancelled(f"Verification of {path.name} stopped")
            digest.update(chunk)
            done += len(chunk)
            if on_bytes is not None:
                on_bytes(done)
    return digest.hexdigest()


def partial_path(paths: Paths, file: str) -> Path:
    return paths.downloads / f"{file}.part"


class Downloader:
    def __init__(self, paths: Paths, hub: HubConfig, *, start_timeout: float = 60.0) -> None:
        self.paths = paths
        self.hub = hub
        self._start_timeout = start_timeout

    def download(
        self, entry: CatalogEntry, *, on_progress: ProgressCallback | None = None, cancel: CancelToken | None = None
    ) -> DownloadResult:
        """Fetch ``entry`` into the models folder, verified; see the module docstring."""
        if entry.repo is None:
            raise DownloadError(f"{entry.name} ships with MemDesk ({entry.source}); there is nothing to download")
        if self.hub.offline:
            raise DownloadError(
                f"Cannot download {entry.file}: downloads are turned off ({OFFLINE_ENV}=1)",
                hint=f"Unset {OFFLINE_ENV} to allow MemDesk to download models.",
            )
        report = on_progress or (lambda _progress: None)
        cancel = cancel or CancelToken()
        target = self.paths.user_models / entry.file
        if target.exists():
            raise DownloadError(
                f"{target} already exists",
                hint="Use it as it is, or remove it first to download the catalog's file again.",
            )
        self.paths.downloads.mkdir(parents=True, exist_ok=True)
        self.paths.user_models.mkdir(parents=True, exist_ok=True)
        part = partial_path(self.paths, entry.file)
        report(DownloadProgress(entry.file, "connecting", 0, entry.size))
        session = ChildSession(self.hub, entry, part, self._start_timeout)
        try:
            meta = session.metadata(cancel)
            expected_sha, expected_size, pinned = self._expectations(entry, meta)
            resume_from = self._prepare_partial(entry, part, expected_sha, expected_size)
            self._check_space(entry, expected_size - resume_from, expected_size)
            fetched = session.transfer(
                resume_from,
                expected_size,
                lambda done, rate: report(DownloadProgress(entry.file, "downloading", done, expected_size, rate)),
                cancel,
            )
        finally:
            session.close()
        self._verify(entry, part, expected_sha, expected_size, report, cancel)
        self._install(part, target)
        report(DownloadProgress(entry.file, "installed", expected_size, expected_size))
        return DownloadResult(target, expected_sha, pinned, resume_from, fetched)

    # --- steps ------------------------------------------------------------------------------------
    def _expectations(self, entry: CatalogEntry, meta: dict[str, Any]) -> tuple[str, int, bool]:
        """The sha256 and size the file must have, and whether the sha256 came from the hub alone."""
        hub_sha = meta.get("etag") if isinstance(meta.get("etag"), str) and _SHA256.match(meta["etag"]) else None
        hub_size = meta.get("size")
        where = f"{self.hub.endpoint}/{entry.repo} at {entry.revision}"
        catalog_sha = entry.sha256
        if entry.verified_checksum and catalog_sha is not None:  # (verified means it has one)
            if hub_sha is not None and hub_sha != catalog_sha:
                raise ChecksumMismatchError(
                    f"The hub's {entry.file} ({where}) is not the catalog's file: sha256 {hub_sha[:12]}…, "
                    f"catalog {catalog_sha[:12]}…; nothing was downloaded",
                    hint="The repository changed since the catalog was written; pick another model.",
                )
            expected_sha, pinned = catalog_sha, False
        else:
            if hub_sha is None:
                raise DownloadError(
                    f"Cannot verify {entry.file}: the catalog has no checksum for it and {where} gives no LFS sha256",
                    hint="Nothing was downloaded.",
                )
            expected_sha, pinned = hub_sha, True
        if isinstance(hub_size, int) and entry.size and hub_size != entry.size:
            raise ChecksumMismatchError(
                f"The hub reports {hub_size} bytes for {entry.file} ({where}); the catalog says {entry.size};"
                " nothing was downloaded"
            )
        size = hub_size if isinstance(hub_size, int) else entry.size
        return expected_sha, size, pinned

    def _prepare_partial(self, entry: CatalogEntry, part: Path, sha: str, size: int) -> int:
        """Bytes of an earlier attempt at the same file to resume from (a stale partial is dropped)."""
        info = part.with_name(part.name + ".json")
        wanted = {"repo": entry.repo, "file": entry.file, "sha256": sha, "size": size}
        try:
            same = json.loads(info.read_text(encoding="utf-8")) == wanted
        except (OSError, ValueError):
            same = False
        if not same or not part.exists() or part.stat().st_size > size:
            part.unlink(missing_ok=True)
            info.write_text(json.dumps(wanted), encoding="utf-8")
            return 0
        return part.stat().st_size

    def _check_space(self, entry: CatalogEntry, remaining: int, size: int) -> None:
        checks = [(self.paths.downloads, remaining)]
        if _device(self.paths.downloads) != _device(self.paths.user_models):
            checks.append((self.paths.user_models, size))  # the final move is then a copy
        for folder, needed in checks:
            free = shutil.disk_usage(folder).free
            if free < needed + SPACE_MARGIN:
                raise NotEnoughSpaceError(
                    f"Not enough disk space for {entry.file}: it needs {format_bytes(needed)} more in {folder}, "
                    f"{format_bytes(free)} is free",
                    hint="Free some space and download again; nothing was written.",
                )

    def _verify(
        self, entry: CatalogEntry, part: Path, sha: str, size: int, report: ProgressCallback, cancel: CancelToken
    ) -> None:
        actual_size = part.stat().st_size
        if actual_size != size:
            raise DownloadError(
                f"The download of {entry.file} is incomplete ({actual_size} of {size} bytes)",
                hint="Download again to resume where it stopped.",
            )
        with part.open("rb") as handle:
            head = handle.read(64)
        if head.lstrip().startswith(b"<"):
            _discard(part)
            raise DownloadError(
                f"The server at {self.hub.endpoint} sent a web page (HTML) instead of {entry.file}",
                hint=f"Check {ENDPOINT_ENV}; nothing was installed.",
            )
        started = time.monotonic()
        actual = sha256_of(
            part,
            on_bytes=lambda done: report(
                DownloadProgress(entry.file, "verifying", done, size, done / max(time.monotonic() - started, 1e-6))
            ),
            cancel=cancel,
        )
        if actual != sha:
            _discard(part)
            raise ChecksumMismatchError(
                f"{entry.file} failed verification: sha256 {actual[:12]}…, expected {sha[:12]}…; the file was deleted",
                hint="Nothing was installed and the working model is unchanged. Download again.",
            )

    def _install(self, part: Path, target: Path) -> None:
        info = part.with_name(part.name + ".json")
        try:
            os.replace(part, target)
        except OSError:
            # Another file system: copy next to the target, then rename, so a half-copied file
            # never carries the model's name.
            staging = target.with_name(f".{target.name}.installing")
            try:
                shutil.copyfile(part, staging)
                os.replace(staging, target)
            except OSError as error:
                staging.unlink(missing_ok=True)
                raise DownloadError(
                    f"Cannot install {target.name} into {target.parent}: {error.strerror or error}"
                ) from error
            part.unlink(missing_ok=True)
        info.unlink(missing_ok=True)


def _device(folder: Path) -> int:
    try:
        return folder.stat().st_dev
    except OSError:
        return -1


def _discard(part: Path) -> None:
    part.unlink(missing_ok=True)
    part.with_name(part.name + ".json").unlink(missing_ok=True)
