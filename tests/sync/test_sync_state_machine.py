"""Three devices editing, forgetting and importing while the folder between them misbehaves, as a
hypothesis state machine (importing: conversations exported from other assistants, the same export
on several devices too). Each device has its own copy of the sync folder, and a carrier copies
files between copies when the machine says so: some files, not others (partitions), in any order,
again (duplicates), an old file under a new number (a replay), while clocks are skewed by hours
and a third device joins late. After a full exchange every device holds the same synced memory,
its full-text indexes and vectors agree with its rows, no line a device added to a block is lost,
and a forgotten name is on no device. The same runs on encrypted stores."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from memdesk.core.sync import setup
from memdesk.core.sync.digest import synced_rows
from memdesk.core.sync.folder import LOG_NAME
from memdesk.core.transfer.history.importer import HistoryImport
from testing.sync_devices import PASSPHRASE, Fleet

NAMES = ("Alice", "Bruno")
WORDS = ("tea", "boat", "garden", "violin", "rain", "Porto")
DEVICES = ("laptop", "desktop", "phone")
#: Exports of other assistants the person imports (the same one may be imported on several devices).
EXPORTS = tuple(
    Path(__file__).resolve().parent.parent / "data" / "history" / name
    for name in ("chatgpt_conversations.json", "claude_conversations.json")
)
#: A longer hunt: SYNC_EXAMPLES=200 (examples of the plain machine), NO_SHRINK=1 (report the first
#: failing run as it happened, without minutes of shrinking).
EXAMPLES = int(os.environ.get("SYNC_EXAMPLES", "12"))
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([] if os.environ.get("NO_SHRINK") else [Phase.shrink])


def copy_file(source: Path, target: Path) -> None:
    """As a file syncer delivers a file: whole, with its modification time (the newer version wins)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".tmp-carrier-{target.name}")
    shutil.copy2(source, temporary)
    temporary.replace(target)


class SyncMachine(RuleBasedStateMachine):
    encrypted = False
    tmp_root: Path
    migrated: Path

    @initialize(skews=st.lists(st.integers(-240, 240), min_size=3, max_size=3))
    def start(self, skews):
        root = Path(self.tmp_root) / f"run-{id(self)}"
        self.fleet = Fleet(root, self.migrated)
        key = PASSPHRASE if self.encrypted else None
        self.devices = {
            name: self.fleet.device(name, skew_minutes=skew, key=key) for name, skew in zip(DEVICES, skews, strict=True)
        }
        self.paired: list[str] = []
        self.lines: dict[str, set[str]] = {}
        self.forgotten: set[str] = set()
        self.counter = 0
        self._pair("laptop")
        self._pair("desktop")

    def teardown(self):
        if hasattr(self, "fleet"):
            try:
                if self.paired:
                    self.full_exchange()
            finally:
                self.fleet.close()
                shutil.rmtree(self.fleet.root, ignore_errors=True)

    # --- the folder -------------------------------------------------------------------------
    def folder(self, name: str) -> Path:
        return self.fleet.root / f"folder-{name}"

    def _pair(self, name: str) -> None:
        device = self.devices[name]
        device.agent()
        if not self.paired:
            self.code = setup.start(device.db, device.clock, self.folder(name), name)
        else:
            source = self.folder(self.paired[0])
            for marker in ("memdesk-sync.json", "group.mds"):
                copy_file(source / marker, self.folder(name) / marker)
            setup.join(device.db, device.clock, self.folder(name), self.code, name)
        self.paired.append(name)

    def _files(self, name: str) -> dict[str, Path]:
        root = self.folder(name)
        return {
            str(path.relative_to(root)): path
            for path in root.rglob("*.mds")
            if path.is_file() and not path.name.startswith(".tmp")
        }

    def carry(self, source: str, target: str, keep) -> None:
        theirs, mine = self._files(source), self._files(target)
        for relative, path in sorted(theirs.items(), reverse=True):  # highest numbers first: out of order
            if not keep(relative):
                continue
            # as Syncthing resolves two versions of a file: the newer one wins
            if relative not in mine or path.stat().st_mtime_ns > mine[relative].stat().st_mtime_ns:
                copy_file(path, self.folder(target) / relative)

    # --- what people do -----------------------------------------------------------------------
    def _device(self, index: int):
        return self.devices[self.paired[index % len(self.paired)]]

    @rule(index=st.integers(0, 2), who=st.sampled_from(NAMES + ("",)), word=st.sampled_from(WORDS))
    def tell(self, index, who, word):
        self.counter += 1
        self._device(index).tell(f"{who} message {self.counter} about {word}".strip())

    @rule(index=st.integers(0, 2), word=st.sampled_from(WORDS), who=st.sampled_from(NAMES + ("",)))
    def note(self, index, word, who):
        self.counter += 1
        self._device(index).note(f"{who} note {self.counter} on {word}".strip())

    @rule(index=st.integers(0, 2), who=st.sampled_from(NAMES + ("",)), word=st.sampled_from(WORDS))
    def append(self, index, who, word):
        self.counter += 1
        line = f"{who} likes {word} {self.counter}".strip()
        device = self._device(index)
        device.append("human", line)
        self.lines.setdefault(line, set()).add(device.name)

    @rule(index=st.integers(0, 2), which=st.integers(0, len(EXPORTS) - 1))
    def import_history(self, index, which):
        device = self._device(index)
        HistoryImport.start(device.services.memory, device.agent(), EXPORTS[which]).run()

    @rule(index=st.integers(0, 2), who=st.sampled_from(NAMES))
    def forget(self, index, who):
        self._device(index).forget(who)
        self.forgotten.add(who)

    @rule(index=st.integers(0, 2), minutes=st.integers(1, 600))
    def time_passes(self, index, minutes):
        self._device(index).clock.advance(minutes=minutes)

    @rule(index=st.integers(0, 2))
    def sync(self, index):
        self._device(index).sync()

    @rule(source=st.integers(0, 2), to=st.integers(0, 2), parity=st.integers(0, 2))
    def carry_some(self, source, to, parity):
        """A partial delivery: every file, or only the odd or even numbered ones (a gap)."""
        source_name, target_name = self._device(source).name, self._device(to).name
        if source_name == target_name:
            return

        def keep(relative: str) -> bool:
            match = LOG_NAME.match(Path(relative).name)
            return parity == 0 or match is None or int(match.group(1)) % 2 == parity - 1

        self.carry(source_name, target_name, keep)

    @rule(source=st.integers(0, 2), to=st.integers(0, 2))
    def replay(self, source, to):
        """An old change file put under the next number in another device's copy of the folder."""
        source_name, target_name = self._device(source).name, self._device(to).name
        logs = sorted(p for p in self._files(source_name) if LOG_NAME.match(Path(p).name))
        if not logs or source_name == target_name:
            return
        old = Path(logs[0])
        # the next number that device has not used in any copy of the folder: a replay, not an overwrite
        numbers = [
            int(match.group(1))
            for name in self.paired
            for p in self._files(name)
            if Path(p).parent == old.parent and (match := LOG_NAME.match(Path(p).name))
        ]
        replayed = self.folder(target_name) / old.parent / f"{max(numbers) + 1:010d}.mds"
        replayed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.folder(source_name) / old, replayed)

    @precondition(lambda self: len(self.paired) < len(DEVICES))
    @rule()
    def late_joiner(self):
        self._pair(DEVICES[len(self.paired)])

    # --- the promise --------------------------------------------------------------------------
    @rule()
    def full_exchange(self):
        for _ in range(3):
            for source in self.paired:
                self.devices[source].sync()
                for target in self.paired:
                    if target != source:
                        self.carry(source, target, lambda relative: True)
            for name in self.paired:
                self.devices[name].sync()
        devices = [self.devices[name] for name in self.paired]
        digests = {device.name: device.digest() for device in devices}
        assert len(set(digests.values())) == 1, differences(devices)
        for device in devices:
            assert device.fts_agrees(), device.name
            assert vectors_agree(device), device.name
            text = device.block("human")
            for line in self.lines:
                if not any(name.casefold() in line.casefold() for name in self.forgotten):
                    assert line in text.split("\n"), (device.name, line, text)
            for name in self.forgotten:
                assert not any(name.casefold() in t.casefold() for t in device.texts()), (device.name, name)

    @invariant()
    def nothing_waits_half_applied(self):
        for name in self.paired:
            db = self.devices[name].db
            assert db.scalar("SELECT COUNT(*) FROM sync_applying") == 0


