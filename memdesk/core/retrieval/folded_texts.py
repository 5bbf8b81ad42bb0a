"""Verbatim matches found in memory: an agent's search texts, casefolded, in one string.

Every search asks which messages contain the query verbatim, in any case and script (``casefold``,
as the store's ``memdesk_contains`` compares). Asking the store runs a Python function over every
text: 15 ms for 10,000 messages on the loaded 2-core machine, a tenth of automatic recall's
section. The message ranker already holds every text of a conversation of up to 20,000 messages
for its parts index (memdesk.core.retrieval.message_parts); here the same texts are kept
casefolded and joined, so one ``str.find`` per matching message answers instead. It is fed by the
parts index as that index grows or is rebuilt, so it is as current as the parts are.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Sequence

#: Between two texts: casefold never yields it, and a query holding it is answered by the store.
SEPARATOR = "\x00"


class _Texts:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.starts: list[int] = []  # where each text begins in the joined string
        self.chunks: list[str] = []  # the joined string, still in pieces since the last search
        self.size = 0
        self.joined = ""


class FoldedTexts:
    """One store's search texts per agent, casefolded and joined, for verbatim matching."""

    def __init__(self) -> None:
        self._agents: dict[int, _Texts] = {}
        self._lock = threading.Lock()

    def update(self, agent_id: int, rows: Sequence[tuple[int, str]], appended: bool) -> None:
        """Add (id, search text) rows, ascending ids, after the agent's texts (``appended``) or
        instead of them."""
        with self._lock:
            texts = self._agents.get(agent_id) if appended else None
            if texts is None:
                texts = self._agents[agent_id] = _Texts()
            for message_id, text in rows:
                folded = text.casefold() + SEPARATOR
                texts.ids.append(int(message_id))
                texts.starts.append(texts.size)
                texts.chunks.append(folded)
                texts.size += len(folded)

    def forget(self, agent_id: int) -> None:
        with self._lock:
            self._agents.pop(agent_id, None)

    def containing(self, agent_id: int, query: str) -> list[int] | None:
        """Ids of the agent's messages whose text contains ``query`` (casefolded), ascending;
        None when the agent's texts are not held, or the query cannot be looked up here."""
        needle = query.casefold()
        if not needle or SEPARATOR in needle:
            return None
        with self._lock:
            texts = self._agents.get(agent_id)
            if texts is None:
                return None
            if texts.chunks:
                texts.joined = "".join([texts.joined, *texts.chunks])
                texts.chunks = []
            joined, starts, ids = texts.joined, texts.starts, texts.ids
        found: list[int] = []
        at = joined.find(needle)
        while at >= 0:
            text = bisect_right(starts, at) - 1
            found.append(ids[text])
            if text + 1 >= len(starts):
                break
            at = joined.find(needle, starts[text + 1])  # one hit per message is enough
        return found
