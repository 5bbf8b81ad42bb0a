"""MemDesk's MCP server through the SDK's own client (in this process): the tools and what they
promise (annotations, schemas, structured and quoted output), scopes per app, approvals, resources,
context for a message, a locked store, and bad input."""

from __future__ import annotations

import time

import jsonschema
import pytest
from mcp.shared.exceptions import MCPError

from memdesk.app.handover import HandoverServer
from memdesk.core.base.errors import PassphraseRequiredError
from memdesk.core.connections.quoting import NOTE
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage import open_database
from memdesk.mcp.server import MemoryServer, block_uri
from memdesk.mcp.stdio import stdio_identity
from memdesk.mcp.store import StoreThreads

READ_ONLY = {
    "list_agents",
    "memory_search",
    "conversation_search",
    "core_memory_list",
    "core_memory_read",
    "archival_memory_search",
    "knowledge_graph_query",
    "context_for_message",
}
WRITES = {"core_memory_append", "core_memory_replace", "archival_memory_insert"}


def _say(services, agent, text):
    services.memory.recall.add(
        agent.id, role="user", kind="user_message", content=text, search_text=text, created_at=services.clock.now()
    )


def test_an_app_with_read_access_is_offered_the_read_only_tools_annotated(session, grant, sam):
    grant("Cursor", sam)

    async def work(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session("Cursor", work)}
    assert set(tools) == READ_ONLY
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is False
        assert tool.output_schema["type"] == "object"
        assert tool.input_schema["properties"]["agent"]["enum"] == ["Sam"]


def test_an_app_that_may_write_also_gets_the_writes_annotated_as_they_behave(session, grant, sam):
    grant("Cursor", sam, write=True)

    async def work(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session("Cursor", work)}
    assert set(tools) == READ_ONLY | WRITES
    append, replace = tools["core_memory_append"].annotations, tools["core_memory_replace"].annotations
    assert (append.read_only_hint, append.destructive_hint, append.idempotent_hint) == (False, False, False)
    assert (replace.read_only_hint, replace.destructive_hint) == (False, True)


