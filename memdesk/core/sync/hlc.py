"""A hybrid logical clock: milliseconds of wall time in the high bits, a counter in the low 16.

It never goes backwards, moves past every clock it has seen from another device (so a device whose
wall clock is hours behind still orders its new changes after what it has read), and stays close to
wall time, so the order of changes is the order people made them in when clocks agree."""

from __future__ import annotations

from collections.abc import Callable

COUNTER_BITS = 16
_COUNTER_MASK = (1 << COUNTER_BITS) - 1


def pack(ms: int, counter: int = 0) -> int:
    return (ms << COUNTER_BITS) | (counter & _COUNTER_MASK)


def wall_ms(value: int) -> int:
    return value >> COUNTER_BITS


class HybridClock:
    def __init__(self, now_ms: Callable[[], int], last: int = 0) -> None:
        self._now_ms = now_ms
        self.last = last

    def tick(self) -> int:
        """The clock of a new local change."""
        self.last = max(self.last + 1, pack(self._now_ms()))
        return self.last

    def observe(self, remote: int) -> int:
        """Having read a change made at ``remote``: later local changes order after it."""
        self.last = max(self.last, remote)
        return self.last
