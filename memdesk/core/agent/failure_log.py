"""What the log keeps of an unexpected failure during a turn: the exception's type and the frames it
went through, never its message. A message may quote what the user or the model wrote (a tool's
arguments, a search query), and the log is a file that outlives the conversation, a private
chat's included; the conversation itself keeps the message where the model needs it."""

from __future__ import annotations

import traceback


def where_it_failed(error: BaseException) -> str:
    return f"{type(error).__name__}\n" + "".join(traceback.format_tb(error.__traceback__)).rstrip()
