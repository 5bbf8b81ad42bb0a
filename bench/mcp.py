"""MemDesk as an MCP server: a memory search through ``memdesk-mcp`` (stdio, the SDK's own client)
against the same search in-process, and how long a client waits for a usable session.

    python -m bench.mcp --json

The store holds ``--n`` messages and as many archival passages (bench.scale's synthetic corpus,
clustered 384-d vectors), recorded as the real embedding model's space, so both sides embed the
query with the real model. Queries alternate between the two sides, so load on the machine hits
both; each side is warmed first (its vector index, the embedding model). ``mcp_session_start_s``:
from starting the process to the answer of the first ``tools/list`` (the handshake included);
``mcp_session_start_cpu_s``: the CPU time the server spent meanwhile, which the machine's load
does not inflate (on a shared machine the seconds follow the load, the CPU time much less).

``ui_timer_lateness_p99_ms``: how late a 10 ms timer fires in the real window while a client in
another process searches ten times a second over the loopback HTTP the window serves, beside the
same window idle (``ui_timer_lateness_idle_p99_ms``); see bench/mcp_window.py.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from bench import mcp_window
from bench.common import bench_parser, percentile
from bench.report import emit
from bench.scale import START, Corpus, fill
from memdesk.app.services import default_embedder, open_services
from memdesk.core.base.clock import SystemClock, iso
from memdesk.core.base.paths import HOME_ENV, Paths
from memdesk.core.connections.apps import Apps
from memdesk.core.connections.memory_access import MemoryAccess
from memdesk.core.memory.space import EmbeddingSpace
from memdesk.core.storage import open_database
from testing.children import Lines, die_with_parent, ended, within

APP = "bench"
#: Searches each side runs before it is timed (the vector index, the embedding model, caches).
WARM = 5
#: What a client's configuration starts (memdesk mcp config writes it).
SERVER = Path(sys.executable).with_name("memdesk-mcp")
#: Bound of any one wait on the server (its start, one answer): a stuck server fails the run.
WAIT_S = 120


def build_store(home: Path, n: int, seed: int = 7) -> int:
    """A store at ``home`` with ``n`` messages and ``n`` passages, an agent, and the app ``bench``
    given it; returns the agent's id."""
    paths = Paths(home).ensure()
    db = open_database(paths.database)
    try:
        agent_id = db.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES ('Sam', ?, '')", (iso(START),)
        ).lastrowid
        EmbeddingSpace(db, default_embedder()).ensure()  # names the model; nothing is loaded
        fill(db, agent_id, Corpus(seed, topics=max(10, n // 100)), n, messages=True)
        apps = Apps(db, SystemClock())
        apps.grant(apps.register(APP).id, agent_id)
    finally:
        db.close()
    return agent_id


def queries(count: int, seed: int = 11) -> list[str]:
    """Questions in the corpus's words (topic words and common words), each one different."""
    corpus = Corpus(seed, topics=50)
    _, topics = corpus.vectors(count)
    return [f"what about {text}" for text in corpus.texts(topics)]


def session_start(env: dict[str, str], runs: int) -> list[float]:
    async def once() -> float:
        started = time.perf_counter()
        params = StdioServerParameters(command=str(SERVER), args=["--app", APP], env=env)
        async with Client(params) as client:
            await client.list_tools()
            return time.perf_counter() - started

    return [within(WAIT_S, once()) for _ in range(runs)]


def _timed(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


HELLO = (
    '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",'
    ' "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}\n'
    '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
    '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}\n'
)


def session_start_cpu(env: dict[str, str], runs: int) -> list[float]:
    """The CPU seconds (user and system) the server spends until it has answered ``tools/list``:
    what the start costs, whatever the machine's load makes of it in seconds."""
    spent = []
    for _ in range(runs):
        server = subprocess.Popen(
            [str(SERVER), "--app", APP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=die_with_parent,
        )
        with ended(server):
            answers = Lines(server.stdout)
            server.stdin.write(HELLO)
            server.stdin.flush()
            for _answer in range(2):
                answers.next(WAIT_S)
            fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
            spent.append((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return spent


def searches(home: Path, agent_id: int, asked: list[str], env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Each query through MCP and in-process, alternating; the times after the warm-up."""
    services = open_services(Paths(home), embedder=default_embedder())
    access = MemoryAccess(services.memory)
    over_mcp: list[float] = []
    in_process: list[float] = []

    async def run() -> None:
        params = StdioServerParameters(command=str(SERVER), args=["--app", APP], env=env)
        async with Client(params, read_timeout_seconds=WAIT_S) as client:
            for n, query in enumerate(asked):
                if n % 2:  # which side goes first alternates too
                    local_s = _timed(lambda q=query: access.search(agent_id, q, limit=10))
                started = time.perf_counter()
                result = await client.call_tool("memory_search", {"query": query, "limit": 10})
                mcp_s = time.perf_counter() - started
                if result.is_error:
                    raise RuntimeError(result.content[0].text)
                if not n % 2:
                    local_s = _timed(lambda q=query: access.search(agent_id, q, limit=10))
                if n >= WARM:
                    over_mcp.append(mcp_s)
                    in_process.append(local_s)

    try:
        # each answer within WAIT_S, and the whole within a bound that a working server never nears
        within(WAIT_S + 10 * len(asked), run())
    finally:
        services.close()
    return over_mcp, in_process


def run(n: int, count: int, starts: int, window_seconds: float = 0.0) -> dict:
    with tempfile.TemporaryDirectory(prefix="memdesk-mcp-bench-") as folder:
        home = Path(folder) / "home"
        started = time.perf_counter()
        agent_id = build_store(home, n)
        fill_s = time.perf_counter() - started
        env = {**os.environ, HOME_ENV: str(home), "HF_HUB_OFFLINE": "1"}
        start_s = session_start(env, starts)
        start_cpu_s = session_start_cpu(env, starts) if Path("/proc/self/stat").exists() else []
        over_mcp, in_process = searches(home, agent_id, queries(count + WARM), env)
        window = mcp_window.lateness(home, window_seconds, queries(50)) if window_seconds > 0 else {}
    mcp_p50, local_p50 = percentile(over_mcp, 0.5), percentile(in_process, 0.5)
    return {
        "n_messages": n,
        "queries": count,
        "mcp_search_over_inprocess_p50": round(mcp_p50 / local_p50, 3),
        "mcp_search_p50_ms": round(mcp_p50 * 1e3, 2),
        "inprocess_search_p50_ms": round(local_p50 * 1e3, 2),
        "mcp_search_p95_ms": round(percentile(over_mcp, 0.95) * 1e3, 2),
        "mcp_session_start_s": round(statistics.median(start_s), 3),
        "mcp_session_start_runs_s": [round(s, 3) for s in start_s],
        # Load-independent: the server's own CPU time until tools/list is answered (Linux only).
        "mcp_session_start_cpu_s": round(statistics.median(start_cpu_s), 3) if start_cpu_s else None,
        "ui_timer_lateness_p99_ms": window.get("ui_timer_lateness_p99_ms"),
        "ui_timer_lateness_idle_p99_ms": window.get("ui_timer_lateness_idle_p99_ms"),
        "ui_timer_lateness_vs_idle_p99": window.get("ui_timer_lateness_vs_idle_p99"),
        "ui_searches_answered": window.get("ui_searches_answered"),
        "fill_s": round(fill_s, 1),
        "load_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--n", type=int, default=100_000, help="messages (and as many passages) in the store")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--starts", type=int, default=5, help="session starts timed")
    parser.add_argument(
        "--window-seconds", type=float, default=30.0, help="seconds of the window's timer, idle and searched (0: skip)"
    )
    args = parser.parse_args()
    result = run(args.n, args.queries, args.starts, args.window_seconds)
    emit(result, args.json, details="mcp_session_start_runs_s")


if __name__ == "__main__":
    main()
