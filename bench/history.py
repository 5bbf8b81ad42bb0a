"""Issue 31's figures: importing a synthetic ChatGPT export, and memory as a folder and back.

    python -m bench.history --json                 # the issue's sizes: a 200 MB export, 100,000 messages
    python -m bench.history --mb 5 --messages 5000 --json

Importing: a synthetic ``conversations.json`` of about ``--mb`` megabytes (ChatGPT's shape: a
mapping tree per conversation, a hidden system node, a regenerated answer now and then) in a
zip. In one run, the baseline streams the same JSON (the same reader) and embeds the same texts
in batches with the same embedder; the import then runs in a fresh process on a fresh store, so
its own peak memory is measured (``peak_rss_mb``, the child's maximum resident set).
``import_over_bare_parse_and_embed`` is the import's time over the baseline's (goal <= 1.3);
``..._cpu`` the same by CPU time, which a shared machine's load distorts far less. ``--together``
runs the baseline and the import at the same time instead (with ``OPENBLAS_NUM_THREADS=1``: a core
each on two cores), so that both meet the same load, in half the time.

The folder: a store of ``--messages`` chat messages (and a few blocks and passages) exported to
a folder and imported back into an empty home (seconds each way).

``ui_timer_lateness_p99_ms``: the real window imports a smaller export of the same shape
(``--window-mb``, 5 MB by default: the lateness is a rate, not a total) through File > Import
history while a 10 ms timer ticks in its event loop (bench/history_window.py), beside the idle
window's own floor in the same run. ``load`` is ``os.getloadavg()`` at the start and the end: on a
shared machine, compare ratios taken in one run.
"""

from __future__ import annotations

import json
import os
import random
import resource
import tempfile
import time
import zipfile
from pathlib import Path

from bench.common import bench_parser, sentence
from bench.report import emit

#: Messages embedded per batch by the baseline (what the import's embedding steps take).
BATCH = 512


def _embedder(name: str):
    if name == "hashing":
        from memdesk.core.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    from memdesk.app.services import default_embedder

    return default_embedder()


def synthetic_export(path: Path, megabytes: float, seed: int = 31) -> tuple[int, int]:
    """A ChatGPT export zip of about ``megabytes`` of JSON: (conversations, messages)."""
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    written = conversations = messages = 0
    start = 1_600_000_000.0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("conversations.json", "w", force_zip64=True) as member:
            member.write(b"[")
            while written < target:
                at = start + conversations * 3600.0
                mapping = {
                    "root": {"id": "root", "message": None, "parent": None, "children": ["system"]},
                    "system": _node("system", "root", "system", "", at, hidden=True),
                }
                parent = "system"
                for turn in range(rng.randint(2, 24)):
                    node = f"c{conversations}n{turn}"
                    role = "user" if turn % 2 == 0 else "assistant"
                    text = " ".join(sentence(rng) for _ in range(rng.randint(1, 6)))
                    mapping[node] = _node(node, parent, role, text, at + 30 * turn)
                    mapping[parent]["children"].append(node)
                    if role == "assistant" and rng.random() < 0.1:  # a regenerated answer left behind
                        other = f"{node}r"
                        mapping[other] = _node(other, parent, role, sentence(rng), at + 30 * turn + 1)
                        mapping[parent]["children"].insert(0, other)
                    parent = node
                    messages += 1
                conversation = {
                    "id": f"conv-{conversations}",
                    "conversation_id": f"conv-{conversations}",
                    "title": sentence(rng)[:40],
                    "create_time": at,
                    "update_time": at + 900,
                    "mapping": mapping,
                    "current_node": parent,
                }
                data = (b"," if conversations else b"") + json.dumps(conversation).encode()
                member.write(data)
                written += len(data)
                conversations += 1
            member.write(b"]")
    return conversations, messages


def _node(node: str, parent: str, role: str, text: str, at: float, hidden: bool = False) -> dict:
    return {
        "id": node,
        "parent": parent,
        "children": [],
        "message": {
            "id": node,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "recipient": "all",
            "weight": 1.0,
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
        },
    }


