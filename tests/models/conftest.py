"""A loopback HTTP server that imitates the Hugging Face hub's file endpoints, and catalog entries
pointing at it. No test here reaches the outside network."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memdesk.core.models.catalog import Architecture, CatalogEntry, ModelProfile
from memdesk.core.models.hub import HubConfig

REPO = "memdesk-test/Tiny-GGUF"
REVISION = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubFile:
    content: bytes
    mode: str = "normal"  # normal | corrupt | html | slow | cut_once | short | redirect
    lfs_sha256: str | None = None  # what X-Linked-Etag says; the content's sha256 by default
    cut_at: int = 0
    redirect_to: str = ""  # mode "redirect": where HEAD and GET send the client, as the hub sends it to a CDN


@dataclass
class FakeHub:
    """Serves ``/{repo}/resolve/{revision}/{file}`` with HEAD (hub metadata headers) and ranged GETs."""

    files: dict[str, HubFile] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, Range)
    authorizations: list[tuple[str, str | None]] = field(default_factory=list)  # (method, Authorization header)
    url: str = ""
    slow_chunk_seconds: float = 0.05

    def add(self, file: str, content: bytes, **options) -> HubFile:
        self.files[f"/{REPO}/resolve/{REVISION}/{file}"] = entry = HubFile(content, **options)
        return entry

    def gets(self, file: str) -> list[str | None]:
        return [rng for method, path, rng in self.requests if method == "GET" and path.endswith("/" + file)]


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _file(self) -> HubFile | None:
            self.hub_file = hub.files.get(self.path)
            return self.hub_file

        def _redirect(self, item: HubFile, with_metadata: bool) -> None:
            self.send_response(302)
            self.send_header("Location", item.redirect_to)
            if with_metadata:  # the hub's metadata rides on the redirect to its CDN
                sha = item.lfs_sha256 or hashlib.sha256(item.content).hexdigest()
                self.send_header("X-Repo-Commit", REVISION)
                self.send_header("X-Linked-Etag", f'"{sha}"')
                self.send_header("X-Linked-Size", str(len(item.content)))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_HEAD(self) -> None:  # noqa: N802 - http.server API
            hub.requests.append(("HEAD", self.path, self.headers.get("Range")))
            hub.authorizations.append(("HEAD", self.headers.get("Authorization")))
            item = self._file()
            if item is not None and item.mode == "redirect":
                self._redirect(item, with_metadata=True)
                return
            if item is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if item.mode == "html":
                page = b"<html><body>Welcome to the hotel wifi</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                return
            sha = item.lfs_sha256 or hashlib.sha256(item.content).hexdigest()
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("X-Repo-Commit", REVISION)
            self.send_header("X-Linked-Etag", f'"{sha}"')
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(len(item.content)))
            self.send_header("Content-Length", str(len(item.content)))
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            ranged = self.headers.get("Range")
            hub.requests.append(("GET", self.path, ranged))
            hub.authorizations.append(("GET", self.headers.get("Authorization")))
            item = self._file()
            if item is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if item.mode == "redirect":
                self._redirect(item, with_metadata=False)
                return
            body = item.content
            if item.mode == "corrupt":
                body = body[:-1] + bytes([body[-1] ^ 0xFF])
            if item.mode == "html":
                body = b"<html><body>Welcome to the hotel wifi</body></html>"
            start = int(ranged.split("=")[1].split("-")[0]) if ranged else 0
            total = len(body)
            chunk = body[start:]
            if item.mode == "short":
                chunk = chunk[: max(0, len(chunk) // 2)]
            self.send_response(206 if ranged else 200)
            if ranged:
                self.send_header("Content-Range", f"bytes {start}-{total - 1}/{total}")
            self.send_header("Content-Type", "text/html" if item.mode == "html" else "application/octet-stream")
            self.send_header("Content-Length", str(len(chunk)))
            self.end_headers()
            if item.mode == "cut_once" and item.cut_at and not ranged:
                self.wfile.write(chunk[: item.cut_at])
                self.wfile.flush()
                self.close_connection = True
                return
            step = 64 * 1024
            for offset in range(0, len(chunk), step):
                try:
                    self.wfile.write(chunk[offset : offset + step])
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return
                if item.mode == "slow":
                    time.sleep(hub.slow_chunk_seconds)

    return Handler


def _serving(hub: FakeHub):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture
def fake_hub():
    hub = FakeHub()
    server = _serving(hub)
    yield hub
    server.shutdown()
    server.server_close()


@pytest.fixture
def fake_cdn():
    """A second server (another port: another origin), where the hub redirects file downloads."""
    cdn = FakeHub()
    server = _serving(cdn)
    yield cdn
    server.shutdown()
    server.server_close()


@pytest.fixture
def hub_config(fake_hub) -> HubConfig:
    return HubConfig(endpoint=fake_hub.url, offline=False)


def entry_for(
    file: str, content: bytes, *, sha256: str | None = "auto", checksum: str = "published", **extra
) -> CatalogEntry:
    """A catalog entry for a file the fake hub serves."""
    if sha256 == "auto":
        sha256 = hashlib.sha256(content).hexdigest()
    return CatalogEntry(
        id=extra.pop("id", file.removesuffix(".gguf").lower()),
        name=extra.pop("name", file.removesuffix(".gguf")),
        file=file,
        size=len(content),
        licence="Apache-2.0",
        context_length=4096,
        architecture=Architecture(2, 1, 8),
        good_for="tests",
        repo=REPO,
        revision=REVISION,
        sha256=sha256,
        checksum=checksum,
        profile=extra.pop("profile", ModelProfile()),
        **extra,
    )


def payload(size: int, seed: int = 7) -> bytes:
    """Deterministic bytes that start like a GGUF file."""
    block = hashlib.sha256(str(seed).encode()).digest() * 2048
    data = (b"GGUF" + block * (size // len(block) + 1))[:size]
    return data


def write_gguf(path, metadata: dict) -> None:
    """A header-only GGUF (no tensors) with string and uint32 metadata: enough for the pre-checks,
    and for llama.cpp to read the architecture and refuse or accept it."""
    import struct

    def text(value: str) -> bytes:
        raw = value.encode("utf-8")
        return struct.pack("<Q", len(raw)) + raw

    body = b""
    for key, value in metadata.items():
        body += text(key)
        body += (
            struct.pack("<I", 4) + struct.pack("<I", value)
            if isinstance(value, int)
            else struct.pack("<I", 8) + text(value)
        )
    data = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 0) + struct.pack("<Q", len(metadata)) + body
    path.write_bytes(data + b"\0" * (-len(data) % 32))  # the (empty) tensor data starts aligned


PLAIN_TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
NO_SYSTEM_TEMPLATE = (
    "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ m.content }}{% endfor %}"
)
DROPS_SYSTEM_TEMPLATE = "{% for m in messages %}{% if m.role != 'system' %}{{ m.content }}{% endif %}{% endfor %}"


def gguf_payload(size: int, seed: int = 7) -> bytes:
    """``size`` bytes that pass MemDesk's pre-checks: a header-only llama GGUF with a chat template,
    then filler."""
    import struct

    def text(value: str) -> bytes:
        raw = value.encode("utf-8")
        return struct.pack("<Q", len(raw)) + raw

    metadata = {"general.architecture": "llama", "tokenizer.chat_template": PLAIN_TEMPLATE}
    body = b"".join(text(k) + struct.pack("<I", 8) + text(v) for k, v in metadata.items())
    header = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 0) + struct.pack("<Q", len(metadata)) + body
    header += b"\0" * (-len(header) % 32)
    return header + payload(size - len(header), seed)[: size - len(header)]
