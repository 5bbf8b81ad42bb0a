"""Verbatim matches found in memory: an agent's search texts, casefolded, in a few long strings.

Every search asks which messages contain the query verbatim, in any case and script (``casefold``,
as the store's ``memdesk_contains`` compares). Asking the store runs a Python function over every
text: 15 ms for 10,000 messages on the loaded 2-core machine, a tenth of automatic recall's
section. The message ranker already holds every text of a conversation of up to 20,000 messages
for its parts index (memdesk.core.retrieval.message_parts); here the same texts are kept
casefolded and joined, so one ``str.find`` per matching message answers instead. It is fed by the
parts index as that index grows or is rebuilt, so it is as current as the parts are.

The texts are joined in blocks of about ``BLOCK_CHARS``: a new message re-joins only the last
block, and a character outside Latin-1 (an emoji) widens only its own block's string. A
conversation of more than ``MAX_CHARS`` characters is not held (the store answers): a million
BEAM-length messages would take gigabytes.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Sequence

#: Between two texts: casefold never yields it, and a query holding it is answered by the store.
SEPARATOR = "\x00"
BLOCK_CHARS = 1 << 20
#: Characters held per agent at most (10,000 LoCoMo turns: 1.4 million; 10,000 BEAM messages: 27 million).
MAX_CHARS = 32_000_000


class _Block:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.starts: list[int] = []  # where each text begins in the block's string
        self.text = ""  # the texts joined, as of the last search
        self.pending: list[str] = []  # added since
        self.size = 0

    def add(self, message_id: int, folded: str) -> None:
        self.ids.append(message_id)
        self.starts.append(self.size)
        self.pending.append(folded)
        self.size += len(folded)

    def joined(self) -> tuple[str, list[int], list[int]]:
        if self.pending:
            self.text = "".join([self.text, *self.pending])
            self.pending = []
        return self.text, self.starts, self.ids


class FoldedTexts:
    """One store's search texts per agent, casefolded and joined, for verbatim matching."""

    def __init__(self) -> None:
        self._agents: dict[int, list[_Block] | None] = {}  # None: too long to hold
        self._lock = threading.Lock()

    def update(self, agent_id: int, rows: Sequence[tuple[int, str]], appended: bool) -> None:
        """Add (id, search text) rows, ascending ids, after the agent's texts (``appended``) or
        instead of them."""
        with self._lock:
            blocks = self._agents.get(agent_id, []) if appended else []
            if blocks is None:
                return
            held = sum(block.size for block in blocks)
            for message_id, text in rows:
                folded = text.casefold() + SEPARATOR
                held += len(folded)
                if held > MAX_CHARS:
                    self._agents[agent_id] = None
                    return
                if not blocks or blocks[-1].size >= BLOCK_CHARS:
                    blocks.append(_Block())
                blocks[-1].add(int(message_id), folded)
            self._agents[agent_id] = blocks

    def containing(self, agent_id: int, query: str) -> list[int] | None:
        """Ids of the agent's messages whose text contains ``query`` (casefolded), ascending;
        None when the agent's texts are not held, or the query cannot be looked up here."""
        needle = query.casefold()
        if not needle or SEPARATOR in needle:
            return None
        with self._lock:
            blocks = self._agents.get(agent_id)
            if blocks is None:
                return None
            views = [block.joined() for block in blocks]
        found: list[int] = []
        for joined, starts, ids in views:
            at = joined.find(needle)
            while at >= 0:
                text = bisect_right(starts, at) - 1
                found.append(ids[text])
                if text + 1 >= len(starts):
                    break
                at = joined.find(needle, starts[text + 1])  # one hit per message is enough
        return found
