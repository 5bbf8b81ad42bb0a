"""An agent's searchable messages in order, as arrays the message ranker scores: ids, who wrote
each, when, and whether it continues the turn before it. A conversation only grows at its end, so
a timeline is read once and then extended in place; anything else reads it afresh."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

import numpy as np

from memdesk.core.base.clock import parse_iso
from memdesk.core.retrieval.changes import row_changes
from memdesk.core.storage import Database

#: Turns further apart than this are not one conversation, so they do not lend each other score.
SESSION_GAP_SECONDS = 6 * 3600
#: Message times are stored in UTC and a query's dates are the user's: a day either side.
DATE_SLACK = timedelta(days=1)


class _Room:
    """Arrays with room to grow, of which a timeline's arrays are views: a new message is written
    once at the end instead of the whole timeline being copied (a million-message conversation's
    arrays took 40-60 ms to copy before each reply). ``used``: how many rows the newest timeline
    shows; only that timeline may write beyond them."""

    def __init__(
        self,
        ids: np.ndarray,
        authors: np.ndarray,
        same: np.ndarray,
        times: np.ndarray,
        talks: np.ndarray,
        lengths: np.ndarray,
        extra: int,
    ) -> None:
        size = len(ids) + max(extra, len(ids), 1024)  # doubling: each row is copied a constant number of times
        self.ids = np.empty(size, dtype=np.int64)
        self.authors = np.empty(size, dtype=object)
        self.same = np.zeros(size, dtype=bool)
        self.times = np.empty(size, dtype=np.float64)
        self.talks = np.zeros(size, dtype=np.int64)
        self.lengths = np.zeros(size, dtype=np.int64)
        for target, source in (
            (self.ids, ids),
            (self.authors, authors),
            (self.same, same),
            (self.times, times),
            (self.talks, talks),
            (self.lengths, lengths),
        ):
            target[: len(source)] = source
        self.used = len(ids)


@dataclass
class Timeline:
    token: tuple
    ids: np.ndarray  # ascending
    authors: np.ndarray  # who wrote each item: its author, or the name of its role's speaker ("" unknown)
    same_session: np.ndarray  # item i continues item i-1's conversation
    times: np.ndarray  # POSIX seconds of each item
    talks: np.ndarray  # each item's imported conversation (0: the agent's own chat)
    lengths: np.ndarray  # characters of each item's search text (the learned ranker reads it)
    speakers: frozenset[str] = frozenset()  # the distinct non-empty authors
    room: _Room | None = None  # where the arrays live when they can grow in place
    _sessions: np.ndarray | None = None  # each item's session number, counted once when asked

    @property
    def sessions(self) -> np.ndarray:
        """Each item's session: the number of session breaks up to it (a prefix sum, kept)."""
        if self._sessions is None or len(self._sessions) != len(self.ids):
            self._sessions = np.cumsum(~self.same_session)
        return self._sessions

    def index_of(self, message_ids) -> np.ndarray:
        """Each id's position, -1 where it is not in the timeline (a million ids need no dict)."""
        wanted = np.asarray(message_ids, dtype=np.int64)
        where = np.searchsorted(self.ids, wanted)
        found = where < len(self.ids)
        found[found] = self.ids[where[found]] == wanted[found]
        return np.where(found, where, -1)

    @property
    def position(self) -> Positions:
        return Positions(self)


class Positions:
    """``message id -> position`` for code that asks one id at a time (graph expansion)."""

    def __init__(self, timeline: Timeline) -> None:
        self._timeline = timeline

    def get(self, message_id: int, default: int | None = None) -> int | None:
        found = int(self._timeline.index_of([message_id])[0])
        return default if found < 0 else found

    def __contains__(self, message_id: int) -> bool:
        return self.get(message_id) is not None

    def __getitem__(self, message_id: int) -> int:
        found = self.get(message_id)
        if found is None:
            raise KeyError(message_id)
        return found


class Timelines:
    """The timelines of one store's agents, each kept until its messages change. ``user_name``:
    the person's name (a setting, read each time); with it and the agent's own name, app messages,
    which have no author, still have a speaker."""

    def __init__(self, db: Database, user_name: Callable[[], str]) -> None:
        self._db = db
        self._user_name = user_name
        self._timelines: dict[int, Timeline] = {}
        self._lock = threading.Lock()

    def get(self, agent_id: int) -> Timeline:
        """The agent's searchable messages in order. After the first read only the new messages are
        read (a million-message timeline is not read again for each turn); anything else (an edit, a
        deletion, another speaker name) reads it afresh."""
        db = self._db
        user = (self._user_name() or "").strip()
        agent = db.scalar("SELECT name FROM agents WHERE id = ?", (agent_id,)) or ""
        added, changed = row_changes(db, "messages", agent_id)
        token = (added, changed, db.scalar("SELECT MAX(id) FROM messages WHERE agent_id = ?", (agent_id,)), user, agent)
        with self._lock:
            cached = self._timelines.get(agent_id)
        if cached is not None and cached.token == token:
            return cached
        speaker = {"user": user, "assistant": agent}
        select = (
            "SELECT id, created_at, author, role, conversation_id, LENGTH(search_text) FROM messages"
            " WHERE agent_id = ? AND search_text != ''"
        )
        timeline = None
        if (
            cached is not None
            and cached.token[1:2] + cached.token[3:] == token[1:2] + token[3:]
            and cached.token[2] is not None
        ):
            newer = int(
                db.scalar("SELECT COUNT(*) FROM messages WHERE agent_id = ? AND id > ?", (agent_id, cached.token[2]))
            )
            if cached.token[0] + newer == added:  # nothing removed or edited, every addition at the end
                rows = db.query(f"{select} AND id > ? ORDER BY id", (agent_id, cached.token[2]))
                timeline = extended(cached, token, *_timeline_rows(rows, speaker), self._lock)
        if timeline is None:
            ids, times, authors, talks, lengths = _timeline_rows(
                db.query(f"{select} ORDER BY id", (agent_id,)), speaker
            )
            same = np.zeros(len(ids), dtype=bool)
            same[1:] = _same_session(times, talks)
            timeline = Timeline(
                token, ids, authors, same, times, talks, lengths, frozenset(a for a in set(authors.tolist()) if a)
            )
        with self._lock:
            self._timelines[agent_id] = timeline
        return timeline


