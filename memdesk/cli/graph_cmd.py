"""``memdesk graph AGENT [ENTITY] [--json]``: the agent's knowledge graph in the terminal.

Without ENTITY: the top entities (frequency x recency) and the counts. With ENTITY: its aliases,
mentions and the facts within ``--depth`` hops, with dates and sources. ``--extract`` first
brings the graph up to date with the conversation (the window does that after every turn).
"""

from __future__ import annotations

import argparse
import json
import sys

from memdesk.cli.passphrase import open_store_services
from memdesk.core.base.errors import AgentNotFoundError


def local_day(moment) -> str:
    return f"{moment.astimezone():%Y-%m-%d}" if moment else "never"


def add_command(commands) -> None:
    graph = commands.add_parser("graph", help="show an agent's knowledge graph, or what it knows about one entity")
    graph.add_argument("agent", help="the agent's name")
    graph.add_argument("entity", nargs="?", help="an entity's name or alias")
    graph.add_argument(
        "--depth", type=int, default=2, choices=(1, 2), help="hops of facts around the entity (default 2)"
    )
    graph.add_argument("--limit", type=int, default=20, help="how many top entities to list (default 20)")
    graph.add_argument("--extract", action="store_true", help="extract entities from new messages and documents first")
    graph.add_argument("--json", action="store_true", help="print one JSON object")
    graph.set_defaults(handler=run_graph)


def _extract(services, agent_id: int) -> dict:
    from memdesk.core.graph.extraction import ExtractionOptions, GraphExtractor
    from memdesk.core.graph.nlp import SpacyAnalyser

    settings = services.settings
    options = ExtractionOptions(settings.graph_extraction, model_facts=False, document_facts=False)
    extractor = GraphExtractor(
        services.memory.graph, SpacyAnalyser(), services.clock, options, user_name=lambda: settings.user_name
    )
    extractor.follow_user_name(agent_id)
    extractor.enqueue(agent_id)
    report = extractor.run_entities(agent_id)
    return {"sources": report.sources, "entities": report.entities, "facts": report.facts, "failed": report.failed}


def run_graph(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        record = services.agents.find(args.agent)
        if record is None:
            raise AgentNotFoundError(f"No agent named {args.agent!r}", hint="list them with: memdesk agents")
        graph = services.memory.graph
        assert graph is not None  # the app's services always build the graph
        extracted = _extract(services, record.id) if args.extract else None
        if args.entity:
            return _show_entity(services, record, args, extracted)
        entities, facts = graph.count(record.id)
        top = graph.top_entities(record.id, args.limit)
        if args.json:
            print(
                json.dumps(
                    {
                        "agent": record.name,
                        "entities": entities,
                        "current_facts": facts,
                        "extracted": extracted,
                        "top": [
                            {
                                "name": e.name,
                                "kind": e.kind,
                                "aliases": list(e.aliases),
                                "mentions": e.mentions,
                                "last_seen": e.last_seen.isoformat() if e.last_seen else None,
                                "score": round(score, 4),
                            }
                            for e, score in top
                        ],
                    }
                )
            )
            return 0
        if extracted is not None:
            print(f"Extracted {extracted['sources']} new sources ({extracted['failed']} failed)")
        print(f"{record.name}: {entities} entities, {facts} current facts")
        if not top:
            print("The graph is empty: it fills in as you talk (or run with --extract).")
        for entity, _score in top:
            aliases = f" (also {', '.join(entity.aliases)})" if entity.aliases else ""
            print(
                f"  {entity.name}{aliases}\t{entity.kind}\t{entity.mentions} mentions\tlast"
                f" {local_day(entity.last_seen)}"
            )
        return 0


def _show_entity(services, record, args: argparse.Namespace, extracted: dict | None) -> int:
    from memdesk.core.graph.render import fact_line, source_label

    graph = services.memory.graph
    entity = graph.find(record.id, args.entity)
    if entity is None:
        similar = (
            [e.name for e in graph.entities(record.id, text=args.entity.split()[0], limit=5)]
            if args.entity.split()
            else []
        )
        hint = f"; similar: {', '.join(similar)}" if similar else ""
        print(f"memdesk: no entity named {args.entity!r} in {record.name}'s graph{hint}", file=sys.stderr)
        return 1
    _nodes, facts = graph.neighbourhood(entity.id, args.depth)
    facts.sort(key=lambda f: (f.valid_to is not None, -f.valid_from.timestamp()))
    if args.json:
        print(
            json.dumps(
                {
                    "agent": record.name,
                    "name": entity.name,
                    "kind": entity.kind,
                    "aliases": list(entity.aliases),
                    "mentions": entity.mentions,
                    "last_seen": entity.last_seen.isoformat() if entity.last_seen else None,
                    "extracted": extracted,
                    "facts": [
                        {
                            "subject": f.subject,
                            "relation": f.relation,
                            "object": f.object,
                            "valid_from": f.valid_from.isoformat(),
                            "valid_to": f.valid_to.isoformat() if f.valid_to else None,
                            "author": f.author,
                            "source": source_label(services.db, f),
                        }
                        for f in facts
                    ],
                }
            )
        )
        return 0
    aliases = f", also called {', '.join(entity.aliases)}" if entity.aliases else ""
    print(f"{entity.name} ({entity.kind}{aliases}): {entity.mentions} mentions, last {local_day(entity.last_seen)}")
    if not facts:
        print("  no facts yet")
    for fact in facts:
        print("  " + fact_line(services.db, fact)[2:])
    return 0
