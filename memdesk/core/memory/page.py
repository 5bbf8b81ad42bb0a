"""One page of search results, of messages (recall) or passages (archival) alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    hits: list[T]
    total: int  # hits on all pages
    page: int  # this page's number, from 0
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))
