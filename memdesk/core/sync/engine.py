"""Sync's one entry point for every front end: start or join a folder, exchange once, say how it
stands. ``memdesk sync ...`` and File > Devices both drive this.

An exchange (``now``): take this device's captured changes into its next numbered file and write
it; read the announcements; apply every other device's files that are new, in order, one
transaction per file (its number recorded in the same transaction, so a kill -9 anywhere applies
nothing twice and loses nothing); forget what incoming forgets name; publish how far it got; and
compact this device's own files once every device has them and a snapshot covers them.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memdesk.core.base.clock import Clock, iso
from memdesk.core.base.errors import MemDeskError, SyncError, SyncFileRefused, SyncSchemaTooNewError
from memdesk.core.memory.synced import SyncedRows
from memdesk.core.storage import Database
from memdesk.core.sync import devices, rotation, tombstones
from memdesk.core.sync.apply import Applier
from memdesk.core.sync.capture import block_versions, current_version, take_changes
from memdesk.core.sync.envelope import Header, open_envelope, seal
from memdesk.core.sync.folder import SyncFolder
from memdesk.core.sync.hlc import HybridClock
from memdesk.core.sync.snapshot import usable, whole_state
from memdesk.core.sync.state import Device, Peer, peers, report_problem, required_device, this_device
from memdesk.core.sync.versions import resolve

T = TypeVar("T")

#: Own change files kept before a snapshot replaces them (once every device has applied them).
COMPACT_AFTER = 64
#: A batch of another device's files applied in one transaction: at most this many files, or
#: rows (messages, passages; other records count one), whichever comes first.
BATCH_FILES = 32
BATCH_ROWS = 2_000


@dataclass
class SyncReport:
    sent: list[int] = field(default_factory=list)
    received: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    passages: int = 0
    blocks: int = 0
    conflicts: int = 0
    forgets: int = 0
    facts: int = 0
    problems: list[str] = field(default_factory=list)
    compacted: int = 0
    agents: set[int] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "received": self.received,
            "messages": self.messages,
            "passages": self.passages,
            "blocks": self.blocks,
            "conflicts": self.conflicts,
            "forgets": self.forgets,
            "facts": self.facts,
            "problems": self.problems,
            "compacted": self.compacted,
        }


class SyncEngine:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        rows: SyncedRows,
        *,
        forget: Callable[[int, str], None],
        schema: int,
        embed: Callable[[int], int] | None = None,
    ) -> None:
        """``forget(agent_id, text)``: this store's forget (its backups' purge included), run for a
        forget another device made. ``schema``: the newest store schema this MemDesk knows.
        ``embed(agent_id)``: vectors for the passages that arrived, from this device's embedder
        (vectors are derived here, like the full-text index)."""
        self._embed = embed
        self._db = db
        self._clock = clock
        self._rows = rows
        self._forget = forget
        self._schema = schema

    def _wall_ms(self) -> int:
        return int(self._clock.now().timestamp() * 1000)

    def _hlc(self, device: Device) -> HybridClock:
        return HybridClock(self._wall_ms, device.hlc)

    @property
    def enabled(self) -> bool:
        return this_device(self._db) is not None

    # --- exchange --------------------------------------------------------------------------
    def now(self) -> SyncReport:
        device = required_device(self._db)
        folder = SyncFolder(device.folder)
        if folder.group_id() != device.group_id:
            raise SyncError(
                f"The sync folder {device.folder} is not there or is another group's",
                hint="mount or reconnect it; nothing is lost meanwhile, changes wait here",
            )
        report = SyncReport()
        at = iso(self._clock.now())
        report.problems += devices.discover(self._db, folder, device, at)
        # a new group key (a device was removed) before anything is written: nothing more under the old
        _changed, problems = rotation.adopt(self._db, folder, required_device(self._db), at)
        report.problems += problems
        device = required_device(self._db)
        self._forget_before_sending(device, report)
        self._write_pending(folder, device, report, check=True)
        devices.announce_if_stale(folder, required_device(self._db), at)
        self._import(folder, report)
        self._run_forgets(report)
        if report.passages and self._embed is not None:
            for agent_id in sorted(report.agents):
                self._embed(agent_id)
        self._write_pending(folder, required_device(self._db), report, check=False)
        device = required_device(self._db)
        devices.write_acks(self._db, folder, device)
        report.compacted = self._compact(folder, device)
        return report

    def _write_pending(self, folder: SyncFolder, device: Device, report: SyncReport, *, check: bool) -> None:
        clock = self._hlc(device)
        pending = {int(r[0]) for r in self._db.query("SELECT seq FROM sync_pending_file")}
        if check:
            devices.check_identity(self._db, folder, device, pending)
            folder.remove_stale_temporaries(device.device_id)
        with self._db.transaction():
            payload = take_changes(self._db, clock, device.device_id, self._schema)
            if payload is not None:
                seq = device.next_seq
                self._db.execute(
                    "INSERT INTO sync_pending_file(seq, payload) VALUES (?, ?)",
                    (seq, zlib.compress(json.dumps(payload, ensure_ascii=False).encode(), 1)),
                )
                self._db.execute("UPDATE sync_device SET next_seq = ?, hlc = ? WHERE id = 1", (seq + 1, clock.last))
        for seq, stored in self._db.query("SELECT seq, payload FROM sync_pending_file ORDER BY seq"):
            payload = json.loads(zlib.decompress(stored))
            header = Header(device.group_id, device.device_id, int(seq), "log")
            path = folder.log_path(device.device_id, int(seq))
            sealed = seal(header, payload, device.group_key, device.signing_key)
            if not folder.write(path, sealed, replace=False) and not devices.own_file(folder, device, int(seq)):
                folder.write(path, sealed)  # something else sat in this device's place: its file goes there
            # written (or written before a kill): the payload, forgotten terms and all, goes
            self._db.execute("DELETE FROM sync_pending_file WHERE seq = ?", (seq,))
            report.sent.append(int(seq))

    def _import(self, folder: SyncFolder, report: SyncReport) -> None:
        device = required_device(self._db)
        # Files this device has not applied were compacted away: start from a snapshot first.
        for peer in peers(self._db):
            numbers = folder.log_numbers(peer.device_id)
            if not peer.revoked and (numbers[0] if numbers else peer.applied_seq + 2) > peer.applied_seq + 1:
                self._from_snapshot(folder, device, report)
                break
        for peer in peers(self._db):
            if peer.problem.startswith("two devices"):
                continue
            available = set(folder.log_numbers(peer.device_id))
            if peer.revoked:  # removed: what it wrote before is applied, nothing after
                self._refuse_after_removal(folder, peer, available, report)
                available = {n for n in available if n <= peer.revoked_upto}
            seq = peer.applied_seq + 1
            while seq in available:
                batch, refused = self._read_batch(folder, device, peer, seq, available)
                if batch:
                    self._apply_batch(device, peer, batch, report)
                    seq = batch[-1][0] + 1
                if refused is not None:
                    self._refuse(folder, peer, refused[0], refused[1], report)
                if refused is not None or not batch:
                    break

    def _read_batch(
        self, folder: SyncFolder, device: Device, peer: Peer, seq: int, available: set[int]
    ) -> tuple[list[tuple[int, dict[str, Any]]], tuple[int, SyncFileRefused] | None]:
        """The peer's next files from ``seq``, opened and checked, up to a batch's bounds; and the
        first one refused (its number and why), which ends the batch before it."""
        batch: list[tuple[int, dict[str, Any]]] = []
        rows = 0
        while seq in available and len(batch) < BATCH_FILES and rows < BATCH_ROWS:
            data = folder.read(folder.log_path(peer.device_id, seq))
            if data is None:
                break
            try:
                payload = open_envelope(
                    data, Header(device.group_id, peer.device_id, seq, "log"), device.keys, peer.public_key
                )
                schema = int(payload.get("schema", 0))
                if schema > self._schema:
                    raise SyncSchemaTooNewError(
                        f"it was written by a newer MemDesk (store schema {schema}; this one knows {self._schema})",
                        hint="upgrade MemDesk on this device; the file is kept and applied then",
                    )
            except SyncFileRefused as error:
                return batch, (seq, error)
            batch.append((seq, payload))
            rows += sum(len(record.get("rows", ())) or 1 for record in payload.get("records", []))
            seq += 1
        return batch, None

    def _apply_batch(
        self, device: Device, peer: Peer, batch: list[tuple[int, dict[str, Any]]], report: SyncReport
    ) -> None:
        """Several files of one device in one transaction, in order, each whole, with the number of
        the last: a kill anywhere leaves all of them to apply again, never part of one. One commit
        for many files (a commit costs more than a block edit's merge), bounded so that the write
        lock is held briefly and a kill repeats little."""
        at = iso(self._clock.now())
        name = peer.name or peer.device_id[:8]
        clock = self._hlc(required_device(self._db))
        applier = Applier(self._db, self._rows, device.forget_key, self._clock.now)
        with self._db.transaction():
            self._db.execute("INSERT OR IGNORE INTO sync_applying(flag) VALUES (1)")
            for _seq, payload in batch:
                applied = applier.apply(payload, peer.name)
                clock.observe(int(payload.get("hlc", 0)))
                report.messages += applied.messages
                report.passages += applied.passages
                report.blocks += applied.blocks
                report.conflicts += applied.conflicts
                report.facts += applied.facts
                report.agents |= applied.agents
            self._db.execute("UPDATE sync_device SET hlc = ? WHERE id = 1", (clock.last,))
            self._db.execute(
                "UPDATE sync_peers SET applied_seq = ?, last_sync = ?, problem = '' WHERE device_id = ?",
                (batch[-1][0], at, peer.device_id),
            )
            self._db.execute("DELETE FROM sync_applying")
        report.received[name] = report.received.get(name, 0) + len(batch)

    def _refuse_after_removal(self, folder: SyncFolder, peer: Peer, available: set[int], report: SyncReport) -> None:
        later = sorted(n for n in available if n > peer.revoked_upto)
        if later:
            error = SyncFileRefused("it was written after its device was removed from the group (its key is revoked)")
            self._refuse(folder, peer, later[0], error, report)

    def _refuse(self, folder: SyncFolder, peer: Peer, seq: int, error: SyncFileRefused, report: SyncReport) -> None:
        problem = error.user_message
        name = folder.log_path(peer.device_id, seq).name
        with self._db.transaction():
            self._db.execute("UPDATE sync_peers SET problem = ? WHERE device_id = ?", (problem, peer.device_id))
            if report_problem(self._db, peer.device_id, name, problem, iso(self._clock.now())):
                report.problems.append(f"{peer.name or peer.device_id[:8]}, file {seq}: {problem}")

    def _forget_before_sending(self, device: Device, report: SyncReport) -> None:
        forgotten = tombstones.Tombstones(self._db, device.forget_key)
        for agent_id, term in tombstones.mentioned_before_sending(self._db, forgotten):
            self._db.execute("INSERT INTO sync_forget_in(agent, text) VALUES (?, ?)", (agent_id, term))
        self._run_forgets(report)

    def _run_forgets(self, report: SyncReport) -> None:
        for row_id, agent_id, text in self._db.query("SELECT id, agent, text FROM sync_forget_in ORDER BY id"):
            try:
                merged = self._merged(int(agent_id))
                self._forget(int(agent_id), text)
                self._scrub(int(agent_id), text, merged)
                report.forgets += 1
            except MemDeskError as error:
                report.problems.append(f"could not forget what another device forgot: {error.user_message}")
            self._db.execute("DELETE FROM sync_forget_in WHERE id = ?", (row_id,))

    # --- snapshots and compaction -----------------------------------------------------------
    def _from_snapshot(self, folder: SyncFolder, device: Device, report: SyncReport) -> bool:
        """Start from the newest snapshot that leaves no hole before the files still there."""
        known = {p.device_id: p for p in peers(self._db)}
        first_logs = {d: numbers[0] for d in known if (numbers := folder.log_numbers(d))}
        best: tuple[int, dict[str, Any]] | None = None
        for peer in known.values():
            data = folder.read(folder.snapshot_path(peer.device_id))
            if data is None:
                continue
            try:
                payload = open_envelope(
                    data, Header(device.group_id, peer.device_id, 0, "snapshot"), device.keys, peer.public_key
                )
            except SyncFileRefused as error:
                report.problems.append(f"{peer.name}'s snapshot: {error.user_message}")
                continue
            covers = {k: int(v) for k, v in payload.get("covers", {}).items()}
            if int(payload.get("schema", 0)) <= self._schema and usable(covers, first_logs):
                if best is None or sum(covers.values()) > best[0]:
                    best = (sum(covers.values()), payload)
        if best is None:
            return False
        payload = best[1]
        if not any(int(seq) > known[d].applied_seq for d, seq in payload["covers"].items() if d in known):
            return False  # nothing in it this device lacks
        clock = self._hlc(required_device(self._db))
        with self._db.transaction():
            self._db.execute("INSERT OR IGNORE INTO sync_applying(flag) VALUES (1)")
            applied = Applier(self._db, self._rows, device.forget_key, self._clock.now).apply(payload, "a snapshot")
            clock.observe(int(payload.get("hlc", 0)))
            self._db.execute("UPDATE sync_device SET hlc = ? WHERE id = 1", (clock.last,))
            for device_id, seq in payload["covers"].items():
                self._db.execute(
                    "UPDATE sync_peers SET applied_seq = MAX(applied_seq, ?) WHERE device_id = ?", (int(seq), device_id)
                )
            self._db.execute("DELETE FROM sync_applying")
        report.messages += applied.messages
        report.passages += applied.passages
        return True

    def _compact(self, folder: SyncFolder, device: Device, *, force: bool = False) -> int:
        own = folder.log_numbers(device.device_id)
        if not own or (len(own) < COMPACT_AFTER and not force):
            return 0
        acks = devices.acks_of_me(self._db, folder, device)
        upto = min(acks) if acks else own[-1]
        doomed = [n for n in own if n <= upto]
        if not doomed:
            return 0
        covers = {p.device_id: p.applied_seq for p in peers(self._db)} | {device.device_id: device.next_seq - 1}
        state = whole_state(self._db, covers, self._schema, device.hlc)
        folder.write(
            folder.snapshot_path(device.device_id),
            seal(Header(device.group_id, device.device_id, 0, "snapshot"), state, device.group_key, device.signing_key),
        )
        for number in doomed:
            folder.remove(folder.log_path(device.device_id, number))
        return len(doomed)

    def compact(self) -> int:
        """Compact now whatever every device has (``memdesk sync now --compact``)."""
        device = required_device(self._db)
        return self._compact(SyncFolder(device.folder), device, force=True)

    # --- forgetting --------------------------------------------------------------------------
    def forget_here(self, agent_id: int, text: str, forget: Callable[[], T]) -> T:
        """The user forgets ``text`` here (``forget`` does it): every device forgets it, and keeps
        forgetting it."""
        device = this_device(self._db)
        if device is None:
            return forget()
        merged = self._merged(agent_id)
        result = forget()
        agent_uid = self._db.scalar("SELECT uid FROM agents WHERE id = ?", (agent_id,))
        with self._db.transaction():
            tombstones.remember(self._db, device.forget_key, agent_uid, text)
            self._scrub(agent_id, text, merged)
            self._db.execute("INSERT INTO sync_forget_out(agent, text) VALUES (?, ?)", (agent_id, text))
        return result

    def _merged(self, agent_id: int) -> dict[str, str | None]:
        """The agent's blocks whose versions have several heads, as merged now (before a forget)."""
        labels = self._db.query(
            "SELECT label FROM sync_block_versions WHERE agent_id = ? AND head = 1 GROUP BY label HAVING COUNT(*) > 1",
            (agent_id,),
        )
        return {label: current_version(self._db, agent_id, label)[0] for (label,) in labels}

    def _scrub(self, agent_id: int, text: str, merged: dict[str, str | None]) -> None:
        """Take a forgotten term out of sync's copies of block text, and merge again each block
        ``merged`` had several heads for. That merge was computed from versions that still held the
        term's lines, and can order the other lines unlike the versions without them, which every
        other device merges; the row follows the versions unless it was edited here since (the
        next exchange sends that edit as a version of its own)."""
        tombstones.scrub(self._db, agent_id, text)
        for label, before in merged.items():
            resolved = resolve(block_versions(self._db, agent_id, label))
            row = self._db.scalar("SELECT value FROM memory_blocks WHERE agent_id = ? AND label = ?", (agent_id, label))
            if before is None or row == resolved.value or row not in (before, tombstones.without(before, text)):
                continue
            self._rows.set_block(
                agent_id,
                label,
                resolved.value,
                resolved.meta,
                note="merged again after a forget",
                parents=list(resolved.sides),
            )

    def wait_for_folder(self, path: Path, seconds: float) -> bool:
        """Whether ``path`` shows a sync folder within ``seconds`` (a join right after pairing, while
        the carrying program still copies it)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if SyncFolder(path).group_id() is not None:
                return True
            time.sleep(0.2)
        return SyncFolder(path).group_id() is not None


def device_name() -> str:
    return os.uname().nodename if hasattr(os, "uname") else "this device"


def folder_path(text: str) -> Path:
    return Path(text).expanduser().resolve()
