"""Downloads from a loopback imitation of the hub (HF_ENDPOINT points at it): verified before use,
resumable, cancellable, and never leaving a half-written file in the models folder."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from memdesk.core.base.errors import ChecksumMismatchError, DownloadCancelled, DownloadError, NotEnoughSpaceError
from memdesk.core.base.paths import Paths
from memdesk.core.models import download as download_module
from memdesk.core.models.download import Downloader, partial_path
from memdesk.core.models.hub import HubConfig
from memdesk.core.models.library import ModelLibrary
from memdesk.core.runtime.base import CancelToken
from tests.models.conftest import entry_for, payload

SIZE = 3 * 1024 * 1024 + 17


@pytest.fixture
def paths(memdesk_home) -> Paths:
    return Paths.from_environment().ensure()


def model_files(paths: Paths) -> list[str]:
    return sorted(p.name for p in paths.user_models.iterdir() if p.suffix == ".gguf" or p.name.startswith("."))


def test_a_complete_download_is_verified_and_moved_into_the_models_folder(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    seen = []
    result = Downloader(paths, hub_config).download(entry_for("tiny.gguf", content), on_progress=seen.append)
    assert result.path == paths.user_models / "tiny.gguf"
    assert result.path.read_bytes() == content
    assert result.sha256 == hashlib.sha256(content).hexdigest() and not result.pinned_from_hub
    assert result.resumed_from == 0 and result.fetched == SIZE
    phases = [p.phase for p in seen]
    assert phases[0] == "connecting" and "downloading" in phases and "verifying" in phases and phases[-1] == "installed"
    downloading = [p for p in seen if p.phase == "downloading"]
    assert downloading[-1].done == SIZE and downloading[-1].total == SIZE and downloading[-1].bytes_per_second > 0
    assert " of " in downloading[-1].describe()
    assert not partial_path(paths, "tiny.gguf").exists()
    assert fake_hub.gets("tiny.gguf") == [None]  # one plain GET, from the start


def test_an_interrupted_download_resumes_where_it_stopped(paths, fake_hub, hub_config):
    content = payload(SIZE)
    served = fake_hub.add("tiny.gguf", content, mode="slow")
    entry = entry_for("tiny.gguf", content)
    cancel = CancelToken()

    def stop_after_some_bytes(progress):
        if progress.phase == "downloading" and progress.done >= 512 * 1024:
            cancel.cancel()

    with pytest.raises(DownloadCancelled, match="tiny.gguf"):
        Downloader(paths, hub_config).download(entry, on_progress=stop_after_some_bytes, cancel=cancel)
    kept = partial_path(paths, "tiny.gguf").stat().st_size
    assert 0 < kept < SIZE
    assert model_files(paths) == []  # nothing half-written where models live

    served.mode = "normal"
    result = Downloader(paths, hub_config).download(entry)
    assert result.resumed_from == kept and result.fetched == SIZE - kept
    assert fake_hub.gets("tiny.gguf")[-1] == f"bytes={kept}-"
    assert result.path.read_bytes() == content


def test_a_connection_cut_mid_file_is_resumed_within_the_same_download(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content, mode="cut_once", cut_at=1024 * 1024)
    result = Downloader(paths, hub_config).download(entry_for("tiny.gguf", content))
    assert result.path.read_bytes() == content
    ranges = fake_hub.gets("tiny.gguf")
    assert ranges[0] is None and ranges[-1] is not None and ranges[-1].startswith("bytes=")


def test_a_corrupted_download_is_refused_and_deleted(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content, mode="corrupt")  # the hub's hash is right, the bytes are not
    with pytest.raises(ChecksumMismatchError, match="tiny.gguf failed verification") as raised:
        Downloader(paths, hub_config).download(entry_for("tiny.gguf", content))
    assert "Nothing was installed" in raised.value.user_message
    assert model_files(paths) == [] and not partial_path(paths, "tiny.gguf").exists()


def test_a_hub_file_that_differs_from_the_catalog_is_not_downloaded(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    wrong = entry_for("tiny.gguf", content, sha256="0" * 64)
    with pytest.raises(ChecksumMismatchError, match="not the catalog's file"):
        Downloader(paths, hub_config).download(wrong)
    assert fake_hub.gets("tiny.gguf") == [] and model_files(paths) == []


def test_a_truncated_transfer_installs_nothing_and_keeps_the_bytes_to_resume(paths, fake_hub, hub_config):
    content = payload(SIZE)
    served = fake_hub.add("tiny.gguf", content, mode="short")
    entry = entry_for("tiny.gguf", content)
    with pytest.raises(DownloadError, match="tiny.gguf") as raised:
        Downloader(paths, hub_config).download(entry)
    assert "resume" in raised.value.user_message
    assert model_files(paths) == []
    served.mode = "normal"
    assert Downloader(paths, hub_config).download(entry).path.read_bytes() == content


def test_cancel_stops_at_once_and_installs_nothing(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content, mode="slow")
    fake_hub.slow_chunk_seconds = 0.5
    cancel = CancelToken()
    part = partial_path(paths, "tiny.gguf")
    over = threading.Event()

    def cancel_once_bytes_arrive() -> None:
        # Not after a fixed time: on a loaded machine the download child may not have written yet.
        while not cancel.cancelled and not over.is_set():
            if part.exists() and part.stat().st_size > 0:
                cancel.cancel()
            time.sleep(0.05)

    threading.Thread(target=cancel_once_bytes_arrive, daemon=True).start()
    try:
        with pytest.raises(DownloadCancelled, match="stopped"):
            Downloader(paths, hub_config).download(entry_for("tiny.gguf", content), cancel=cancel)
    finally:
        over.set()
    assert model_files(paths) == []
    assert 0 < part.stat().st_size < SIZE


def test_a_full_disk_is_reported_before_any_byte_is_fetched(paths, fake_hub, hub_config, monkeypatch):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)

    class Usage:
        free = 1024

    monkeypatch.setattr(download_module.shutil, "disk_usage", lambda _folder: Usage())
    with pytest.raises(NotEnoughSpaceError, match="tiny.gguf"):
        Downloader(paths, hub_config).download(entry_for("tiny.gguf", content))
    assert fake_hub.gets("tiny.gguf") == [] and model_files(paths) == []


def test_a_server_answering_with_a_web_page_is_named_as_such(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content, mode="html")
    with pytest.raises(DownloadError, match="web page \\(HTML\\) instead of tiny.gguf"):
        Downloader(paths, hub_config).download(entry_for("tiny.gguf", content))
    assert model_files(paths) == []


def test_an_unverified_entry_is_pinned_to_the_hubs_lfs_hash_and_recorded_as_such(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    entry = entry_for("tiny.gguf", content, sha256=None, checksum="unverified")
    result = Downloader(paths, hub_config).download(entry)
    assert result.pinned_from_hub and result.sha256 == hashlib.sha256(content).hexdigest()
    library = ModelLibrary(paths, checkout_models=None)
    local = library.record_download(entry, result)
    assert local.checksum == "pinned from hub"
    listed = next(m for m in library.local_models() if m.path.name == "tiny.gguf")
    assert listed.kind == "downloaded" and listed.sha256 == result.sha256 and listed.checksum == "pinned from hub"


def test_offline_mode_refuses_without_touching_the_network(paths, fake_hub):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    offline = HubConfig.from_environment({"HF_ENDPOINT": fake_hub.url, "HF_HUB_OFFLINE": "1"})
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE"):
        Downloader(paths, offline).download(entry_for("tiny.gguf", content))
    assert fake_hub.requests == []


def test_hf_endpoint_chooses_the_hub():
    config = HubConfig.from_environment({"HF_ENDPOINT": "http://127.0.0.1:9/"})
    assert config.endpoint == "http://127.0.0.1:9" and not config.offline
    assert config.file_url("a/b", "main", "c.gguf") == "http://127.0.0.1:9/a/b/resolve/main/c.gguf"
    assert HubConfig.from_environment({}).endpoint == "https://huggingface.co"


def test_an_existing_file_of_the_same_name_is_never_overwritten(paths, fake_hub, hub_config):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    (paths.user_models / "tiny.gguf").write_bytes(b"my own model")
    with pytest.raises(DownloadError, match="already exists"):
        Downloader(paths, hub_config).download(entry_for("tiny.gguf", content))
    assert (paths.user_models / "tiny.gguf").read_bytes() == b"my own model"


def test_a_disk_that_fills_up_during_the_transfer_is_named_and_installs_nothing(paths, fake_hub, hub_config):
    import json
    import os

    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    entry = entry_for("tiny.gguf", content)
    # The partial file is /dev/full (every write fails with ENOSPC), recorded as this very download.
    paths.downloads.mkdir(parents=True, exist_ok=True)
    part = partial_path(paths, "tiny.gguf")
    os.symlink("/dev/full", part)
    part.with_name(part.name + ".json").write_text(
        json.dumps({"repo": entry.repo, "file": entry.file, "sha256": entry.sha256, "size": entry.size})
    )
    with pytest.raises(NotEnoughSpaceError, match="disk filled up while downloading tiny.gguf"):
        Downloader(paths, hub_config).download(entry)
    assert model_files(paths) == []