def bare_parse_and_embed(export: Path, embedder) -> tuple[float, float, int, float]:
    """Streaming the export (the import's own reader and parser) and embedding the same texts in
    batches: (parse seconds, embed seconds, messages, CPU seconds of both)."""
    from memdesk.core.transfer.history.reading import Export

    cpu = time.process_time()
    started = time.perf_counter()
    texts = []
    for entry in Export(export).entries():
        if entry.conversation is not None:
            texts += [m.text for m in entry.conversation.messages]
    parsed = time.perf_counter() - started
    started = time.perf_counter()
    for first in range(0, len(texts), BATCH):
        embedder.embed(texts[first : first + BATCH])
    return parsed, time.perf_counter() - started, len(texts), time.process_time() - cpu


def _import_child(export: str, home: str, embedder_name: str, answer) -> None:
    """In a fresh process: import ``export`` into a new store; its seconds and peak memory."""
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.transfer.history.importer import HistoryImport

    embedder = _embedder(embedder_name)
    embedder.embed(["warm up"])  # loading the model is not the import's work: the baseline's is loaded too
    with_model = _rss_mb()
    services = open_services(Paths(Path(home)), embedder=embedder)
    agent = services.create_agent("bench")
    started, cpu = time.perf_counter(), time.process_time()
    progress = HistoryImport.start(services.memory, agent.id, Path(export)).run()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    services.close()
    answer.put(
        {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "messages": progress.messages_added,
            "conversations": progress.conversations_added,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_with_model_mb": with_model,
        }
    )


