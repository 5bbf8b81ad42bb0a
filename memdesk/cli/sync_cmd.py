"""``memdesk sync``: one memory on several devices through a folder another program carries.

memdesk sync init FOLDER [--name NAME] [--json]       start a sync folder; prints the pairing code
memdesk sync join FOLDER --code CODE [--name NAME]    pair this device with that folder
memdesk sync now [--compact] [--json]                 exchange once, then return
memdesk sync status [--json]                          devices, last syncs, conflicts, refused files
memdesk sync remove DEVICE                            remove a device: its key is revoked, a new code shown
memdesk sync leave                                    stop syncing here (the memory stays)
"""

from __future__ import annotations

import argparse
import json

from memdesk.app.operations import open_sync
from memdesk.cli.passphrase import open_store_services
from memdesk.core.sync import setup
from memdesk.core.sync.engine import device_name, folder_path


def add_command(commands) -> None:
    parser = commands.add_parser(
        "sync", help="one memory on several devices, through a folder Syncthing or a drive carries"
    )
    actions = parser.add_subparsers(dest="sync_action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="start a sync folder with this device in it; prints a pairing code")
    init.add_argument("folder")
    init.add_argument("--name", help="this device's name as others see it (default: the computer's name)")
    init.add_argument("--json", action="store_true", help="print one JSON object")
    init.set_defaults(handler=_init)
    join = actions.add_parser("join", help="pair this device with a sync folder another device started")
    join.add_argument("folder")
    join.add_argument("--code", required=True, help="the pairing code the other device showed")
    join.add_argument("--name", help="this device's name as others see it (default: the computer's name)")
    join.add_argument("--json", action="store_true", help="print one JSON object")
    join.set_defaults(handler=_join)
    now = actions.add_parser("now", help="send this device's changes and apply the others', once")
    now.add_argument("--compact", action="store_true", help="also drop this device's files every device has")
    now.add_argument("--json", action="store_true", help="print one JSON object")
    now.set_defaults(handler=_now)
    status = actions.add_parser("status", help="this device, the others, their last sync, conflicts and problems")
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(handler=_status)
    remove = actions.add_parser("remove", help="remove a paired device (by name): its files are refused from now on")
    remove.add_argument("device")
    remove.set_defaults(handler=_remove)
    leave = actions.add_parser("leave", help="stop syncing on this device; its memory stays as it is")
    leave.set_defaults(handler=_leave)


def _init(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        code = setup.start(services.db, services.clock, folder_path(args.folder), args.name or device_name())
        if args.json:
            print(json.dumps({"folder": str(folder_path(args.folder)), "code": code, **_device(services)}))
        else:
            print(f"This device now syncs through {folder_path(args.folder)}.")
            print(f"Pairing code: {code}")
            print(f"On another device: memdesk sync join FOLDER --code {code}")
            print("Keep the code private: whoever has it and the folder can read this memory.")
    return 0


def _join(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        setup.join(services.db, services.clock, folder_path(args.folder), args.code, args.name or device_name())
        report = open_sync(services).now()
        if args.json:
            print(json.dumps({"folder": str(folder_path(args.folder)), **_device(services), **report.as_dict()}))
        else:
            print(f"Paired with {folder_path(args.folder)}; {_describe(report.as_dict())}")
    return 0


def _now(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        engine = open_sync(services)
        report = engine.now()
        if args.compact:
            report.compacted += engine.compact()
        print(json.dumps(report.as_dict()) if args.json else _describe(report.as_dict()))
    return 1 if report.problems and not args.json else 0


def _status(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        status = setup.status(services.db)
    if args.json:
        print(json.dumps(status, ensure_ascii=False))
        return 0
    if not status["syncing"]:
        print("This device does not sync. Start with: memdesk sync init FOLDER")
        return 0
    reach = "" if status["folder_reachable"] else "  (not reachable now)"
    print(f"{status['device']['name']} syncs through {status['folder']}{reach}")
    print(f"  sent {status['sent']} change files; {status['waiting_changes']} changes wait for the next sync")
    for device in status["devices"]:
        state = "removed" if device["removed"] else f"applied {device['applied']} of {device['available']}"
        print(f"  {device['name'] or device['id'][:8]}: {state}; last sync {device['last_sync'] or 'never'}")
        if device["problem"]:
            print(f"    waiting: {device['problem']}")
    for conflict in status["conflicts"]:
        print(
            f"  conflict in {conflict['agent']}'s {conflict['label']} block: {conflict['reason']}"
            " (both versions are kept; edit the block to resolve it)"
        )
    for problem in status["problems"][:5]:
        print(f"  refused {problem['file']} of {problem['device'][:8]}: {problem['problem']}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        removed = setup.remove_device(services.db, services.clock, args.device)
    print(
        f"Removed {removed.name}: its key is revoked; the files it writes from now on are refused and the other"
        f" devices take a new key at their next sync.\nPair new devices with this new code: {removed.code}"
    )
    for name in removed.missed:
        print(f"{name} runs an older MemDesk and was not given the new key: pair it again with the new code.")
    return 0


def _leave(args: argparse.Namespace) -> int:
    with open_store_services() as services:
        setup.leave(services.db)
    print("This device no longer syncs; its memory stays as it is.")
    return 0


def _device(services) -> dict:
    status = setup.status(services.db)
    return {"device": status.get("device", {}).get("name"), "device_id": status.get("device", {}).get("id")}


def _describe(report: dict) -> str:
    parts = [f"sent {len(report['sent'])} file(s)", f"applied {sum(report['received'].values())} file(s)"]
    for key in ("messages", "passages", "blocks", "facts", "forgets", "conflicts", "compacted"):
        if report[key]:
            parts.append(f"{report[key]} {key}")
    text = ", ".join(parts) + "."
    return "\n".join([text, *(f"refused: {p}" for p in report["problems"])])
