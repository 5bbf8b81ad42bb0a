"""What the running app serves to other apps: nothing by default; loopback HTTP only while the
setting is on, on 127.0.0.1, from a child process; an encrypted store's passphrase on the
private socket, from which that child opens it."""

from __future__ import annotations

import dataclasses
import os
import socket
import stat

import pytest

from memdesk.app.handover import key_from_running_app, socket_path
from memdesk.core.base.errors import MemDeskError
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.mcp.serving import Serving
from testing.children import within


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.processes  # HTTP is served by a child process
def test_nothing_listens_by_default_and_http_follows_the_setting(services):
    port = _free_port()
    serving = Serving(services.paths, None)
    try:
        settings = dataclasses.replace(services.settings, mcp_http_port=port)
        serving.follow(settings)
        assert serving.url is None and not _listening(port)
        serving.follow(dataclasses.replace(settings, mcp_http=True))
        assert serving.url == f"http://127.0.0.1:{port}/mcp" and _listening(port)
        serving.follow(dataclasses.replace(settings, mcp_http=False))
        assert serving.url is None and not _listening(port)
    finally:
        serving.close()


def test_a_taken_port_is_a_clear_error(services):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        serving = Serving(services.paths, None)
        try:
            with pytest.raises(MemDeskError, match=f"127.0.0.1:{port}"):
                serving.follow(dataclasses.replace(services.settings, mcp_http=True, mcp_http_port=port))
        finally:
            serving.close()


def test_an_encrypted_store_is_lent_on_a_socket_only_this_user_can_open(services):
    serving = Serving(services.paths, "correct horse")
    try:
        path = socket_path(services.paths)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        assert key_from_running_app(services.paths) == "correct horse"
    finally:
        serving.close()
    assert not socket_path(services.paths).exists() and key_from_running_app(services.paths) is None


@pytest.mark.processes
def test_the_http_child_opens_an_encrypted_store_through_the_socket(memdesk_home):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.connections.apps import Apps

    paths = Paths.from_environment().ensure()
    services = open_services(paths, key="correct horse", embedder=HashingEmbedder())
    agent = services.create_agent("Sam")
    apps = Apps(services.db, services.clock)
    app = apps.register("Open WebUI")
    apps.grant(app.id, agent.id)
    token = apps.new_token(app.id)
    port = _free_port()
    settings = dataclasses.replace(services.settings, mcp_http=True, mcp_http_port=port)
    services.close()
    serving = Serving(paths, "correct horse")
    try:
        serving.follow(settings)

        async def read():
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
                async with Client(streamable_http_client(serving.url, http_client=http)) as client:
                    return await client.call_tool("core_memory_list", {})

        result = within(120, read())
    finally:
        serving.close()
    assert not result.is_error and result.structured_content["agent"] == "Sam"
