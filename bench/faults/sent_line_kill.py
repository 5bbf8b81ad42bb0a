"""A line typed at the terminal prompt (or a message sent in the real window, ``window=True``)
while background work holds the model, the process killed -9 at a random moment after: 0 sent
lines lost, none saved twice (issue 18)."""

from __future__ import annotations

import random
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from bench.faults.support import child, child_env, kill_after, progress

# The children are testing/fault_children/*.py: the terminal loop with one kind of background work
# holding the model when the line arrives (sent_line), and the real window the same way (sent_line_window).
SENT_LINE_KINDS = ("login", "heartbeat", "consolidation", "graph")
SENT_LINE_WINDOW_KINDS = ("login", "heartbeat")
SENT_LINE_HOLD_S = 3.0  # how long the background work keeps the model after the line arrives
SENT_LINE_KILL_WITHIN_S = 10.0


def run(
    trials: int,
    rng: random.Random,
    *,
    hold: float = SENT_LINE_HOLD_S,
    within: float = SENT_LINE_KILL_WITHIN_S,
    window: bool = False,
) -> dict:
    """A line sent while background work runs, the process killed -9 at a random moment 0 to
    ``within`` seconds after the prompt returned the line (``window``: after Send was pressed in
    the window): the line must be in the store, once, and, when the kill came before the answer,
    be the message the next start answers (issue 22: the newest one owed a reply)."""
    from memdesk.core.agent import unanswered as owed_replies
    from memdesk.core.memory.recall import RecallMemory
    from memdesk.core.storage import open_database

    program, kinds = ("sent_line_window", SENT_LINE_WINDOW_KINDS) if window else ("sent_line", SENT_LINE_KINDS)
    name = "sent_line_kill_window" if window else "sent_line_kill"
    by_kind = {kind: {"trials": 0, "sent_lines_lost": 0, "killed_before_the_answer": 0} for kind in kinds}
    sent = lost = twice = bad_integrity = killed = unanswered = owed_on_reopen = 0
    lost_trials: list[dict] = []  # which, to tell a slow save from a line saved too late
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        for trial in range(trials):
            kind = kinds[trial % len(kinds)]
            progress(f"{name}: trial {trial + 1} of {trials} ({kind})")
            home = Path(folder) / f"trial-{trial}"
            line = f"sent line {trial}: are you still there?"
            delay = rng.uniform(0.0, within)
            process = subprocess.Popen(
                child(program, kind, str(hold)),
                env=child_env(home),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            watchdog = threading.Timer(120, process.kill)  # a child that never gets busy must not hang the run
            watchdog.start()
            accepted = answered = False
            for out in process.stdout:
                if "@busy" in out and process.stdin is not None and not process.stdin.closed and not accepted:
                    process.stdin.write(line + "\n")
                    process.stdin.flush()
                elif "@read" in out and not accepted:
                    accepted = True
                    threading.Thread(target=kill_after, args=(process, delay), daemon=True).start()
                elif accepted and "Got it." in out:
                    answered = True
            code = process.wait()
            watchdog.cancel()
            killed += accepted and code == -signal.SIGKILL
            sent += accepted
            by_kind[kind]["trials"] += 1
            db = open_database(home / "memdesk.sqlite3")
            try:
                if db.scalar("PRAGMA integrity_check") != "ok":
                    bad_integrity += 1
                copies = int(
                    db.scalar("SELECT COUNT(*) FROM messages WHERE kind = 'user_message' AND search_text = ?", (line,))
                )
                agent_id = db.scalar(
                    "SELECT agent_id FROM messages WHERE kind = 'user_message' AND search_text = ?", (line,)
                )
                owed = owed_replies.newest(db, RecallMemory(db), agent_id) if agent_id is not None else None
            finally:
                db.close()
            if accepted and copies == 0:
                lost += 1
                by_kind[kind]["sent_lines_lost"] += 1
                lost_trials.append(
                    {"trial": trial, "kind": kind, "killed_after_s": round(delay, 3), "answered": answered}
                )
            twice += copies > 1
            if accepted and not answered:
                unanswered += 1
                by_kind[kind]["killed_before_the_answer"] += 1
                owed_on_reopen += owed is not None and owed.search_text == line
    return {
        "trials": trials,
        "kinds": list(kinds),
        "hold_seconds": hold,
        "kill_within_seconds": within,
        "sent_lines": sent,
        "sent_lines_lost": lost,
        "sent_lines_saved_twice": twice,
        "killed_before_the_answer": unanswered,
        "answered_on_the_next_start": owed_on_reopen,
        "killed_by_the_campaign": killed,
        "integrity_failures": bad_integrity,
        "by_kind": by_kind,
        "lost_trials": lost_trials[:10],
        "ok": lost == 0
        and twice == 0
        and bad_integrity == 0
        and sent == trials
        and killed == trials
        and owed_on_reopen == unanswered,
    }
