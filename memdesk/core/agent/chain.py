"""Chain control: what the model may call next within one turn (Letta calls these tool rules).

Small models loop: the same search with the same query, step after step, until the step cap. The
rules below stop that early and say why, and the grammar enforces whatever can be enforced by the
tool list offered for the step:

* an identical call (same function, same arguments) a second time in a turn is refused before it
  runs, and the next step may only answer;
* each search function runs at most ``searches_per_turn`` new searches per turn (paging through
  results does not count: it is reading), and a new search starts at the first page;
* right after a search result the next step may only answer, read, edit memory or ask for the next
  page of that same search (the page's arguments are fixed by the grammar);
* a function that runs a generation of its own (``message_chatgpt``) runs once per turn: its prompt
  shares nothing with the conversation's, so each call also costs the next step a re-evaluation
  of the whole conversation (a 135M model asked it twice in a row, a 170 s first message);
* a function that can bring nothing new is not offered (``idle``, which the loop decides): a
  search or message_chatgpt when automatic recall has just placed what memory holds for the
  user's message (the answer is in view; each would only cost a step before the reply);
* the last step a turn may take must answer the user if nothing was said yet, and so must the
  step after the model yielded a user's turn without answering (the loop decides that one).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from memdesk.core.runtime.base import ToolSpec
from memdesk.core.tools.registry import Tool, ToolRegistry

#: Kinds that may follow a search result (besides its next page).
AFTER_SEARCH = frozenset({"answer", "read", "edit"})
REPLY = "send_message"
#: Functions that may run once per turn (see the module docstring).
ONCE_PER_TURN = frozenset({"message_chatgpt"})


@dataclass(frozen=True)
class ChainLimits:
    """A turn's limits, from the agent's settings."""

    max_steps: int
    searches_per_turn: int


@dataclass(frozen=True)
class _Search:
    function: str
    arguments: dict[str, Any]
    page: int
    pages: int


def _first_page_only(spec: ToolSpec) -> ToolSpec:
    """A new search starts at its first page: ``page`` is offered only to read the next page of
    the search just made (small models otherwise pick a page at random)."""
    properties = spec.parameters.get("properties", {})
    if "page" not in properties or "page" in spec.parameters.get("required", []):
        return spec
    return replace(
        spec, parameters={**spec.parameters, "properties": {k: v for k, v in properties.items() if k != "page"}}
    )


def call_key(function: str, arguments: dict[str, Any]) -> str:
    return function + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


class TurnRules:
    """The rules' state for one turn: the calls made so far and what they allow next."""

    def __init__(self, tools: ToolRegistry, limits: ChainLimits) -> None:
        self._tools = tools
        self._limits = limits
        #: Functions that can bring nothing new now, with why (the refusal says so); the loop sets
        #: it before each step, as an eviction during the turn may change it.
        self.idle: dict[str, str] = {}
        self._seen: set[str] = set()
        self._searches: Counter[str] = Counter()
        self._ran: set[str] = set()  # functions that ran this turn
        self._after_search: _Search | None = None
        self._must_answer = False
        self.steps = 0
        self.replied = False
        self.edited = False  # memory changed this turn (what a search finds may have changed with it)

    # --- before a step ---------------------------------------------------------------------
    def offered(self, specs: list[ToolSpec]) -> list[ToolSpec]:
        """The specs this step's grammar admits, narrowed from ``specs`` (the live tool set)."""
        last_step = self.steps == self._limits.max_steps - 1
        reply = [s for s in specs if s.name == REPLY]
        if reply and (self._must_answer or (last_step and not self.replied)):
            return reply
        allowed = []
        for spec in specs:
            tool = self._tools.resolve(spec.name)
            kind = tool.kind if tool is not None else "other"
            if self._after_search is not None:
                if spec.name == self._after_search.function:
                    paging = self._next_page_spec(spec)
                    if paging is not None:
                        allowed.append(paging)
                    continue
                if kind not in AFTER_SEARCH:
                    continue
            if spec.name in self.idle or (spec.name in ONCE_PER_TURN and spec.name in self._ran):
                continue
            if kind == "search":
                if self._searches[spec.name] >= self._limits.searches_per_turn:
                    continue
                spec = _first_page_only(spec)
            allowed.append(spec)
        return allowed or specs  # never an empty grammar: a registry without the usual tools

    def _next_page_spec(self, spec: ToolSpec) -> ToolSpec | None:
        search = self._after_search
        assert search is not None
        if search.page + 1 >= search.pages:
            return None
        properties = dict(spec.parameters.get("properties", {}))
        if "page" not in properties:
            return None
        for name, value in search.arguments.items():
            if name in properties and name != "page":
                properties[name] = {**properties[name], "enum": [value]}
        properties["page"] = {**properties["page"], "enum": [search.page + 1]}
        required = list(dict.fromkeys([*spec.parameters.get("required", []), *search.arguments, "page"]))
        return replace(spec, parameters={**spec.parameters, "properties": properties, "required": required})

    def refusal(self, tool: Tool, arguments: dict[str, Any]) -> str | None:
        """Why this call may not run now (for runtimes that cannot enforce the grammar, and for
        identical calls, which no grammar can forbid); None when it may."""
        if call_key(tool.name, arguments) in self._seen:
            return (
                f"You already called {tool.name} with these arguments in this turn; its result is above. "
                "Do not repeat it: answer the user now with send_message."
            )
        if self._must_answer and tool.name != REPLY:
            return "Answer the user now with send_message."
        if tool.name in self.idle:
            return f"{tool.name} cannot help now: {self.idle[tool.name]}. Answer the user with send_message."
        if tool.name in ONCE_PER_TURN and tool.name in self._ran:
            return f"{tool.name} may run once per turn; use its answer above, or answer the user with send_message."
        search = self._after_search
        if search is not None and tool.kind not in AFTER_SEARCH:
            paging = tool.name == search.function and {k: v for k, v in arguments.items() if k != "page"} == {
                k: v for k, v in search.arguments.items() if k != "page"
            }
            if not paging:
                return (
                    "Right after a search you may only answer, read, edit memory or ask for the next page;"
                    f" {tool.name} is not allowed now."
                )
        if (
            tool.kind == "search"
            and not self._is_paging(tool, arguments)
            and self._searches[tool.name] >= self._limits.searches_per_turn
        ):
            return (
                f"You already searched with {tool.name} {self._searches[tool.name]} times in this turn. "
                "Answer with what you found, or say you could not find it."
            )
        return None

    def _is_paging(self, tool: Tool, arguments: dict[str, Any]) -> bool:
        search = self._after_search
        return (
            search is not None
            and tool.name == search.function
            and (arguments.get("page") or 0) > 0
            and {k: v for k, v in arguments.items() if k != "page"}
            == {k: v for k, v in search.arguments.items() if k != "page"}
        )

    def require_answer(self) -> None:
        """The next step may only answer (the user is waiting)."""
        self._must_answer = True

    # --- after a step ----------------------------------------------------------------------
    def record(
        self, tool: Tool | None, arguments: dict[str, Any], *, ok: bool, refused: bool, page: tuple[int, int] | None
    ) -> None:
        """Note a finished step: ``refused`` when the rules refused it, ``page`` the (page, pages)
        of a search result."""
        self.steps += 1
        if refused:
            # A refused identical call means the model is looping: the next step must answer.
            self._must_answer = True
            return
        self._must_answer = False
        if tool is None:
            return
        self._seen.add(call_key(tool.name, arguments))
        self._ran.add(tool.name)
        if tool.name == REPLY and ok:
            self.replied = True
        if tool.kind == "edit" and ok:
            self.edited = True
        if tool.kind == "search" and ok:
            if not self._is_paging(tool, arguments):
                self._searches[tool.name] += 1
            self._after_search = _Search(tool.name, dict(arguments), *(page or (0, 1)))
        elif ok or tool.kind != "search":
            self._after_search = None
