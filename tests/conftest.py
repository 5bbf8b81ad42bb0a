"""Shared fixtures. Every test runs with MEMDESK_HOME in its own temporary folder."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from desktop.app import Services, open_agent, open_services
from desktop.core.clock import ManualClock
from desktop.core.embedding.hashing import HashingEmbedder
from desktop.core.runtime.scripted import ScriptedRuntime
from desktop.core.tools.context import AllowAll
from desktop.paths import HOME_ENV, Paths

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def memdesk_home(tmp_path, monkeypatch):
    home = tmp_path / "memdesk-home"
    monkeypatch.setenv(HOME_ENV, str(home))
    return home


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def services(memdesk_home, clock) -> Services:
    """Real store on disk under the temp home, with the fast hashing embedder."""
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder(), clock=clock)
    yield services
    services.close()


@pytest.fixture
def runtime() -> ScriptedRuntime:
    return ScriptedRuntime(context_window=16384)


@pytest.fixture
def make_agent(services, runtime):
    """Build an agent named ``name`` on the scripted runtime."""

    def build(name: str = "sam", *, runtime=runtime, consent=None, observer=None, settings=None, **create):
        record = services.agents.find(name) or services.create_agent(name, **create)
        return open_agent(services, record, runtime, consent=consent or AllowAll(), observer=observer, settings=settings)

    return build


@pytest.fixture(scope="session")
def real_embedder():
    """The bundled all-MiniLM-L6-v2, loaded once per test session (a few seconds)."""
    from desktop.core.embedding.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    embedder.load()
    return embedder


NETWORK_EVENTS = ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo", "socket.gethostbyname")
_INET = (socket.AF_INET, socket.AF_INET6)


class SocketAudit:
    """Records network socket events while ``recording``. Audit hooks cannot be removed, so one
    hook is installed for the session and switched on and off."""

    def __init__(self) -> None:
        self.recording = False
        self.events: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if not self.recording or event not in NETWORK_EVENTS:
            return
        if event.startswith("socket.get"):
            self.events.append(f"{event} {args!r}")
        elif getattr(args[0], "family", None) in _INET:
            self.events.append(f"{event} {args[1:]!r}")

    def __enter__(self) -> "SocketAudit":
        self.events.clear()
        self.recording = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.recording = False


@pytest.fixture(scope="session")
def socket_audit() -> SocketAudit:
    """``with socket_audit: ...`` records every internet socket call made through Python."""
    return SocketAudit()


#: The published Letta agent files (Apache-2.0, with their LICENSE) stay outside the repository.
AGENTFILE_FOLDERS = [
    Path(os.environ["MEMDESK_AGENTFILES"]) if os.environ.get("MEMDESK_AGENTFILES") else None,
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "agentfiles",
    Path("/work/shared/data/agentfiles"),
]


@pytest.fixture(scope="session")
def agentfiles() -> Path:
    """The folder holding Letta's memgpt_agent.af and friends (MEMDESK_AGENTFILES overrides)."""
    for folder in AGENTFILE_FOLDERS:
        if folder is not None and (folder / "memgpt_agent.af").is_file():
            return folder
    pytest.fail("The Letta agent files are missing: set MEMDESK_AGENTFILES to the folder holding memgpt_agent.af")
