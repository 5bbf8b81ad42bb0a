"""The fault campaign: kill, fuzz and audit MemDesk, and check that nothing committed is lost.

    python -m bench.faults --json [--trials N]

One JSON object; exit 1 when any target is missed. Targets (issue 12):
- agent_kill: kill -9 of the agent's process at random points of a real step (scripted runtime),
  100 trials: 0 lost committed messages, PRAGMA integrity_check ok, the next start resumes.
- sent_line_kill (issue 18): a line typed at the terminal prompt while background work runs
  (the login turn, a timed heartbeat, a consolidation pass, knowledge-graph extraction; each holds
  the model or the analyser for 3 s that nothing cuts short), the process killed -9 at a random
  moment 0-10 s after the prompt returned it, 100 trials: 0 sent lines lost, none saved twice.
- sent_line_kill_window: the same in the real window (offscreen), a message typed and sent while
  the login turn or a timed heartbeat holds the model, 100 trials: 0 lost, none saved twice.
- ingest_kill: kill -9 during ingestion of a 200-file folder, 50 trials: the next run resumes,
  ends with the chunk count of an uninterrupted run and no duplicate passages.
- fuzz: 10,000 malformed function calls (random text, wrong JSON, wrong types, huge strings,
  unknown functions, NUL bytes) through the agent, raw text as with the grammar off: 0 crashes,
  each answered as a failed call.
- model_kill: the model child killed while idle and while generating, 20 each: the next message
  works (real llama.cpp with the bundled model).
- sockets: a default run of the CLI and of the window (offscreen) opens 0 network sockets.

``--only NAME`` (repeatable) runs some campaigns alone at full scale, for a shared machine;
``--trials N`` scales every campaign down (N agent kills and N sent-line kills of each front end, N/2 ingestion
trials, 100*N fuzzed calls, N/5 model kills of each kind) for a quick run; the defaults are the
issue's counts.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import bench_parser
from testing.real_app import AppRun, RealApp

ROOT = Path(__file__).resolve().parent.parent
_T0 = time.monotonic()


def progress(text: str) -> None:
    """A line on stderr per step, so a run that is stopped from outside shows where it was."""
    print(f"[faults {time.monotonic() - _T0:7.1f} s] {text}", file=sys.stderr, flush=True)


def _child(name: str, *args: str) -> list[str]:
    """The command line of one of testing/fault_children's programs."""
    return [sys.executable, "-m", f"testing.fault_children.{name}", *args]


def _child_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MEMDESK_HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "QT_QPA_PLATFORM": "offscreen",
    }


def _kill_after(process: subprocess.Popen, delay: float) -> None:
    time.sleep(delay)
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)


