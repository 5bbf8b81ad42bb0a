"""Replies that copy: a known failure of small models, whichever they are.

Asked "What does my sister do?", a small model may answer with the user's first message word for
word, or say its previous reply again. A reply is a copy when the longest run of words it shares
with one of the recent messages (the user's and its own replies, the ``repeat_check_messages``
setting) is at least ``MIN_WORDS`` long and covers ``SHARE`` of that message or of the reply:
quoting a few words back ("you love gardening") is no copy, and a greeting echoed ("Hi!") is
too short to tell. A copy is generated once more, with the copied run in ``CallRequest.avoid``:
the runtime penalises repeating it (llama.cpp's DRY sampler, primed with it), so the model says
something else rather than the same again; the second answer stands whatever it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memdesk.core.text.words import WORD

#: A shared run shorter than this is no copy (echoing a greeting, quoting a name).
MIN_WORDS = 5
#: The part of the message, or of the reply, a shared run must cover to be a copy.
SHARE = 0.6
#: The observer's event when a copy is generated again (conversation_view says it in words).
REPEATED = "repeated"
#: Words compared at most per text (a reply or message longer than this is compared by its start).
MAX_WORDS = 400


@dataclass(frozen=True)
class Copy:
    """A reply that copies ``source``: the copied ``span`` (as the source wrote it), ``words`` long."""

    source: str
    span: str
    words: int


def _words(text: str) -> list[re.Match[str]]:
    return list(WORD.finditer(text))[:MAX_WORDS]


def _longest_run(a: list[str], b: list[str]) -> tuple[int, int]:
    """(length, end in ``b``) of the longest run of words ``a`` and ``b`` share."""
    best, end = 0, 0
    previous = [0] * (len(b) + 1)
    for word in a:
        current = [0] * (len(b) + 1)
        for j, other in enumerate(b, 1):
            if word == other:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best, end = current[j], j
        previous = current
    return best, end


def copied(reply: str, recent: Sequence[str]) -> Copy | None:
    """The first of ``recent`` that ``reply`` copies (see the module's docstring), or None."""
    reply_words = [m.group().casefold() for m in _words(reply)]
    if len(reply_words) < MIN_WORDS:
        return None
    for source in recent:
        matches = _words(source)
        source_words = [m.group().casefold() for m in matches]
        length, end = _longest_run(reply_words, source_words)
        if length < MIN_WORDS:
            continue
        if length >= SHARE * len(source_words) or length >= SHARE * len(reply_words):
            span = source[matches[end - length].start() : matches[end - 1].end()]
            return Copy(source, span, length)
    return None


def reply_of(call_text: str) -> str | None:
    """The text of a send_message call (None for any other call, or one that does not parse)."""
    try:
        data = json.loads(call_text)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("function") != "send_message":
        return None
    params = data.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    return message if isinstance(message, str) else None