def test_a_search_returns_structured_quoted_memory_that_fits_its_schema(session, grant, services, sam):
    _say(services, sam, "My sister Eva moved to Lisbon last spring")
    grant("Cursor", sam)

    async def work(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("memory_search", {"query": "Where does Eva live?"})
        return tools["memory_search"], result

    tool, result = session("Cursor", work)
    assert result.is_error is False
    structured = result.structured_content
    jsonschema.validate(structured, tool.output_schema)
    assert structured["quoted_memory"] is True and structured["note"] == NOTE
    assert "Lisbon" in structured["hits"][0]["text"] and structured["hits"][0]["ref"].startswith("message:")
    assert result.content[0].text.startswith(NOTE)


def test_an_app_without_write_access_cannot_write_even_by_calling_the_tool(session, grant, services, sam):
    grant("Cursor", sam)

    async def work(client):
        return await client.call_tool(
            "core_memory_append", {"label": "human", "content": "Likes tea", "reason": "it said so"}
        )

    result = session("Cursor", work)
    assert result.is_error and "not change it" in result.content[0].text
    assert services.memory.core.get(sam.id, "human").value == ""


def test_an_append_from_an_app_waits_for_approval_and_lands_once_applied(session, grant, connections, services, sam):
    grant("Claude Desktop", sam, write=True)

    async def work(client):
        return await client.call_tool(
            "core_memory_append", {"label": "human", "content": "Plays the cello", "reason": "mentioned it today"}
        )

    result = session("Claude Desktop", work)
    assert result.structured_content["status"] == "pending"
    assert services.memory.core.get(sam.id, "human").value == ""
    connections.apply(result.structured_content["approval"])
    assert services.memory.core.get(sam.id, "human").value == "Plays the cello"


def test_a_secret_in_a_write_is_refused_with_what_was_found_not_the_secret(session, grant, services, sam):
    grant("Claude Desktop", sam, trusted=True)
    secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"

    async def work(client):
        return await client.call_tool(
            "archival_memory_insert", {"content": f"my key: {secret}", "reason": "keep it handy"}
        )

    result = session("Claude Desktop", work)
    assert result.is_error and "API key" in result.content[0].text and secret not in result.content[0].text
    assert services.memory.archival.count(sam.id) == 0


def test_unknown_tools_and_malformed_or_huge_arguments_are_protocol_errors(session, grant, sam):
    grant("Cursor", sam)

    async def work(client):
        errors = []
        for name, arguments in (
            ("delete_everything", {}),
            ("memory_search", {"query": 42}),
            ("memory_search", {"query": "x" * 100_000}),
            ("memory_search", {"query": "tea", "surprise": True}),
            ("knowledge_graph_query", {"entity": "Ann", "at": "yesterday"}),
        ):
            with pytest.raises(MCPError) as raised:
                await client.call_tool(name, arguments)
            errors.append(raised.value.message)
        errors.append((await client.call_tool("core_memory_list", {})).is_error)  # still serving
        return errors

    unknown, wrong_type, huge, extra, bad_date, still_fine = session("Cursor", work)
    assert "Unknown tool" in unknown and "query" in wrong_type and "too long" in huge
    assert "surprise" in extra and "at" in bad_date and still_fine is False


def test_each_core_block_is_a_resource_a_client_can_pin(session, grant, services, sam):
    services.memory.core.set_value(sam.id, "human", "Name: Robin")
    grant("Cursor", sam)

    async def work(client):
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        read = await client.read_resource(block_uri("Sam", "human"))
        return listed, read.contents[0].text

    listed, text = session("Cursor", work)
    assert listed == [block_uri("Sam", "persona"), block_uri("Sam", "human")]
    assert text.startswith(NOTE) and "Name: Robin" in text


def test_context_for_a_message_is_what_automatic_recall_would_place_with_its_budget(session, grant, services, sam):
    services.memory.agents.update(sam.id, context_start_id=10_000)  # everything below is out of view
    _say(services, sam, "Our dog is called Biscuit")
    grant("Cursor", sam)

    async def work(client):
        return await client.call_tool("context_for_message", {"message": "What is our dog called?"})

    result = session("Cursor", work).structured_content
    assert result["status"] == "placed" and result["budget_tokens"] > 0
    assert any("Biscuit" in m["text"] for m in result["memories"])
    assert result["exact_tokens"] is False


def test_a_locked_encrypted_store_is_a_clear_error_at_once_and_opens_once_the_window_lends_it(memdesk_home, tmp_path):
    from memdesk.core.base.paths import Paths

    paths = Paths.from_environment().ensure()
    open_database(paths.database, key="correct horse").close()
    threads = StoreThreads(paths, embedder=HashingEmbedder())
    try:
        started = time.monotonic()
        with pytest.raises(PassphraseRequiredError, match="locked") as raised:
            threads.call(threads.services)
        assert time.monotonic() - started < 5
        assert "window" in raised.value.hint
        lender = HandoverServer(paths, "correct horse")
        try:
            assert threads.call(lambda: threads.services().db.encrypted)
        finally:
            lender.close()
    finally:
        threads.close()


def test_a_locked_store_reaches_the_client_as_a_tool_error(memdesk_home):
    from memdesk.core.base.paths import Paths

    paths = Paths.from_environment().ensure()
    open_database(paths.database, key="correct horse").close()
    threads = StoreThreads(paths, embedder=HashingEmbedder())
    memory = MemoryServer(threads, stdio_identity("Cursor"))

    import asyncio

    from mcp import Client

    async def main():
        async with Client(memory.server) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("memory_search", {"query": "tea"})
            return listed, result

    try:
        listed, result = asyncio.run(main())
    finally:
        threads.close()
    assert "memory_search" in listed
    assert result.is_error and "locked" in result.content[0].text


def test_a_private_chat_is_never_returned_to_an_app(session, grant, services, sam):
    from memdesk.app.services import open_private_services

    private = open_private_services(services)
    try:
        private.memory.recall.add(
            sam.id,
            role="user",
            kind="user_message",
            content="My secret plan is the lighthouse",
            search_text="My secret plan is the lighthouse",
            created_at=services.clock.now(),
        )
        grant("Cursor", sam)

        async def work(client):
            found = await client.call_tool("memory_search", {"query": "secret plan lighthouse"})
            dated = await client.call_tool(
                "conversation_search", {"start_date": "2000-01-01", "end_date": "2100-01-01"}
            )
            return found, dated

        found, dated = session("Cursor", work)
    finally:
        private.close()
    for result in (found, dated):
        assert "lighthouse" not in result.content[0].text


class _MemoryKeyring:
    """A keyring backend that keeps passwords in this process (this machine has no keyring service)."""

    def __init__(self) -> None:
        import keyring.backend

        class Backend(keyring.backend.KeyringBackend):
            priority = 1  # type: ignore[assignment]
            stored: dict[tuple[str, str], str] = {}

            def get_password(self, service, username):
                return self.stored.get((service, username))

            def set_password(self, service, username, password):
                self.stored[(service, username)] = password

            def delete_password(self, service, username):
                import keyring.errors

                if self.stored.pop((service, username), None) is None:
                    raise keyring.errors.PasswordDeleteError(username)

        self.backend = Backend()


def test_a_passphrase_the_user_kept_in_the_keyring_opens_the_store_while_no_window_runs(memdesk_home):
    import keyring

    from memdesk.app.keyring import drop_from_keyring, keep_in_keyring
    from memdesk.core.base.paths import Paths

    previous = keyring.get_keyring()
    keyring.set_keyring(_MemoryKeyring().backend)
    paths = Paths.from_environment().ensure()
    open_database(paths.database, key="correct horse").close()
    threads = StoreThreads(paths, embedder=HashingEmbedder())
    try:
        keep_in_keyring(paths, "correct horse")
        assert threads.call(lambda: threads.services().db.encrypted)
        assert drop_from_keyring(paths) and not drop_from_keyring(paths)
    finally:
        threads.close()
        keyring.set_keyring(previous)


def test_apps_keep_working_while_the_window_holds_the_data_folder_and_writes(session, grant, services, sam):
    import threading

    from memdesk.app.instance import WINDOW, InstanceLock

    grant("Cursor", sam, trusted=True)
    writing, written = threading.Event(), threading.Event()

    def window_step() -> None:  # the window's agent saving a step: a short write transaction
        with services.db.transaction():
            services.memory.core.set_value(sam.id, "persona", "I am Sam.")
            writing.set()
            time.sleep(1.0)
        written.set()

    async def work(client):
        writing.wait(timeout=60)
        read = await client.call_tool("core_memory_read", {"label": "persona"})
        appended = await client.call_tool(
            "core_memory_append", {"label": "human", "content": "Likes maps", "reason": "said so"}
        )
        return read, appended

    with InstanceLock(services.paths.instance_lock, WINDOW):
        step = threading.Thread(target=window_step)
        step.start()
        read, appended = session("Cursor", work)
        step.join()
    assert not read.is_error and appended.structured_content["status"] == "applied"
    assert services.memory.core.get(sam.id, "human").value == "Likes maps"
    assert services.memory.core.get(sam.id, "persona").value == "I am Sam."