# --- agent kill -------------------------------------------------------------------------------
def agent_kill(trials: int, rng: random.Random) -> dict:
    from memdesk.app.agents import open_agent
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import HOME_ENV, Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.runtime.scripted import ScriptedRuntime, say
    from memdesk.core.tools.context import AllowAll

    lost = bad_integrity = failed_resumes = committed_total = killed_in_turn = 0
    turn_seconds = 1.0  # one turn of the child, measured as it runs (the machine's load changes)
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        home = Path(folder) / "home"
        next_n = 0
        for _ in range(trials):
            process = subprocess.Popen(
                _child("agent", str(next_n)),
                env=_child_env(home),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            committed: list[int] = []
            first = process.stdout.readline()  # "ready": the store is open and the agent built
            if first.strip() == "ready":
                # Killed at a random point of its (turns_before + 1)-th turn: whatever the load,
                # every trial has committed messages at stake and dies inside a step.
                turns_before = rng.randint(0, 4)
                delay = rng.uniform(0.0, turn_seconds)
                if turns_before == 0:
                    threading.Thread(target=_kill_after, args=(process, delay), daemon=True).start()
                last = time.perf_counter()
                for line in process.stdout:
                    if line.startswith("committed "):
                        committed.append(int(line.split()[1]))
                        now = time.perf_counter()
                        turn_seconds, last = 0.8 * turn_seconds + 0.2 * (now - last), now
                        if len(committed) == turns_before:
                            threading.Thread(target=_kill_after, args=(process, delay), daemon=True).start()
            try:
                code = process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            killed_in_turn += code == -signal.SIGKILL
            committed_total += len(committed)
            os.environ[HOME_ENV] = str(home)
            services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
            try:
                if services.db.scalar("PRAGMA integrity_check") != "ok":
                    bad_integrity += 1
                stored = {
                    m.content
                    for m in services.memory.recall.all(services.agents.get_by_name("sam").id)
                    if m.kind == "user_message"
                }
                lost += sum(1 for n in committed if not any(f'"message {n}"' in text for text in stored))
                # The next start resumes: the same agent answers a new message.
                runtime = ScriptedRuntime([say("back")], context_window=1_000_000)
                agent = open_agent(services, services.agents.get_by_name("sam"), runtime, consent=AllowAll())
                if not agent.send_user_message("are you there?").steps[-1].ok:
                    failed_resumes += 1
            except Exception:  # noqa: BLE001 - a store that cannot be reopened is a failed resume
                failed_resumes += 1
            finally:
                services.close()
            next_n += 100_000
    return {
        "trials": trials,
        "killed_by_the_campaign": killed_in_turn,
        "committed_messages": committed_total,
        "lost_committed_messages": lost,
        "integrity_failures": bad_integrity,
        "failed_resumes": failed_resumes,
        "ok": lost == 0 and bad_integrity == 0 and failed_resumes == 0 and killed_in_turn == trials,
    }


# --- a line sent while background work runs ----------------------------------------------------
# The children are testing/fault_children/*.py: the terminal loop with one kind of background work
# holding the model when the line arrives (sent_line), and the real window the same way (sent_line_window).
SENT_LINE_KINDS = ("login", "heartbeat", "consolidation", "graph")
SENT_LINE_WINDOW_KINDS = ("login", "heartbeat")
SENT_LINE_HOLD_S = 3.0  # how long the background work keeps the model after the line arrives
SENT_LINE_KILL_WITHIN_S = 10.0


def sent_line_kill(
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

    child, kinds = ("sent_line_window", SENT_LINE_WINDOW_KINDS) if window else ("sent_line", SENT_LINE_KINDS)
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
                _child(child, kind, str(hold)),
                env=_child_env(home),
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
                    threading.Thread(target=_kill_after, args=(process, delay), daemon=True).start()
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


# --- ingestion kill ---------------------------------------------------------------------------


def _make_folder(folder: Path, files: int, rng: random.Random) -> None:
    folder.mkdir(parents=True)
    words = "garden river lantern violin harbour orchard ledger pepper canvas marble thunder meadow".split()
    for n in range(files):
        paragraphs = [
            " ".join(rng.choice(words) for _ in range(rng.randint(40, 120))) + "." for _ in range(rng.randint(3, 12))
        ]
        (folder / f"note-{n:03d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")


def _new_store(path: Path) -> None:
    from memdesk.core.storage import open_database

    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('a', '2026-01-01T00:00:00+00:00', '')")
    db.close()


def _chunk_counts(path: Path) -> tuple[int, int, int, set[str]]:
    from memdesk.core.storage import open_database

    db = open_database(path)
    try:
        total = int(db.scalar("SELECT COUNT(*) FROM passages"))
        distinct = int(db.scalar("SELECT COUNT(DISTINCT document_id || ':' || chunk_index) FROM passages"))
        vectors = int(db.scalar("SELECT COUNT(*) FROM passages_vec"))
        statuses = {r[0] for r in db.query("SELECT status FROM documents")}
        return total, distinct, vectors, statuses
    finally:
        db.close()


def ingest_kill(trials: int, rng: random.Random, files: int = 200) -> dict:
    from testing.fault_children import ingest as ingest_child

    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        base = Path(folder)
        docs = base / "docs"
        _make_folder(docs, files, rng)
        reference = base / "reference.sqlite3"
        _new_store(reference)
        started = time.perf_counter()
        ingest_child.ingest(reference, docs)
        reference_s = time.perf_counter() - started
        expected = _chunk_counts(reference)[0]
        mismatches = duplicates = unfinished = killed_mid_run = attempts = 0
        # A trial counts once the kill landed during ingestion; a child that finished first is
        # resumed and checked too, and another trial is run (up to three times the count).
        while killed_mid_run < trials and attempts < 3 * trials:
            attempts += 1
            store = base / f"trial-{attempts}.sqlite3"
            _new_store(store)
            process = subprocess.Popen(
                _child("ingest", str(store), str(docs)),
                env=_child_env(base / "home"),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            if process.stdout.readline().strip() == "ready":  # imported and about to ingest
                _kill_after(process, rng.uniform(0.0, reference_s))
            process.kill()
            if process.wait() == -signal.SIGKILL:
                chunks, _, vectors, statuses = _chunk_counts(store)
                killed_mid_run += chunks < expected or vectors < chunks or statuses != {"done"}
            ingest_child.ingest(store, docs)
            total, distinct, vectors, statuses = _chunk_counts(store)
            mismatches += total != expected
            duplicates += total - distinct
            unfinished += vectors != total or statuses != {"done"}
            store.unlink(missing_ok=True)
    return {
        "trials": trials,
        "attempts": attempts,
        "files": files,
        "reference_chunks": expected,
        "killed_mid_run": killed_mid_run,
        "chunk_count_mismatches": mismatches,
        "duplicate_passages": duplicates,
        "unfinished_after_resume": unfinished,
        "ok": mismatches == 0 and duplicates == 0 and unfinished == 0 and killed_mid_run == trials,
    }


# --- fuzzed calls -----------------------------------------------------------------------------
KNOWN = [
    "send_message",
    "core_memory_append",
    "core_memory_replace",
    "archival_memory_insert",
    "archival_memory_search",
    "conversation_search",
    "conversation_search_date",
    "pause_heartbeats",
]


def _junk(rng: random.Random, size: int = 40) -> str:
    return "".join(
        chr(rng.choice([0, 9, 10, 34, 92, rng.randint(32, 126), rng.randint(0x80, 0x2FFF)])) for _ in range(size)
    )


def fuzz_call(rng: random.Random) -> str:
    """Text a broken model could emit, none of it a valid call."""
    kind = rng.randrange(9)
    huge = "x" * rng.choice([10_000, 10_000, 10_000, 100_000])
    if kind == 0:
        return _junk(rng, rng.randint(0, 200))
    if kind == 1:
        return json.dumps(rng.choice([[1, 2], 3, "send_message", None, True, {"params": {}}]))
    if kind == 2:
        return json.dumps({"function": _junk(rng, 12) + "\x00", "params": {"message": "hi"}})
    if kind == 3:
        return json.dumps({"function": huge, "params": {}})
    if kind == 4:  # a known function with arguments of the wrong type
        return json.dumps(
            {
                "function": rng.choice(KNOWN[1:]),
                "params": {
                    "label": rng.choice([1, [], {}, None]),
                    "content": {"a": 1},
                    "query": [1],
                    "old_content": 5,
                    "new_content": False,
                    "start_date": 20260101,
                    "end_date": None,
                    "minutes": "soon",
                },
            }
        )
    if kind == 5:  # a known function with a required argument missing
        return json.dumps(
            {
                "function": rng.choice(
                    ["core_memory_append", "core_memory_replace", "archival_memory_insert", "conversation_search"]
                ),
                "params": {"inner_thoughts": _junk(rng)},
            }
        )
    if kind == 6:  # unknown arguments, huge and with NUL bytes
        return json.dumps(
            {"function": rng.choice(KNOWN), "params": {"\x00" + _junk(rng, 5): huge, "message": "\x00" * 3}}
        )
    if kind == 7:
        return '{"function": "send_message", "params": {"message": "cut off'  # truncated JSON
    return json.dumps({"function": "send_message", "params": "not an object"})


def fuzz(calls: int, rng: random.Random) -> dict:
    from memdesk.app.agents import open_agent
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import HOME_ENV, Paths
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.runtime.scripted import ScriptedRuntime
    from memdesk.core.tools.context import AllowAll

    crashes = answered_ok = steps_seen = 0
    examples: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        os.environ[HOME_ENV] = str(Path(folder) / "home")
        services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
        try:
            sent = 0
            agent_number = 0
            while sent < calls:
                # A fresh agent every few turns keeps the prompt small: huge failed calls stay in
                # context, and counting them again each step is what would cost the time.
                record = services.create_agent(f"fuzz-{agent_number}")
                agent_number += 1
                runtime = ScriptedRuntime(context_window=1_000_000)
                agent = open_agent(services, record, runtime, consent=AllowAll())
                for _ in range(2):
                    batch = [fuzz_call(rng) for _ in range(min(agent.settings.max_steps, calls - sent))]
                    if not batch:
                        break
                    runtime.enqueue(*batch)
                    try:
                        result = agent.send_user_message("go on")
                    except Exception as error:  # noqa: BLE001 - what the campaign counts
                        crashes += 1
                        if len(examples) < 3:
                            examples.append(f"{type(error).__name__}: {str(error)[:120]}")
                        runtime.clear()
                        sent += len(batch)
                        continue
                    used = len(batch) - runtime.pending
                    runtime.clear()
                    sent += used or len(batch)
                    steps_seen += len(result.steps)
                    answered_ok += sum(1 for step in result.steps if step.ok)
        finally:
            services.close()
    return {
        "calls": sent,
        "steps": steps_seen,
        "crashes": crashes,
        "answered_ok": answered_ok,
        "crash_examples": examples,
        "ok": crashes == 0 and answered_ok == 0 and steps_seen == sent,
    }


# --- the model child --------------------------------------------------------------------------
def model_kill(trials: int, rng: random.Random | None = None) -> dict:
    from memdesk.app.agents import open_agent
    from memdesk.app.runtimes import make_runtime
    from memdesk.app.services import open_services
    from memdesk.core.agent.observer import AgentObserver
    from memdesk.core.base.paths import HOME_ENV, Paths
    from memdesk.core.base.settings_table import Settings
    from memdesk.core.embedding.hashing import HashingEmbedder
    from memdesk.core.tools.context import AllowAll

    class Streaming(AgentObserver):
        def __init__(self) -> None:
            self.started = threading.Event()

        def on_stream(self, event) -> None:
            self.started.set()

    rng = rng or random.Random(0)
    results = {"idle": 0, "generating": 0}
    moments = {"while_streaming": 0, "before_first_token": 0, "call_already_over": 0}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        os.environ[HOME_ENV] = str(Path(folder) / "home")
        services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
        try:
            settings = Settings(max_chained_steps=1, max_answer_tokens=48, context_size=2048)
            for kind in ("idle", "generating"):
                # A runtime of its own for each kind, so one kind's failure does not count twice; the
                # app's own (its child process, and the disk KV cache a restarted child reads).
                runtime = make_runtime(settings)
                try:
                    record = services.create_agent(f"sam-{kind}")
                    observer = Streaming()
                    agent = open_agent(
                        services, record, runtime, consent=AllowAll(), settings=settings, observer=observer
                    )
                    for trial in range(trials):
                        progress(f"model_kill: {kind} trial {trial + 1} of {trials}")
                        if kind == "idle":
                            _kill_idle(runtime)
                        else:
                            # Half the kills land once tokens stream, half at a random moment of
                            # the call (mostly prompt evaluation).
                            moments[
                                _kill_mid_call(agent, runtime, observer.started, streaming=trial % 2 == 0, rng=rng)
                            ] += 1
                        try:
                            result = agent.send_user_message("Hello again!")
                            results[kind] += bool(result.steps)
                        except Exception as error:  # noqa: BLE001 - counted, with the reason
                            if len(errors) < 4:
                                errors.append(f"{kind}: {type(error).__name__}: {str(error)[:160]}")
                finally:
                    runtime.close()
        finally:
            services.close()
    return {
        "trials_each": trials,
        "next_message_worked_after_idle_kill": results["idle"],
        "next_message_worked_after_kill_while_generating": results["generating"],
        "generating_kills": moments,
        "errors": errors,
        "ok": results["idle"] == trials and results["generating"] == trials and moments["call_already_over"] == 0,
    }


def _kill_idle(runtime) -> None:
    runtime.wait_ready()  # "idle" means loaded and waiting; the constructor returns while it loads
    if runtime.pid is not None:
        os.kill(runtime.pid, signal.SIGKILL)
        time.sleep(0.2)


def _kill_mid_call(agent, runtime, streaming_started: threading.Event, *, streaming: bool, rng: random.Random) -> str:
    """Kill the child during a call; say when: while_streaming, before_first_token or (a miss)
    call_already_over."""
    pid = runtime.pid
    done = threading.Event()
    streaming_started.clear()

    def doomed() -> None:
        try:
            agent.send_user_message("Tell me a long story about the sea.")
        except Exception:  # noqa: BLE001 - this turn is expected to fail
            pass
        done.set()

    threading.Thread(target=doomed, daemon=True).start()
    if streaming:
        # Tokens stream, or the turn ends without streaming (a miss, counted): whichever comes first.
        give_up = time.monotonic() + 300
        while not streaming_started.wait(0.05) and not done.is_set() and time.monotonic() < give_up:
            pass
    else:
        done.wait(rng.uniform(0.2, 1.5))
    moment = (
        "call_already_over"
        if done.is_set()
        else "while_streaming"
        if streaming_started.is_set()
        else "before_first_token"
    )
    pid = runtime.pid or pid  # the child the call runs in (a restart gave it a new one)
    if pid is not None and not done.is_set():
        os.kill(pid, signal.SIGKILL)
    done.wait(300)
    return moment


# --- sockets ----------------------------------------------------------------------------------


def sockets(timeout: float = 600.0) -> dict:
    """A default run of the terminal chat and of the window (offscreen), one after the other in one
    home, with every Python process of each (children included) recording each network socket it
    creates and every connect, bind, send and name lookup (testing/real_app.py, testing/socket_audit.py)."""
    with tempfile.TemporaryDirectory(prefix="memdesk-faults-") as folder:
        app = RealApp(Path(folder), audit=True)
        progress("sockets: cli run")
        cli = app.chat(["Hello!"], timeout=timeout)
        progress("sockets: gui run")
        gui = app.window("Hello!", timeout=timeout)  # gives up on its own before the timeout, saying why
        return sockets_report({"cli": cli, "gui": gui})


def sockets_report(runs: dict[str, AppRun]) -> dict:
    """The campaign's figures from its audited runs: met when each exited 0 and none used the network."""
    events = [event for run in runs.values() for event in run.network_events]
    for name, run in runs.items():
        if run.returncode != 0:
            progress(f"sockets: {name} exited {run.returncode}: {(run.stdout + run.stderr)[-600:]}")
    return {
        "runs_exit_codes": {name: run.returncode for name, run in runs.items()},
        "network_socket_events": len(events),
        "events": events[:5],
        "ok": not events and all(run.returncode == 0 for run in runs.values()),
    }


CAMPAIGNS = ["agent_kill", "sent_line_kill", "sent_line_kill_window", "ingest_kill", "fuzz", "model_kill", "sockets"]


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument(
        "--trials",
        type=int,
        default=100,
        help="agent kills; the other campaigns scale with it (default: the issue's counts)",
    )
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=CAMPAIGNS,
        help="leave a campaign out (reported as skipped, and the run cannot pass)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        choices=CAMPAIGNS,
        help="run only these campaigns, at full scale (the run passes when they do; 'complete' says false)",
    )
    args = parser.parse_args(argv)
    n = max(1, args.trials)
    # Each campaign draws from its own generator, so a campaign run alone (--only) sees the same
    # trials as in a whole run.
    rng = {name: random.Random(f"{args.seed}-{name}") for name in CAMPAIGNS}
    campaigns = {
        "agent_kill": lambda: agent_kill(n, rng["agent_kill"]),
        "sent_line_kill": lambda: sent_line_kill(n, rng["sent_line_kill"]),
        "sent_line_kill_window": lambda: sent_line_kill(n, rng["sent_line_kill_window"], window=True),
        "ingest_kill": lambda: ingest_kill(max(1, math.ceil(n / 2)), rng["ingest_kill"]),
        "fuzz": lambda: fuzz(100 * n, rng["fuzz"]),
        "model_kill": lambda: model_kill(max(1, math.ceil(n / 5)), rng["model_kill"]),
        "sockets": sockets,
    }
    if args.only:
        campaigns = {name: run for name, run in campaigns.items() if name in args.only}
    report: dict = {"trials": n, "seed": args.seed, "complete": not args.only and not args.skip}
    for name, run in campaigns.items():
        if name in args.skip:
            report[name] = {"skipped": True, "ok": False}
            continue
        started = time.perf_counter()
        progress(f"{name}: start")
        try:
            report[name] = run()
        except Exception as error:  # noqa: BLE001 - a campaign that cannot run misses its target
            report[name] = {"error": f"{type(error).__name__}: {error}", "ok": False}
        report[name]["seconds"] = round(time.perf_counter() - started, 1)
    report["all_targets_met"] = all(report[name]["ok"] for name in campaigns)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0 if report["all_targets_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
