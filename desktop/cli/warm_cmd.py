"""``memdesk warm``: evaluate the agents' static prompt (instructions and tools) with the local model
now and keep its KV state in the disk cache, so the first message after installation does not
pay for it (~1,650 tokens: 15-20 s on a 2-core machine). ``make install`` runs it once.

    memdesk warm

Every agent starts with the same static prompt while the settings are the defaults, so on a fresh
install (no agent yet) it is taken from an agent made inside a transaction that is rolled back.
The window and ``memdesk chat`` warm the same prefix again in the background (a disk load then).
"""

from __future__ import annotations

import argparse
import sys
import time

from desktop.app import make_runtime, open_agent, runtime_factory
from desktop.cli.passphrase import open_store_services


def add_command(commands) -> None:
    parser = commands.add_parser("warm", help="prepare the local model's prompt cache now (make install runs it)")
    parser.set_defaults(handler=_warm)


def _warm(args: argparse.Namespace) -> int:
    from desktop.core.embedding.hashing import HashingEmbedder  # no embedding happens here

    with open_store_services(embedder=HashingEmbedder()) as services:
        settings = services.settings
        if settings.runtime != "llamacpp":
            print(f"Nothing to warm: the {settings.runtime} runtime keeps no prompt cache here.")
            return 0
        started = time.perf_counter()
        runtime = runtime_factory(services.key, make_runtime)(settings)
        try:
            prefixes = []
            with services.db.dry_run():  # a fresh install has no agent yet: borrow one, keep nothing
                records = services.agents.list() or [services.create_agent("warm-up")]
                for record in records[:4]:
                    prefix = open_agent(services, record, runtime, settings=settings).static_prefix()
                    if prefix not in prefixes:
                        prefixes.append(prefix)
            tokens = sum(runtime.warm(prefix) for prefix in prefixes)
        finally:
            runtime.close()  # waits until the state file is written
    print(f"Prompt cache ready: {tokens} tokens evaluated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0