def differences(devices) -> str:
    """The rows the devices disagree on, for a failure's message."""
    tables = {device.name: synced_rows(device.db) for device in devices}
    out = []
    for index in range(len(next(iter(tables.values())))):
        every = set.union(*(set(rows[index]) for rows in tables.values()))
        for line in sorted(every):
            holders = [name for name, rows in tables.items() if line in rows[index]]
            if len(holders) != len(tables):
                out.append(f"{holders}: {line[:300]}")
    for device in devices:
        status = setup.status(device.db)
        others = [(d["name"], d["applied"], d["available"], d["problem"]) for d in status["devices"]]
        out.append(f"{device.name}: sent {status['sent']}; {others}")
        out += [f"  {p}" for p in status["problems"]]
    return "\n".join(out)


def vectors_agree(device) -> bool:
    """Every passage, the ones that arrived from other devices too, has its vector, made here."""
    db = device.db
    passages = db.scalar("SELECT COUNT(*) FROM passages")
    embedded = db.scalar("SELECT COUNT(*) FROM passages WHERE embedded = 1")
    vectors = db.scalar("SELECT COUNT(*) FROM passages_vec") if passages else 0
    return passages == embedded == vectors


def run_machine(machine_class, tmp_path, migrated_store, examples: int, steps: int) -> None:
    machine_class.tmp_root = tmp_path
    machine_class.migrated = migrated_store
    test = machine_class.TestCase
    test.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=PHASES,
    )
    test("runTest").runTest()


def test_devices_converge_whatever_the_folder_does(tmp_path, migrated_store):
    run_machine(SyncMachine, tmp_path, migrated_store, examples=EXAMPLES, steps=25)


class EncryptedSyncMachine(SyncMachine):
    encrypted = True


def test_encrypted_devices_converge_whatever_the_folder_does(tmp_path, migrated_store):
    run_machine(EncryptedSyncMachine, tmp_path, migrated_store, examples=4, steps=20)
