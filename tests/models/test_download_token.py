"""The user's Hugging Face token goes to the hub that issued it (huggingface.co) and nowhere else:
not to an HF_ENDPOINT mirror, not along a redirect to another scheme, host or port. Two loopback
servers stand for the hub and its CDN; the token comes from HF_TOKEN, as a logged-in user's would."""

from __future__ import annotations

import pytest

from memdesk.core.base.paths import Paths
from memdesk.core.models.download import Downloader
from memdesk.core.models.hub import HubConfig
from tests.models.conftest import REPO, REVISION, entry_for, payload

SIZE = 256 * 1024 + 3
TOKEN = "hf_memdesk_test_token_not_for_anyone_else"


@pytest.fixture
def paths(memdesk_home) -> Paths:
    return Paths.from_environment().ensure()


@pytest.fixture
def bearer(monkeypatch, tmp_path) -> str:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no token file of this machine's
    monkeypatch.delenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", raising=False)
    return f"Bearer {TOKEN}"


def test_the_token_goes_to_the_hub_but_not_along_its_redirect_to_another_origin(paths, fake_hub, fake_cdn, bearer):
    content = payload(SIZE)
    fake_cdn.add("tiny.gguf", content)
    fake_hub.add(
        "tiny.gguf", content, mode="redirect", redirect_to=f"{fake_cdn.url}/{REPO}/resolve/{REVISION}/tiny.gguf"
    )
    # This loopback hub stands for huggingface.co; the CDN is the same host on another port.
    hub = HubConfig(endpoint=fake_hub.url, token_origin=fake_hub.url)
    result = Downloader(paths, hub).download(entry_for("tiny.gguf", content))
    assert result.path.read_bytes() == content
    assert fake_hub.authorizations and all(auth == bearer for _, auth in fake_hub.authorizations)
    assert fake_cdn.gets("tiny.gguf") == [None]  # the bytes came from the CDN...
    assert fake_cdn.authorizations and all(
        auth is None for _, auth in fake_cdn.authorizations
    )  # ...which never saw the token


def test_an_hf_endpoint_mirror_never_receives_the_token(paths, fake_hub, bearer):
    content = payload(SIZE)
    fake_hub.add("tiny.gguf", content)
    mirror = HubConfig.from_environment({"HF_ENDPOINT": fake_hub.url})
    result = Downloader(paths, mirror).download(entry_for("tiny.gguf", content))
    assert result.path.read_bytes() == content
    assert "GET" in [method for method, _ in fake_hub.authorizations]
    assert all(auth is None for _, auth in fake_hub.authorizations)


@pytest.mark.parametrize(
    ("url", "sent"),
    [
        ("https://huggingface.co/org/model/resolve/main/m.gguf", True),
        ("https://HuggingFace.co:443/org/model", True),
        ("http://huggingface.co/org/model", False),  # downgraded to plain http
        ("https://huggingface.co:8443/org/model", False),
        ("https://cdn-lfs.hf.co/repos/ab/cd", False),
        ("https://huggingface.co.example.net/org/model", False),
        ("https://hf-mirror.example/org/model", False),
    ],
)
def test_the_token_is_meant_for_the_official_hubs_origin_only(url, sent):
    assert HubConfig().sends_token_to(url) is sent
    assert HubConfig(endpoint="https://hf-mirror.example").sends_token_to(url) is sent
