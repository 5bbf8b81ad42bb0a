"""Devices for sync's tests and benchmark: each a MemDesk home of its own (a real store, plain or encrypted, the
hashing embedder, its own clock, which may be skewed) opened through the composition root, as the
terminal opens it; all sharing one sync folder under the test's temporary folder."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memdesk.app.operations import open_forgetting, open_sync
from memdesk.app.services import Services, open_services
from memdesk.core.base.clock import ManualClock
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.sync import setup
from memdesk.core.sync.digest import synced_digest
from memdesk.core.sync.engine import SyncEngine, SyncReport

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
PASSPHRASE = "correct horse battery staple"


@dataclass
class Device:
    name: str
    home: Path
    clock: ManualClock
    key: str | None = None
    services: Services = field(init=False)

    def __post_init__(self) -> None:
        self.open()

    def open(self) -> None:
        self.services = open_services(
            Paths(self.home).ensure(), key=self.key, embedder=HashingEmbedder(), clock=self.clock
        )

    def close(self) -> None:
        self.services.close()

    @property
    def db(self):
        return self.services.db

    @property
    def engine(self) -> SyncEngine:
        return open_sync(self.services)

    def agent(self, name: str = "Sam") -> int:
        record = self.services.agents.find(name)
        return record.id if record else self.services.create_agent(name).id

    def tell(self, text: str, agent: str = "Sam") -> None:
        self.services.memory.recall.add(
            self.agent(agent),
            role="user",
            kind="user_message",
            content=text,
            search_text=text,
            created_at=self.clock.now(),
        )

    def note(self, text: str, agent: str = "Sam") -> None:
        self.services.memory.archival.insert(self.agent(agent), text)

    def append(self, block: str, line: str, agent: str = "Sam") -> None:
        core = self.services.memory.core
        current = core.get(self.agent(agent), block)
        assert current is not None
        value = f"{current.value}\n{line}" if current.value else line
        core.set_value(self.agent(agent), block, value)

    def block(self, label: str, agent: str = "Sam") -> str:
        block = self.services.memory.core.get(self.agent(agent), label)
        return "" if block is None else block.value

    def forget(self, text: str, agent: str = "Sam") -> None:
        open_forgetting(self.services, self.services.backups).apply(self.agent(agent), text, purge_backups=True)

    def sync(self) -> SyncReport:
        return self.engine.now()

    def digest(self) -> str:
        return synced_digest(self.db)

    def texts(self) -> list[str]:
        """Every text sync carries, as this device's store holds it."""
        rows = self.db.query(
            "SELECT content FROM messages UNION ALL SELECT search_text FROM messages UNION ALL SELECT text FROM"
            " passages UNION ALL SELECT value FROM memory_blocks UNION ALL SELECT COALESCE(value, '') FROM"
            " sync_block_versions"
        )
        return [row[0] for row in rows]

    def fts_agrees(self) -> bool:
        """The full-text indexes hold exactly the rows' text (rebuilt locally from what was applied)."""
        for table, column in (("messages", "search_text"), ("passages", "text")):
            check = self.db.scalar(
                f"SELECT COUNT(*) FROM {table} t WHERE t.{column} != '' AND NOT EXISTS (SELECT 1 FROM {table}_fts f"
                f" WHERE f.rowid = t.id)"
            )
            if check:
                return False
            self.db.execute(f"INSERT INTO {table}_fts({table}_fts, rank) VALUES ('integrity-check', 1)")
        return True


class Fleet:
    """Several devices and their sync folder."""

    def __init__(self, root: Path, migrated: Path | None = None) -> None:
        self.root = root
        self.folder = root / "sync-folder"
        self.code: str | None = None
        self._migrated = migrated
        self.devices: list[Device] = []

    def device(self, name: str, *, skew_minutes: float = 0, key: str | None = None) -> Device:
        """A device named ``name``; one whose home already exists (a copy of another's) keeps it."""
        home = self.root / name
        if self._migrated is not None and key is None and not home.exists():
            home.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self._migrated, home / "memdesk.sqlite3")
        device = Device(name, home, ManualClock(START + timedelta(minutes=skew_minutes)), key)
        self.devices.append(device)
        return device

    def pair(self, device: Device) -> None:
        if self.code is None:
            self.code = setup.start(device.db, device.clock, self.folder, device.name)
        else:
            setup.join(device.db, device.clock, self.folder, self.code, device.name)

    def exchange(self, rounds: int = 2) -> None:
        """Every device syncs, twice over: what one applied and changed reaches the others."""
        for _ in range(rounds):
            for device in self.devices:
                device.sync()

    def close(self) -> None:
        for device in self.devices:
            device.close()
