"""Fixtures of the MCP front end's tests: a store with an agent and an app, the server's store
threads on it, and the SDK's own client talking to the server in this process."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from mcp import Client
from mcp_types import Implementation

from memdesk.core.connections.gate import Connections
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.mcp.server import MemoryServer
from memdesk.mcp.stdio import stdio_identity
from memdesk.mcp.store import StoreThreads


@pytest.fixture
def sam(services):
    return services.create_agent("Sam")


@pytest.fixture
def connections(services):
    return Connections(services.memory, services.clock, keep_days=lambda: 90)


@pytest.fixture
def grant(connections):
    """``grant(app, agent, write=False, trusted=False)``: what the user gives an app."""

    def give(app: str, agent, *, write: bool = False, trusted: bool = False):
        apps = connections.apps
        found = apps.find(app) or apps.register(app)
        apps.grant(found.id, agent.id, can_write=write or trusted)
        apps.set_trusted(found.id, trusted)
        return found

    return give


@pytest.fixture
def threads(services):
    threads = StoreThreads(services.paths, embedder=HashingEmbedder())
    yield threads
    threads.close()


@pytest.fixture
def session(threads):
    """``session(app_name)``: run ``work(client)`` against the server as the app named so (the
    name it declares when it connects, as Claude Desktop or Cursor do)."""

    def run(app: str, work):
        memory = MemoryServer(threads, stdio_identity(None))

        async def main():
            async with Client(memory.server, client_info=Implementation(name=app, version="1.0")) as client:
                return await work(client)

        return asyncio.run(main())

    return run


@contextlib.contextmanager
def no_warm_up(threads):
    """Keep the embedder's warm-up from loading anything (the hashing embedder needs none)."""
    yield
