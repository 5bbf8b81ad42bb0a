"""How many tokens automatic recall's section may take for one message.

A fixed share of the window was both too little and too much: at 4,096 tokens a fifth of the
window (819) held about 15 memories, too few for a question whose evidence is spread over a
conversation, and yet every message paid it, so the conversation was evicted about once every two
turns (sections stay in the queue until the next eviction). The section is now sized by what the
message needs:

* a message that **asks** something (a question with words to search for) gets the configured
  share (``auto_recall_budget``) of the window, and in a window smaller than ``REFERENCE_WINDOW``
  the section it would get there, as far as the room left for the conversation allows: a small
  window gets a useful section when it matters;
* a message that **tells** something gets ``TELL_SHARE`` of that: the few best memories, as
  context for the reply, at a cost that lets the conversation stay in view.
"""

from __future__ import annotations

import re

from memdesk.core.agent.context import ContextBudget
from memdesk.core.retrieval.query import terms

#: The window the budget share was measured at: on LoCoMo's development conversations a fifth of
#: 8,192 tokens (1,638) put the evidence of 0.87 of the questions in the prompt, a fifth of 4,096
#: (819, about 15 memories) 0.79 (docs/evaluation.md).
REFERENCE_WINDOW = 8192
#: The most of the room left for the conversation (the window minus the fixed prompt and the
#: answer's reserve) a question's section may take in a smaller window: the newest messages must
#: still fit beside it.
ASK_ROOM_SHARE = 0.75
#: A message that asks nothing gets this share of a question's budget (409 tokens at 8,192).
TELL_SHARE = 1 / 6

_ASKING_START = re.compile(
    r"^\s*(what|when|where|who|whom|whose|which|why|how|do|does|did|is|are|was|were|can|could|would|will|have|has|had|"
    r"tell me|remind me|remember|recall)\b",
    re.IGNORECASE,
)


def asks(text: str) -> bool:
    """Whether a message asks something memory could answer: a question (a "?", or a sentence
    opening with a question word) that has words to search for ("How about you?" has none)."""
    if not terms(text):
        return False
    if "?" in text:
        return any(terms(part) for part in _questions(text))
    return any(_ASKING_START.match(sentence) for sentence in re.split(r"(?<=[.!])\s+|\n+", text))


def _questions(text: str) -> list[str]:
    """The sentences of ``text`` that end with a question mark."""
    return [part for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.rstrip().endswith("?")]


def section_tokens(text: str, budget: ContextBudget, fraction: float) -> int:
    """The section's budget for the message ``text`` (``budget``: the prompt as it stands, from
    which the fixed part and the room for the conversation are read; ``fraction``: the
    ``auto_recall_budget`` setting, a share of the window)."""
    window = budget.window
    if not asks(text):
        return int(window * fraction * TELL_SHARE)
    fixed = budget.used - budget.tokens("messages") - budget.tokens("recall")  # instructions, tools, memory, summary
    room = max(0, budget.eviction_at - fixed)
    return max(int(window * fraction), min(int(REFERENCE_WINDOW * fraction), int(room * ASK_ROOM_SHARE)))
