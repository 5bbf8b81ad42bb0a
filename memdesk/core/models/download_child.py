"""The download's child process and the parent's end of it (see download.py for why a child):
the hub library's metadata request and ranged transfer run there, report progress through a pipe,
and stop the moment the parent says so."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from memdesk.core.base.errors import DownloadCancelled, DownloadError, MemDeskError, NotEnoughSpaceError
from memdesk.core.base.process_guard import guard_process
from memdesk.core.models.catalog import CatalogEntry
from memdesk.core.models.hub import ENDPOINT_ENV, OFFLINE_ENV, HubConfig, origin
from memdesk.core.runtime.base import CancelToken

_PROGRESS_INTERVAL = 0.1  # seconds between progress messages from the child
# Bytes read (and written) at a time: the hub library's default, 10 MB, makes progress and cancel
# coarse on a slow line; what was written before an interruption is what a resume starts from.
READ_CHUNK = 1024 * 1024
_POLL = 0.05


class ChildSession:
    """The parent's end of one download child. Messages, child to parent: ("meta", dict),
    ("progress", bytes so far), ("done", bytes fetched), ("error", kind, text).
    Parent to child: ("go", resume_from, size), ("stop",) and ("cancel",)."""

    def __init__(self, hub: HubConfig, entry: CatalogEntry, part: Path, start_timeout: float) -> None:
        self.entry = entry
        self.endpoint = hub.endpoint
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        job = {
            "endpoint": hub.endpoint,
            "token_origin": hub.token_origin,
            "repo": entry.repo,
            "revision": entry.revision,
            "file": entry.file,
            "part": str(part),
        }
        self._process = context.Process(target=_child_main, args=(child, job), daemon=True, name="memdesk-download")
        self._process.start()
        child.close()
        self._start_timeout = start_timeout

    def metadata(self, cancel: CancelToken) -> dict[str, Any]:
        message = self._receive(cancel, timeout=self._start_timeout)
        if message[0] != "meta":
            raise DownloadError(f"Unexpected answer from the download process: {message[0]}")
        return message[1]

    def transfer(self, resume_from: int, size: int, report: Callable[[int, float], None], cancel: CancelToken) -> int:
        """Fetch from ``resume_from`` to ``size``; ``report(bytes so far, bytes a second)``."""
        self._conn.send(("go", resume_from, size))
        started = time.monotonic()
        while True:
            message = self._receive(cancel, timeout=None)
            if message[0] == "progress":
                done = message[1]
                elapsed = max(time.monotonic() - started, 1e-6)
                report(done, (done - resume_from) / elapsed)
            elif message[0] == "done":
                return int(message[1])

    def _receive(self, cancel: CancelToken, timeout: float | None) -> tuple:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if cancel.cancelled:
                self._cancel()
            try:
                if self._conn.poll(_POLL):
                    message = self._conn.recv()
                    if message[0] == "error":
                        raise _child_error(self.entry, self.endpoint, message[1], message[2])
                    return message
            except (EOFError, OSError) as error:
                raise self._died() from error
            if not self._process.is_alive() and not self._conn.poll():
                raise self._died()
            if deadline is not None and time.monotonic() > deadline:
                raise DownloadError(
                    f"No answer from {self.entry.repo} for {self.entry.file} in time", hint="Check the connection."
                )

    def _died(self) -> DownloadError:
        code = self._process.exitcode
        return DownloadError(
            f"The download of {self.entry.file} stopped unexpectedly (exit code {code})",
            hint="Download again to resume.",
        )

    def _cancel(self) -> None:
        # The child stops at its next chunk; a read blocked on a stalled connection is cut short.
        self._end("cancel", patience=1)
        raise DownloadCancelled(
            f"Download of {self.entry.file} stopped", hint="What arrived is kept: download again to resume."
        )

    def close(self) -> None:
        self._end("stop", patience=3)
        self._conn.close()

    def _end(self, message: str, patience: float) -> None:
        if self._process.is_alive():
            try:
                self._conn.send((message,))
            except OSError:
                pass
            self._process.join(timeout=patience)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=3)


def _child_error(entry: CatalogEntry, endpoint: str, kind: str, text: str) -> MemDeskError:
    if kind == "html":
        return DownloadError(
            f"The server at {endpoint} sent a web page (HTML) instead of {entry.file}",
            hint=f"Check {ENDPOINT_ENV}; nothing was downloaded.",
        )
    if kind == "offline":
        return DownloadError(f"Cannot download {entry.file}: downloads are turned off ({OFFLINE_ENV}=1)")
    if kind == "not_found":
        return DownloadError(f"{entry.repo} has no file {entry.file} at {entry.revision}: {text}")
    if kind == "space":
        return NotEnoughSpaceError(
            f"The disk filled up while downloading {entry.file}: {text}",
            hint="Free some space and download again to resume.",
        )
    if kind == "truncated":
        return DownloadError(
            f"The download of {entry.file} was cut short: {text}", hint="Download again to resume where it stopped."
        )
    return DownloadError(
        f"The download of {entry.file} failed: {text}", hint="Download again to resume where it stopped."
    )


class _Cancelled(Exception):
    pass


def _child_main(conn: Connection, job: dict[str, str]) -> None:
    guard_process()  # it may hold a Hugging Face token
    # The hub library reads these once, when imported: set them first.
    os.environ[ENDPOINT_ENV] = job["endpoint"]
    os.environ[OFFLINE_ENV] = "0"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    try:
        _child_run(conn, job)
    except _Cancelled:
        pass
    except BaseException as error:  # reported to the parent, which raises a DownloadError
        try:
            conn.send(("error", _error_kind(error), f"{type(error).__name__}: {error}"[:500]))
        except OSError:
            pass
    finally:
        conn.close()


def _error_kind(error: BaseException) -> str:
    from huggingface_hub import errors as hub_errors

    if isinstance(error, hub_errors.OfflineModeIsEnabled):
        return "offline"
    if isinstance(
        error, (hub_errors.EntryNotFoundError, hub_errors.RepositoryNotFoundError, hub_errors.RevisionNotFoundError)
    ):
        return "not_found"
    if isinstance(error, OSError) and error.errno == 28:  # ENOSPC
        return "space"
    if isinstance(error, OSError) and "Consistency check failed" in str(error):
        return "truncated"
    return "other"


def _child_run(conn: Connection, job: dict[str, str]) -> None:
    from huggingface_hub import constants, hf_hub_url
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers

    hub = HubConfig(job["endpoint"], token_origin=job["token_origin"])
    url = hf_hub_url(job["repo"], job["file"], revision=job["revision"], endpoint=job["endpoint"])
    credentials = build_hf_headers()  # the user's token, when there is one, is its "authorization"

    def headers_for(target: str) -> dict[str, str]:
        if hub.sends_token_to(target):
            return dict(credentials)
        return {k: v for k, v in credentials.items() if k.lower() != "authorization"}

    response, location = _metadata_response(url, headers_for)
    # A wrong HF_ENDPOINT or a captive portal answers with a web page; say so rather than
    # reporting a size or checksum mismatch.
    if "text/html" in response.headers.get("Content-Type", "").lower():
        conn.send(("error", "html", f"{url} answered with a web page (HTML)"))
        return
    conn.send(("meta", _metadata(response)))
    message = conn.recv()
    if message[0] != "go":
        return
    _, resume_from, size = message

    class PipeProgress:
        """What ``http_get`` takes for a progress bar: reports bytes and notices a cancel."""

        def __init__(self, *, total: int | None = None, initial: int = 0, **_ignored: Any) -> None:
            self.n = initial
            self._sent = 0.0

        def __enter__(self) -> PipeProgress:
            return self

        def __exit__(self, *exc: object) -> None:
            conn.send(("progress", self.n))

        def update(self, count: int) -> None:
            self.n += count
            while conn.poll():
                if conn.recv()[0] in ("cancel", "stop"):
                    raise _Cancelled()
            now = time.monotonic()
            if now - self._sent >= _PROGRESS_INTERVAL:
                self._sent = now
                conn.send(("progress", self.n))

    constants.DOWNLOAD_CHUNK_SIZE = READ_CHUNK
    part = Path(job["part"])
    with part.open("ab") as handle:
        http_get(
            location,
            handle,
            resume_size=resume_from,
            headers=headers_for(location),
            expected_size=size,
            tqdm_class=PipeProgress,
        )
    conn.send(("done", size - resume_from))


_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_HUB_REDIRECTS = 10


def _metadata_response(url: str, headers_for: Callable[[str], dict[str, str]]) -> tuple[Any, str]:
    """The HEAD response carrying the file's metadata, and the URL its bytes come from.

    Redirects are followed here, not by the hub library (which keeps the token on a redirect to
    the same host name on another port or scheme): each hop gets the headers for its own origin.
    As on the hub, a redirect to another origin that carries the file's metadata (X-Linked-Etag)
    ends the walk: its target, usually a CDN, serves the bytes."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session, hf_raise_for_status

    for _ in range(_MAX_HUB_REDIRECTS):
        headers = {**headers_for(url), "Accept-Encoding": "identity"}  # the real size, not a compressed one
        response = get_session().head(url, headers=headers, follow_redirects=False, timeout=30)
        location = response.headers.get("Location")
        if response.status_code not in _REDIRECTS or not location:
            if "text/html" not in response.headers.get("Content-Type", "").lower():
                hf_raise_for_status(response)
            return response, url
        target = urljoin(url, location)
        if origin(target) != origin(url) and constants.HUGGINGFACE_HEADER_X_LINKED_ETAG.lower() in {
            k.lower() for k in response.headers
        }:
            return response, target
        url = target
    raise OSError(f"More than {_MAX_HUB_REDIRECTS} redirects from {url}")


def _metadata(response: Any) -> dict[str, Any]:
    """What ``get_hf_file_metadata`` reads from the same response (its own parser follows redirects)."""
    from huggingface_hub import constants

    headers = response.headers
    etag = headers.get(constants.HUGGINGFACE_HEADER_X_LINKED_ETAG) or headers.get("ETag")
    size = headers.get(constants.HUGGINGFACE_HEADER_X_LINKED_SIZE) or (
        None if response.status_code in _REDIRECTS else headers.get("Content-Length")
    )
    return {
        "etag": etag.removeprefix("W/").strip('"') if etag else None,
        "size": int(size) if size and size.isdigit() else None,
        "commit": headers.get(constants.HUGGINGFACE_HEADER_X_REPO_COMMIT),
    }
