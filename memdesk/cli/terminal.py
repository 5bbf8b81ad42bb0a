"""The terminal commands' output: everything they write reaches the terminal through ``visible``.

Names, blocks, history, snapshot reasons, tool code and the agent's replies come from imported
files and the model; a terminal obeys the control characters in them (erase a line, move the
cursor, set the title or the clipboard). Rather than trusting every ``print`` to escape what it
interpolates, the commands run with ``sys.stdout`` and ``sys.stderr`` wrapped (``visible_output``)
and ask through ``ask``; the one line that rewrites itself (a progress line) says so with
``rewrite_line``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from memdesk.core.text.visible import visible


class VisibleStream:
    """A text stream whose writes go through ``visible`` (the rest is the wrapped stream's)."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(visible(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding...
        return getattr(self.raw, name)


def escaping(stream: TextIO) -> TextIO:
    """``stream``, wrapped once."""
    return stream if isinstance(stream, VisibleStream) else VisibleStream(stream)  # type: ignore[return-value]


@contextmanager
def visible_output() -> Iterator[None]:
    """Within: what is printed to stdout and stderr is escaped (logging's handler included, when
    it is set up inside)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = escaping(sys.stdout), escaping(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def ask(prompt: str) -> str:
    """``input`` whose prompt is escaped (on a terminal, ``input`` writes it past sys.stdout)."""
    return input(visible(prompt))


def rewrite_line(text: str, stream: TextIO | None = None) -> None:
    """Draw ``text`` over the current line (a progress line): the carriage return is ours."""
    stream = stream or sys.stderr
    raw = stream.raw if isinstance(stream, VisibleStream) else stream
    raw.write("\r" + visible(text))
    raw.flush()
