"""What each kind of idle work does when the idle scheduler says it is due (memdesk.session.idle).

A timed heartbeat and a consolidation pass run on the session's job thread as background work (a
message preempts them), and only when nothing runs or waits there, an agent is open and no private
chat is on; otherwise they wait a whole idle time more. Retention runs here, on the scheduler's
thread and a connection of its own: a due policy the user confirmed is applied; a new one is shown
once per agent and session (the window asks to confirm it, the terminal says how) and applies only
once confirmed. A store busy with another writer means again at the next idle moment, not an error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from memdesk.core.base.errors import MemDeskError, StoreBusyError
from memdesk.core.memory.forget.retention import Retention
from memdesk.session.idle import AGAIN, CONSOLIDATION, DONE, HEARTBEAT, RETENTION
from memdesk.session.listener import SessionListener

log = logging.getLogger("memdesk.session.unasked")


class UnaskedWork:
    def __init__(
        self,
        *,
        may_run: Callable[[], bool],
        agent_id: Callable[[], int | None],
        heartbeat: Callable[[], None],
        consolidate: Callable[[], None],
        with_retention: Callable[[Callable[[Retention], Any]], Any],
        listener: SessionListener,
        run_soon: Callable[[str], None],
    ) -> None:
        """``may_run``: whether background work may start now; ``agent_id``: the agent the front
        end talks to (None during a private chat: nothing of it is kept); ``run_soon(kind)`` asks
        the scheduler to run ``kind`` now."""
        self._may_run = may_run
        self._agent_id = agent_id
        self._heartbeat = heartbeat
        self._consolidate = consolidate
        self._with_retention = with_retention
        self._listener = listener
        self._run_soon = run_soon
        self._lock = threading.Lock()  # one retention run at a time (idle time, or asked for)
        self._asked: set[int] = set()  # agents whose unconfirmed policy was shown this session

    def run(self, kind: str) -> str:
        """The idle scheduler's runner: DONE, or AGAIN a whole idle time later."""
        if kind == RETENTION:
            return self.apply_retention()
        if not self._may_run():
            return AGAIN  # a heartbeat that falls due while the agent cannot run waits another round
        if kind == HEARTBEAT:
            self._heartbeat()
        elif kind == CONSOLIDATION:
            self._consolidate()
        return DONE

    def announce_retention(self, agent_id: int) -> str | None:
        """What a due policy nobody confirmed would remove, once per agent and session (a front end
        shows it now rather than at the next idle moment); None when there is nothing to say."""

        def unconfirmed(retention: Retention) -> str | None:
            due = retention.due(agent_id)
            return due.describe() if due is not None and not retention.policy(agent_id).confirmed else None

        with self._lock:
            if agent_id in self._asked:
                return None
            description = self._with_retention(unconfirmed)
            if description is not None:
                self._asked.add(agent_id)
            return description

    def confirm_retention(self, agent_id: int) -> None:
        """The user confirmed the agent's policy: it applies now, and from now on while idle."""
        self._with_retention(lambda retention: retention.confirm(agent_id))
        self._run_soon(RETENTION)

    def apply_retention(self) -> str:
        """Apply the agent's due retention policy if it is confirmed; report a new one once."""
        agent_id = self._agent_id()
        if agent_id is None:
            return DONE

        def work(retention: Retention) -> tuple[str, Any]:
            due = retention.due(agent_id)
            if due is None:
                return "", None
            if not retention.policy(agent_id).confirmed:
                if agent_id in self._asked:
                    return "", None
                self._asked.add(agent_id)
                return "waits", due.describe()
            return "removed", retention.run_if_due(agent_id)

        with self._lock:
            try:
                what, detail = self._with_retention(work)
            except StoreBusyError:
                return AGAIN  # another writer held the store: at the next idle moment
            except MemDeskError as error:
                self._listener.on_failed(error)
                return DONE
            except Exception as error:  # noqa: BLE001 - idle work must never take the conversation down
                log.exception("retention failed")
                self._listener.on_failed(error)
                return DONE
        if what == "waits":
            self._listener.on_retention_waits(agent_id, detail)
        elif what == "removed" and detail:
            self._listener.on_retention_done(agent_id, detail)
        return DONE
