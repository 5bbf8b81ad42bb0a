"""What every benchmark shares: its command line's start, percentiles, and opening an agent on the
real model. How a result is printed is bench/report.py."""

from __future__ import annotations

import argparse
import math
import random
import threading
import time
from dataclasses import dataclass
from typing import Any


def bench_parser(doc: str | None, **options: Any) -> argparse.ArgumentParser:
    """A benchmark's parser: the first line of its docstring as the description, and ``--json``
    (every benchmark prints one JSON object with it)."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0] if doc else None, **options)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def percentile(values: list[float], q: float, *, empty: float = math.nan) -> float:
    """The nearest-rank ``q`` quantile (0.95: p95) of ``values``, one of the values themselves;
    ``empty`` when there are none."""
    ordered = sorted(values)
    if not ordered:
        return empty
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


#: The vocabulary of synthetic documents and stores: plain words, no names.
WORDS = (
    "memory archive river garden letter morning station window engine harbour violin recipe journey mountain "
    "library signal market lantern winter summer planet ocean bridge castle doctor teacher painter farmer "
    "writes reads builds carries finds remembers forgets follows opens closes paints sings walks counts "
    "quiet bright ancient modern careful sudden gentle heavy narrow distant golden silver wooden hidden"
).split()


def sentence(rng: random.Random) -> str:
    """A synthetic sentence of 8 to 22 of ``WORDS``."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 22))]
    return " ".join(words).capitalize() + "."


@dataclass
class BenchAgent:
    """A fresh agent named "bench" on the real model, in the store at ``MEMDESK_HOME``."""

    services: Any
    settings: Any
    runtime: Any
    agent: Any
    #: Seconds until the model was loaded (make_runtime), the embedder not included.
    load_seconds: float

    def close(self) -> None:
        self.runtime.close()
        self.services.close()


def open_bench_agent(
    embedder_name: str, seed: int, *, observer=None, preload_embedder: bool = False, make_runtime=None
) -> BenchAgent:
    """Open the store at ``MEMDESK_HOME`` with the ``hashing`` or the ``default`` embedder, set the
    sampling seed, load the model (timed) and create the agent. ``preload_embedder``: load the
    embedder in the background meanwhile, as the app does. ``make_runtime``: the app's own unless
    given (a test's scripted model)."""
    from memdesk.app.agents import open_agent
    from memdesk.app.services import open_services
    from memdesk.core.base.paths import Paths
    from memdesk.core.tools.context import AllowAll

    embedder = None
    if embedder_name == "hashing":
        from memdesk.core.embedding.hashing import HashingEmbedder

        embedder = HashingEmbedder()
    services = open_services(Paths.from_environment(), embedder=embedder)
    preload = getattr(services.embedder, "load", None)
    if preload_embedder and preload is not None:
        threading.Thread(target=preload, daemon=True).start()
    settings = services.settings_store.set("seed", seed)
    if make_runtime is None:
        from memdesk.app.runtimes import make_runtime
    started = time.perf_counter()
    runtime = make_runtime(settings)
    load_seconds = time.perf_counter() - started
    agent = open_agent(
        services, services.create_agent("bench"), runtime, consent=AllowAll(), settings=settings, observer=observer
    )
    return BenchAgent(services, settings, runtime, agent, load_seconds)
