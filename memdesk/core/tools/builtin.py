"""The seed's functions. Their docstrings are what the model reads about them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

from memdesk.core.base.errors import ToolError
from memdesk.core.runtime.base import ChatMessage, TextRequest
from memdesk.core.tools.consent_text import one_line, with_data
from memdesk.core.tools.context import ToolContext
from memdesk.core.tools.graph_tools import graph_tools
from memdesk.core.tools.registry import Tool, ToolKind, ToolRegistry, make_tool

MAX_PAUSE_MINUTES = 360
PAGE_SIZE = 5


# --- messaging -------------------------------------------------------------------------------
def send_message(ctx: ToolContext, message: str, remember: str | None = None) -> str:
    """Sends a message to the user: the only way they see anything you say.

    Args:
        message: What the user reads: your answer.
        remember: A new fact about the user, added to your human block.
    """
    if not message.strip():
        raise ToolError("message must not be empty")
    note = (remember or "").strip()
    return SENT + (" " + _remember(ctx, note) if note else "")


SENT = "Sent message successfully."
#: ``send_message``'s optional note, and the block it adds to.
REMEMBER, HUMAN = "remember", "human"


def _remember(ctx: ToolContext, note: str) -> str:
    """Add ``note`` to the human block in the step that answers (a memory edit needs no step of
    its own before the reply). The message is sent whatever happens here: a note that cannot be
    saved is reported back, not a failed call (which would send the message again)."""
    block = ctx.core.get(ctx.agent_id, HUMAN)
    if block is not None and note.casefold() in block.value.casefold():
        return "The human block holds that already."
    try:
        block = ctx.core.append(ctx.agent_id, HUMAN, note, cause=ctx.cause, source=ctx.source)
    except ToolError as error:
        return f"Not remembered: {error.message}"
    ctx.changed_blocks.add(block.label)
    return f"Remembered in the human block ({block.chars}/{block.limit} characters)."


def pause_heartbeats(ctx: ToolContext, minutes: int) -> str:
    """Ignore timed heartbeats for a while (user messages and other events still arrive).

    Args:
        minutes: At most 360.
    """
    if minutes < 0:
        raise ToolError("minutes must not be negative")
    minutes = min(minutes, MAX_PAUSE_MINUTES)
    until = ctx.clock.now() + timedelta(minutes=minutes)
    ctx.agents.update(ctx.agent_id, heartbeats_paused_until=until)
    return f"Pausing timed heartbeats for {minutes} minutes."


def message_chatgpt(ctx: ToolContext, message: str) -> str:
    """Ask a more basic AI that keeps no memory of earlier interactions; the user does not see it.

    Args:
        message: A complete, self-contained question.
    """
    messages = [ChatMessage("system", ctx.plain_assistant_prompt), ChatMessage("user", message)]
    answer = ctx.model().generate_text(TextRequest(messages, ctx.params), cancel=ctx.cancel)
    return answer.strip() or "(no answer)"


# --- core memory -----------------------------------------------------------------------------
def core_memory_append(ctx: ToolContext, label: str, content: str) -> str:
    """Append to a core memory block.

    Args:
        label: The block, for example persona or human.
    """
    block = ctx.core.append(ctx.agent_id, label, content, cause=ctx.cause, source=ctx.source)
    ctx.changed_blocks.add(block.label)
    return f"Appended to the {label} block ({block.chars}/{block.limit} characters)."


def core_memory_replace(ctx: ToolContext, label: str, old_content: str, new_content: str) -> str:
    """Replace text in a core memory block (an empty new_content deletes it).

    Args:
        label: The block, for example persona or human.
        old_content: The exact text to replace.
    """
    block = ctx.core.replace(ctx.agent_id, label, old_content, new_content, cause=ctx.cause, source=ctx.source)
    ctx.changed_blocks.add(block.label)
    return f"Updated the {label} block ({block.chars}/{block.limit} characters)."


# --- recall memory ---------------------------------------------------------------------------
def _page_header(shown: int, total: int, page: int, pages: int) -> str:
    if total == 0:
        return "No results found."
    return f"Showing {shown} of {total} results (page {page + 1}/{pages}):"


def _check_page(page: int | None) -> int:
    page = page or 0
    if page < 0:
        raise ToolError("page counts from 0")
    return page


def _format_messages(ctx: ToolContext, result, page: int) -> str:
    """One page of recall hits as the model reads them; also kept for the archival panel."""
    ctx.last_hits = [("recall", hit) for hit in result.hits]
    ctx.last_page = (page, result.pages)
    if not result.hits and result.total and page >= result.pages:
        raise ToolError(f"page {page} is past the last page ({result.pages - 1})")
    lines = [_page_header(len(result.hits), result.total, page, result.pages)]
    for message in result.hits:
        who = message.author or message.role
        lines.append(f"- [{message.created_at:%Y-%m-%d %H:%M}] {who}: {message.search_text}")
    return "\n".join(lines)


def conversation_search(ctx: ToolContext, query: str, page: int | None = 0) -> str:
    """Search prior conversation history (recall memory) by text.

    Args:
        page: Result page, from 0 (the default); the next page in a follow-up call.
    """
    page = _check_page(page)
    result = ctx.recall.search_text(ctx.agent_id, query, page=page, page_size=PAGE_SIZE)
    return _format_messages(ctx, result, page)


def _parse_date(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value.strip())
    except ValueError as error:
        raise ToolError(f"{name} must be a date like 2026-11-30, got {value!r}") from error


def conversation_search_date(ctx: ToolContext, start_date: str, end_date: str, page: int | None = 0) -> str:
    """Search prior conversation history (recall memory) between two dates, both included.

    Args:
        start_date: YYYY-MM-DD.
        end_date: YYYY-MM-DD.
        page: Result page, from 0 (the default); the next page in a follow-up call.
    """
    page = _check_page(page)
    start, end = _parse_date(start_date, "start_date"), _parse_date(end_date, "end_date")
    if end < start:
        raise ToolError("end_date is before start_date")
    result = ctx.recall.search_date(ctx.agent_id, start, end, page=page, page_size=PAGE_SIZE)
    return _format_messages(ctx, result, page)


# --- archival memory -------------------------------------------------------------------------
def archival_memory_insert(ctx: ToolContext, content: str) -> str:
    """Add to archival memory, phrased so that a search finds it later."""
    if not content.strip():
        raise ToolError("content must not be empty")
    ids = ctx.archival.insert(ctx.agent_id, content, cause=ctx.cause, source=ctx.source)
    return f"Saved to archival memory ({len(ids)} passage{'s' if len(ids) != 1 else ''})."


def archival_memory_search(ctx: ToolContext, query: str, page: int | None = 0) -> str:
    """Search archival memory by meaning.

    Args:
        page: Result page, from 0 (the default); the next page in a follow-up call.
    """
    page = _check_page(page)
    result = ctx.archival.search(ctx.agent_id, query, page=page, page_size=PAGE_SIZE)
    ctx.last_hits = [("archival", hit) for hit in result.hits]
    ctx.last_page = (page, result.pages)
    if not result.hits and result.total and page >= result.pages:
        raise ToolError(f"page {page} is past the last page ({result.pages - 1})")
    lines = [_page_header(len(result.hits), result.total, page, result.pages)]
    for hit in result.hits:
        passage = hit.passage
        source = passage.citation.label()
        cite = f" (source: {source})" if source else ""
        lines.append(f"- [{passage.created_at:%Y-%m-%d}]{cite} {passage.text}")
    return "\n".join(lines)


# --- files and network (need consent) --------------------------------------------------------
def read_from_text_file(ctx: ToolContext, filename: str, line_start: int, num_lines: int | None = 1) -> str:
    """Read lines from a text file in your files folder.

    Args:
        filename: Relative to your files folder.
        line_start: The first line to read, from 1.
        num_lines: Lines to read (1 by default, at most 200).
    """
    return ctx.sandbox().read_lines(filename, line_start, num_lines or 1)


def append_to_text_file(ctx: ToolContext, filename: str, content: str) -> str:
    """Append text to a file in your files folder (created if missing); the user is asked first.

    Args:
        filename: Relative to your files folder.
    """
    written = ctx.sandbox().append(filename, content)  # the agent asked the user first (Tool.requires_consent)
    return f"Appended {written} characters to {filename}."


def http_request(ctx: ToolContext, method: str, url: str, payload_json: str) -> str:
    """An HTTP request to an allowed host, if the user enabled them; the user is asked first.

    Args:
        method: For example GET or POST.
        payload_json: The request body as a JSON string ("" for none).
    """
    return ctx.http.request(
        method, url, payload_json, cancel=ctx.cancel
    )  # the agent asked the user first (Tool.requires_consent)


BUILTIN_FUNCTIONS: list[Callable[..., str]] = [
    send_message,
    pause_heartbeats,
    message_chatgpt,
    core_memory_append,
    core_memory_replace,
    conversation_search,
    conversation_search_date,
    archival_memory_insert,
    archival_memory_search,
    read_from_text_file,
    append_to_text_file,
    http_request,
]
# Checked before the user is asked: a disabled feature or a path outside the sandbox never
# prompts the user.
CHECKS = {
    "append_to_text_file": lambda ctx, **a: ctx.sandbox().resolve(a["filename"]),
    "http_request": lambda ctx, **a: ctx.http.check(a["url"]),
}


def _append_summary(arguments: dict) -> str:
    content = str(arguments.get("content", ""))
    return with_data(f"append {len(content)} characters to {arguments.get('filename')}", "the text", content)


def _http_summary(arguments: dict) -> str:
    action = f"{str(arguments.get('method', '')).upper()} {arguments.get('url')}"
    payload = str(arguments.get("payload_json") or "")
    return with_data(action, f"body ({len(payload)} characters)", payload) if payload.strip() else one_line(action)


#: Functions that touch the user's machine or network: the user is asked before each call, shown
#: the action and, in full, the data it would send or write (see consent_text).
CONSENT_SUMMARIES = {
    "append_to_text_file": _append_summary,
    "http_request": _http_summary,
}
CONSENT_REQUIRED = set(CONSENT_SUMMARIES)
#: Functions that write the store run inside the step's transaction; the others before it.
WRITES_STORE = {
    "send_message",
    "pause_heartbeats",
    "core_memory_append",
    "core_memory_replace",
    "archival_memory_insert",
}
#: What each function does, for the chain rules (see ToolKind); the rest are "other".
KINDS: dict[str, ToolKind] = {
    "send_message": "answer",
    "conversation_search": "search",
    "conversation_search_date": "search",
    "archival_memory_search": "search",
    "read_from_text_file": "read",
    "core_memory_append": "edit",
    "core_memory_replace": "edit",
    "archival_memory_insert": "edit",
}
#: The seed's older names for the recall searches, accepted as aliases.
ALIASES = {"recall_memory_search": "conversation_search", "recall_memory_search_date": "conversation_search_date"}


def builtin_tools() -> list[Tool]:
    seed = [
        make_tool(
            function,
            requires_consent=function.__name__ in CONSENT_REQUIRED,
            kind=KINDS.get(function.__name__, "other"),
            writes_store=function.__name__ in WRITES_STORE,
            check=CHECKS.get(function.__name__),
            consent_summary=CONSENT_SUMMARIES.get(function.__name__),
        )
        for function in BUILTIN_FUNCTIONS
    ]
    return seed + graph_tools()


def default_registry(extra: list[Tool] | None = None) -> ToolRegistry:
    registry = ToolRegistry(builtin_tools())
    for old, new in ALIASES.items():
        registry.alias(old, new)
    for tool in extra or []:
        registry.add(tool)
    return registry