def _rss_mb() -> float:
    """This process's resident memory now (the embedding model loaded: torch alone is hundreds of MB)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def import_in_child(export: Path, home: Path, embedder_name: str, wait_s: float = 6 * 3600.0) -> dict:
    from bench.history_window import run_in_child

    return run_in_child(_import_child, (str(export), str(home), embedder_name), wait_s)


def baseline_beside_import(export: Path, home: Path, embedder, embedder_name: str, wait_s: float):
    """The baseline in this process while the import runs in its child, at the same time: on two
    cores each has one, and both see the same load throughout (one after the other, a shared
    machine's load can differ between the two by more than the import's own cost)."""
    from bench.history_window import answer_of, start_child

    child, answer = start_child(_import_child, (str(export), str(home), embedder_name))
    try:
        baseline = bare_parse_and_embed(export, embedder)
    except BaseException:
        child.kill()
        child.join(timeout=10)
        raise
    return baseline, answer_of(child, answer, wait_s)


def folder_round_trip(messages: int, root: Path, embedder) -> dict:
    """Seconds to export a store of ``messages`` chat messages to a folder, and to import it back."""
    from datetime import UTC, datetime, timedelta

    from memdesk.app.operations import export_memory_folder, import_memory_folder
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths

    rng = random.Random(7)
    source = open_services(Paths(root / "source"), embedder=embedder)
    agent = source.create_agent("bench")
    start = datetime(2022, 1, 1, tzinfo=UTC)
    with source.db.transaction():
        for n in range(messages):
            text = sentence(rng)
            source.memory.recall.add(
                agent.id,
                role="user" if n % 2 == 0 else "assistant",
                kind="user_message" if n % 2 == 0 else "assistant_call",
                content=text,
                search_text=text,
                created_at=start + timedelta(minutes=10 * n),
            )
    source.memory.archival.insert(agent.id, "The bench's own archival note.")
    started = time.perf_counter()
    export_memory_folder(source, [agent.id], root / "folder")
    exported = time.perf_counter() - started
    source.close()
    target = open_services(Paths(root / "target"), embedder=embedder)
    started = time.perf_counter()
    summary = import_memory_folder(target, root / "folder")
    imported = time.perf_counter() - started
    count = target.memory.recall.count(summary.agents[0].agent_id)
    target.close()
    return {"messages": count, "export_seconds": round(exported, 2), "import_seconds": round(imported, 2)}


def run(
    megabytes: float = 200.0,
    messages: int = 100_000,
    embedder_name: str = "default",
    window_mb: float = 5.0,
    limit_s: float = 6 * 3600.0,
    together: bool = False,
) -> dict:
    from bench.history_window import window_lateness

    load_before = os.getloadavg()
    embedder = _embedder(embedder_name)
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory(prefix="memdesk-bench-history-") as folder:
        root = Path(folder)
        export = root / "chatgpt-export.zip"
        conversations, written = synthetic_export(export, megabytes)
        if together:
            (parsed, embedded, texts, bare_cpu), imported = baseline_beside_import(
                export, root / "home", embedder, embedder_name, limit_s
            )
        else:
            parsed, embedded, texts, bare_cpu = bare_parse_and_embed(export, embedder)
            imported = import_in_child(export, root / "home", embedder_name, limit_s)
        round_trip = folder_round_trip(messages, root, embedder)
        json_mb = zipfile.ZipFile(export).getinfo("conversations.json").file_size / 1e6
        window_export = root / "window-export.zip"
        synthetic_export(window_export, min(window_mb, megabytes), seed=32)
        window = window_lateness(window_export, embedder_name, min(limit_s, 3600.0))
    baseline = parsed + embedded
    return {
        "export_mb": round(json_mb, 1),
        "conversations": conversations,
        "messages": imported["messages"],
        "messages_per_s": round(imported["messages"] / imported["seconds"], 1),
        "import_seconds": round(imported["seconds"], 1),
        "bare_parse_seconds": round(parsed, 1),
        "bare_embed_seconds": round(embedded, 1),
        "import_over_bare_parse_and_embed": round(imported["seconds"] / baseline, 3),
        # The same ratio by CPU time (every thread of each process): what the load of a shared
        # machine moves far less than the wall clock.
        "import_cpu_seconds": round(imported["cpu_seconds"], 3),
        "bare_parse_and_embed_cpu_seconds": round(bare_cpu, 3),
        "import_over_bare_parse_and_embed_cpu": round(imported["cpu_seconds"] / max(bare_cpu, 1e-6), 3),
        "peak_rss_mb": round(imported["peak_rss_mb"], 1),
        # What the process held once the embedding model was loaded, before the import began: the
        # import's own memory is the difference.
        "rss_with_embedding_model_mb": round(imported.get("rss_with_model_mb", 0.0), 1),
        "import_rss_over_model_mb": round(imported["peak_rss_mb"] - imported.get("rss_with_model_mb", 0.0), 1),
        "ui_timer_lateness_p99_ms": window["import"]["p99_ms"],
        "ui_timer_lateness_max_ms": window["import"]["max_ms"],
        "ui_timer_lateness_p99_ms_idle": window["idle"]["p99_ms"],
        "ui_timer_lateness_p99_ms_preview": window["preview"]["p99_ms"],
        "ui_ticks": window["import"]["ticks"],
        "window_export_mb": min(window_mb, megabytes),
        "window_messages": window["messages"],
        "window_import_seconds": window["import_seconds"],
        "folder_messages": round_trip["messages"],
        "folder_export_seconds": round_trip["export_seconds"],
        "folder_import_seconds": round_trip["import_seconds"],
        "embedder": embedder.model_id,
        "baseline_beside_import": together,
        "baseline_messages": texts,
        "load": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "goals_met": {
            "import_over_bare_parse_and_embed": imported["seconds"] / baseline <= 1.3,
            "peak_rss_mb": imported["peak_rss_mb"] <= 400,
            "ui_timer_lateness_p99_ms": window["import"]["p99_ms"] <= 30,
        },
        "written_messages": written,
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--mb", type=float, default=200.0, help="size of the synthetic conversations.json")
    parser.add_argument("--messages", type=int, default=100_000, help="chat messages of the folder round trip")
    parser.add_argument("--embedder", choices=("default", "hashing"), default="default")
    parser.add_argument("--window-mb", type=float, default=5.0, help="size of the export the window imports")
    parser.add_argument(
        "--together",
        action="store_true",
        help="run the baseline beside the import, at the same time (with OPENBLAS_NUM_THREADS=1: a core each)",
    )
    args = parser.parse_args()
    emit(run(args.mb, args.messages, args.embedder, args.window_mb, together=args.together), args.json)


if __name__ == "__main__":
    main()