def _timeline_rows(rows, speaker: dict[str, str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    times = np.array([parse_iso(r[1]).timestamp() for r in rows], dtype=np.float64)
    authors = np.array([r[2] or speaker.get(r[3], "") for r in rows], dtype=object)
    talks = np.array([r[4] or 0 for r in rows], dtype=np.int64)
    lengths = np.array([r[5] or 0 for r in rows], dtype=np.int64)
    return ids, times, authors, talks, lengths


def _same_session(times: np.ndarray, talks: np.ndarray) -> np.ndarray:
    """Item i continues item i-1's conversation: close in time and in the same conversation (two
    imported chats of one afternoon, or one and the agent's own chat, lend each other nothing)."""
    return (np.abs(np.diff(times)) <= SESSION_GAP_SECONDS) & (talks[1:] == talks[:-1])


def extended(
    timeline: Timeline,
    token: tuple,
    ids: np.ndarray,
    times: np.ndarray,
    authors: np.ndarray,
    talks: np.ndarray,
    lengths: np.ndarray,
    lock: threading.Lock,
) -> Timeline:
    """``timeline`` with newer messages appended: written into its room when it is the newest view
    of it and there is space, otherwise into new room (never into rows another timeline shows)."""
    if not len(ids):
        return replace(timeline, token=token)
    start = len(timeline.ids)
    same = np.zeros(len(ids), dtype=bool)
    joined = np.concatenate([timeline.times[max(0, start - 1) :], times])
    joined_talks = np.concatenate([timeline.talks[max(0, start - 1) :], talks])
    same[len(ids) - (len(joined) - 1) :] = _same_session(joined, joined_talks)
    end = start + len(ids)
    with lock:
        room = timeline.room
        if room is None or room.used != start or end > len(room.ids):
            room = _Room(
                timeline.ids,
                timeline.authors,
                timeline.same_session,
                timeline.times,
                timeline.talks,
                timeline.lengths,
                len(ids),
            )
        room.ids[start:end], room.authors[start:end], room.same[start:end], room.times[start:end] = (
            ids,
            authors,
            same,
            times,
        )
        room.talks[start:end] = talks
        room.lengths[start:end] = lengths
        room.used = end
    return Timeline(
        token,
        room.ids[:end],
        room.authors[:end],
        room.same[:end],
        room.times[:end],
        room.talks[:end],
        room.lengths[:end],
        timeline.speakers | frozenset(a for a in set(authors.tolist()) if a),
        room,
    )


def older_than(timeline: Timeline, before_id: int) -> Timeline:
    """What is out of the context window that begins at a message id: the part of the timeline
    before it (ids ascend: a prefix; views, not copies), and the imported conversations' messages
    after it, which are never in the context window (then copies)."""
    n = int(np.searchsorted(timeline.ids, before_id))
    later = np.flatnonzero(timeline.talks[n:] > 0) + n
    keep: slice | np.ndarray = slice(0, n) if not len(later) else np.concatenate([np.arange(n), later])
    same = timeline.same_session[keep]
    if len(later):
        same = same.copy()
        same[n:] = same[n:] & (np.diff(later, prepend=n - 1) == 1)  # neighbours only where nothing was cut between
    return Timeline(
        (*timeline.token, before_id),
        timeline.ids[keep],
        timeline.authors[keep],
        same,
        timeline.times[keep],
        timeline.talks[keep],
        timeline.lengths[keep],
        timeline.speakers,  # the names anyone used: a name is not a search word even when its speaker is in context
    )


def on_dates(times: np.ndarray, dates: list[tuple[date, date]]) -> np.ndarray:
    """1.0 for items written within one of the inclusive day ranges (with DATE_SLACK), else 0."""
    hit = np.zeros(times.size, dtype=bool)
    for first, last in dates:
        start = datetime.combine(first, time.min, UTC) - DATE_SLACK
        end = datetime.combine(last, time.min, UTC) + timedelta(days=1) + DATE_SLACK
        hit |= (times >= start.timestamp()) & (times < end.timestamp())
    return hit.astype(np.float64)
