"""``memdesk forget AGENT "TEXT" [--apply] [--purge-backups] [--json]``: forget a person or topic.

Without ``--apply`` it only shows what would go, grouped by kind with a few samples, and the
backups that may still hold it; with it, removes all of that (memdesk.core.memory.forget).

``memdesk retention AGENT [DAYS|off] [--apply] [--json]``: the agent's retention policy (forget
conversation messages older than DAYS). Setting it shows what it would remove; ``--apply`` confirms
it and applies it now; after that it runs while you are idle in the window or the terminal chat.
"""

from __future__ import annotations

import argparse
import json
import sys

from memdesk.app.operations import open_forgetting, open_retention
from memdesk.cli.passphrase import open_store_services as open_services
from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.forget import ForgetPreview, ForgetResult


def add_command(commands) -> None:
    forget = commands.add_parser("forget", help="forget everything about a person or topic (previews unless --apply)")
    forget.add_argument("agent", help="the agent's name")
    forget.add_argument("text", help="who or what to forget: a name or a few words")
    forget.add_argument("--apply", action="store_true", help="remove it (without this, only show what would go)")
    forget.add_argument(
        "--purge-backups",
        action="store_true",
        help="also remove it from the backups taken before (no backup is taken first)",
    )
    forget.add_argument("--json", action="store_true", help="print one JSON object")
    forget.set_defaults(handler=run_forget)

    retention = commands.add_parser(
        "retention", help="forget an agent's conversation messages older than N days (off by default)"
    )
    retention.add_argument("agent", help="the agent's name")
    retention.add_argument("days", nargs="?", help="keep this many days of conversation (off: keep everything)")
    retention.add_argument("--apply", action="store_true", help="confirm the policy and forget the older messages now")
    retention.add_argument("--json", action="store_true", help="print one JSON object")
    retention.set_defaults(handler=run_retention)


def run_forget(args: argparse.Namespace, backups=None) -> int:
    with open_services() as services:
        record = services.agents.get_by_name(args.agent)
        # The store's snapshots: listed in the preview, purged on request, one taken first otherwise.
        forgetting = open_forgetting(services, backups if backups is not None else services.backups)
        preview = forgetting.preview(record.id, args.text)
        if not args.apply:
            print(
                json.dumps({"agent": record.name, "applied": False, **preview.as_dict()}, ensure_ascii=False)
                if args.json
                else render_preview(record.name, preview)
            )
            return 0
        if preview.empty:
            print(
                json.dumps({"agent": record.name, "applied": False, **preview.as_dict()})
                if args.json
                else f"Nothing in {record.name}'s memory is about {preview.text!r}."
            )
            return 0
        result = forgetting.apply(record.id, args.text, purge_backups=args.purge_backups, progress=_progress)
        print(
            json.dumps({"agent": record.name, "applied": True, **result.as_dict()}, ensure_ascii=False)
            if args.json
            else render_result(result)
        )
        return 0


def _progress(what: str, done: float) -> None:
    print(f"  {what}", file=sys.stderr, flush=True)


def render_preview(agent: str, preview: ForgetPreview) -> str:
    if preview.empty:
        return f"Nothing in {agent}'s memory is about {preview.text!r}."
    lines = [f"Forgetting {preview.text!r} would remove from {agent}'s memory:"]
    for kind in preview.kinds:
        lines.append(f"  {kind.count:>6}  {kind.label}")
        lines += [f"            · {sample}" for sample in kind.samples]
    if preview.similar:
        lines.append(
            f"  ({preview.similar} of the messages and passages are about it in other words, found by meaning)"
        )
    lines.append("Conversation messages are kept as a placeholder, [forgotten], so the conversation still reads.")
    if preview.kv_cache_files:
        lines.append(f"The {preview.kv_cache_files} saved prompt states are deleted too (they are rebuilt).")
    if preview.user_code:
        lines.append("Your own tool files name it too; they are your code and stay as they are:")
        lines += [f"  {name}" for name in preview.user_code]
    if preview.backups:
        lines.append(
            f"{len(preview.backups)} backup(s) taken before may still hold it;"
            " --purge-backups removes it from them too:"
        )
        lines += [f"  {b.created_at:%Y-%m-%d %H:%M}  {b.reason}" for b in preview.backups]
    lines.append("Run again with --apply to forget it.")
    return "\n".join(lines)


def render_result(result: ForgetResult) -> str:
    lines = [result.removed.describe() + "."]
    if result.snapshot is not None:
        lines.append("A backup was taken first (File > Backups… or `memdesk backup list`).")
    if result.backups_purged:
        lines.append(f"Removed it from {result.backups_purged} backup(s).")
    lines += [f"Could not purge backup {error}" for error in result.backup_errors]
    lines += [f"Could not change the file {error}" for error in result.file_errors]
    if not result.checkpointed:
        lines.append("Another MemDesk process is reading the store: its journal is emptied when that one closes.")
    return "\n".join(lines)


def _days(text: str) -> int:
    if text.strip().casefold() in ("off", "0", "none"):
        return 0
    try:
        days = int(text)
    except ValueError:
        days = -1
    if days < 0:
        raise MemDeskError(f"Retention takes a number of days or 'off', not {text!r}")
    return days


def run_retention(args: argparse.Namespace) -> int:
    with open_services() as services:
        record = services.agents.get_by_name(args.agent)
        retention = open_retention(services)
        if args.days is not None:
            retention.set_days(record.id, _days(args.days))
        policy = retention.policy(record.id)
        preview = retention.preview(record.id)
        removed = None
        if args.apply and policy.on:
            retention.confirm(record.id)
            removed = retention.apply(record.id)
            policy = retention.policy(record.id)
        if args.json:
            print(
                json.dumps(
                    {
                        "agent": record.name,
                        "days": policy.days,
                        "confirmed": policy.confirmed,
                        "preview": preview.as_dict(),
                        "removed": removed,
                    }
                )
            )
            return 0
        if not policy.on:
            print(f"Retention is off for {record.name}: every conversation message is kept.")
        elif removed is not None:
            print(
                f"Forgot {removed} conversation messages older than {policy.days} days."
                " From now on this runs while you are idle."
            )
        else:
            print(f"{record.name} keeps {policy.days} days of conversation. {preview.describe()}")
            if not policy.confirmed:
                print(f"Nothing is removed until you confirm: memdesk retention {record.name} --apply")
        return 0
