"""``memdesk warm``: evaluate the agents' prompt beginning (instructions and tools, then the memory
section) with the local model now and keep its KV states in the disk cache, so the first message
after installation does not pay for it (~1,650 + ~170 tokens: 15-20 s on a 2-core machine).
``make install`` runs it once.

    memdesk warm

Every agent starts with the same static prompt while the settings are the defaults, and the agent
the window creates at its first start (``FIRST_AGENT``) with the same memory section: on a fresh
install (no agent yet) both are taken from that agent, made inside a transaction that is rolled
back. The window and ``memdesk chat`` warm the same prefixes again in the background (disk loads
then), and the first message evaluates only its own tokens.
"""

from __future__ import annotations

import argparse
import sys
import time

from memdesk.app.agents import open_agent
from memdesk.app.runtimes import open_runtime
from memdesk.cli.passphrase import open_store_services
from memdesk.core.memory.agents import FIRST_AGENT


def add_command(commands) -> None:
    parser = commands.add_parser("warm", help="prepare the local model's prompt cache now (make install runs it)")
    parser.set_defaults(handler=_warm)


def _warm(args: argparse.Namespace) -> int:
    from memdesk.core.embedding.hashing import HashingEmbedder  # no embedding happens here

    with open_store_services(embedder=HashingEmbedder()) as services:
        settings = services.settings
        if settings.runtime != "llamacpp":
            print(f"Nothing to warm: the {settings.runtime} runtime keeps no prompt cache here.")
            return 0
        started = time.perf_counter()
        runtime = open_runtime(services, settings)
        try:
            prefixes = []
            with services.db.dry_run():  # a fresh install has no agent yet: borrow one, keep nothing
                records = services.agents.list() or [services.create_agent(FIRST_AGENT)]
                for record in records[:4]:
                    agent = open_agent(services, record, runtime, settings=settings)
                    # The static prefix first: its state, kept apart, serves every agent.
                    for prefix in (agent.static_prefix(), agent.memory_prefix()):
                        if prefix not in prefixes:
                            prefixes.append(prefix)
            tokens = sum(runtime.warm(prefix) for prefix in prefixes)
        finally:
            runtime.close()  # waits until the state file is written
    print(f"Prompt cache ready: {tokens} tokens evaluated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0
