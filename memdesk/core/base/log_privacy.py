"""What MemDesk's log files keep of a failure: where it happened, never what was said.

The log (``logs/memdesk.log``) and the crash log (``logs/crash.log``) are plain files that outlive
the conversation, beside a store that may be encrypted, and they are what a user attaches to a bug
report. An exception's message can quote memory: a tool's arguments, a search query, a passage,
the text a parser choked on. So an exception is written as its type and the frames it went through
(file, line, function and that line of code), with its chained causes the same way, and its message
is left out; a log call that passes an exception as an argument gets its type only. Messages
written on purpose (counts, ids, file names) are kept as they are.

``faulthandler``'s dump of a native crash holds frames only, so it needs nothing from here.
"""

from __future__ import annotations

import logging
import traceback
from types import TracebackType

WITHHELD = "(message withheld)"
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _name(error: BaseException) -> str:
    kind = type(error)
    module = kind.__module__
    return kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"


def describe(error: BaseException) -> str:
    """``error``'s type, message withheld: what stands in for it in a log line."""
    return f"{_name(error)} {WITHHELD}"


def traceback_without_messages(
    error: BaseException, trace: TracebackType | None = None, *, _seen: set[int] | None = None
) -> str:
    """Python's traceback of ``error`` (its causes and contexts first, the members of an exception
    group after it, indented) with every exception's message left out."""
    seen = set() if _seen is None else _seen
    seen.add(id(error))
    parts: list[str] = []
    cause, context = error.__cause__, error.__context__
    if cause is not None and id(cause) not in seen:
        parts += [traceback_without_messages(cause, cause.__traceback__, _seen=seen), _CAUSE]
    elif context is not None and not error.__suppress_context__ and id(context) not in seen:
        parts += [traceback_without_messages(context, context.__traceback__, _seen=seen), _CONTEXT]
    trace = trace if trace is not None else error.__traceback__
    if trace is not None:
        parts += ["Traceback (most recent call last):\n", *traceback.format_tb(trace)]
    parts.append(describe(error) + "\n")
    for number, member in enumerate(getattr(error, "exceptions", None) or (), start=1):
        if isinstance(member, BaseException) and id(member) not in seen:
            inner = traceback_without_messages(member, member.__traceback__, _seen=seen)
            parts.append(f"  +-- {number} --\n" + "".join(f"  | {line}\n" for line in inner.rstrip("\n").split("\n")))
    return "".join(parts)


class PrivateFormatter(logging.Formatter):
    """The log files' formatter: exceptions (``exc_info``, or passed as arguments) without messages."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or isinstance(record.msg, BaseException) or _has_error(record.args):
            # A copy: other handlers keep the original, and a traceback another handler formatted
            # first (cached in exc_text, messages included) is not reused here.
            record = logging.makeLogRecord(record.__dict__)
            record.exc_text = None
            if isinstance(record.msg, BaseException):
                record.msg = describe(record.msg)
            record.args = _without_errors(record.args)
        return super().format(record)

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        kind, error, trace = ei
        if error is None:
            return "" if kind is None else f"{kind.__qualname__} {WITHHELD}"
        return traceback_without_messages(error, trace).rstrip("\n")


def _has_error(args) -> bool:
    values = args.values() if isinstance(args, dict) else (args or ())
    return any(isinstance(value, BaseException) for value in values)


def _without_errors(args):
    if not args:
        return args
    if isinstance(args, dict):
        return {key: describe(value) if isinstance(value, BaseException) else value for key, value in args.items()}
    return tuple(describe(value) if isinstance(value, BaseException) else value for value in args)


def where_it_failed(error: BaseException) -> str:
    """An unexpected failure during a turn as the log keeps it: the exception's type and the frames
    it went through (a tool's arguments or a search query in its message stay out of the file)."""
    return f"{type(error).__name__}\n" + "".join(traceback.format_tb(error.__traceback__)).rstrip()
