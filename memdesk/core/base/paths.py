"""Where MemDesk keeps things. Every path the app touches is resolved here.

User data lives in the platform's data folder unless ``MEMDESK_HOME`` points elsewhere
(every test points it at a temporary folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import platformdirs

from memdesk.core.base.errors import StoreReadOnlyError
from memdesk.core.base.private_files import FOLDER_MODE, make_private, make_trees_private

HOME_ENV = "MEMDESK_HOME"

#: Prompts, the model catalog and UI assets ship inside the package, so an installed (not
#: editable) MemDesk or a frozen bundle finds them the same way a checkout does.
RESOURCES: Traversable = resources.files("memdesk") / "resources"

#: The application's id (the .desktop file's and the AppStream metainfo's name, see packaging/).
APP_ID = "io.github.memdesk.MemDesk"
#: The icon of the window, the .desktop entry and the bundle.
ICON = RESOURCES / "icons" / "memdesk.svg"

#: A source checkout's ``models/`` folder, where a developer may drop .gguf files. An installed
#: package has none (the folder check below is then simply false).
CHECKOUT_MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


@dataclass(frozen=True)
class Paths:
    home: Path

    @classmethod
    def from_environment(cls) -> Paths:
        override = os.environ.get(HOME_ENV)
        home = Path(override) if override else Path(platformdirs.user_data_dir("MemDesk", appauthor=False))
        return cls(home=home.expanduser().resolve())

    @property
    def database(self) -> Path:
        return self.home / "memdesk.sqlite3"

    @property
    def files_root(self) -> Path:
        return self.home / "files"

    def agent_files(self, agent_id: int) -> Path:
        return self.files_root / f"agent-{agent_id}"

    @property
    def user_models(self) -> Path:
        return self.home / "models"

    @property
    def user_tools(self) -> Path:
        return self.home / "tools"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def kv_cache(self) -> Path:
        """Saved prompt-prefix KV states of the local model (disposable: deleting it only costs speed)."""
        return self.home / "cache" / "kv"

    @property
    def downloads(self) -> Path:
        """Model downloads in progress (kept to resume; moved into ``user_models`` once verified)."""
        return self.home / "cache" / "downloads"

    @property
    def backups(self) -> Path:
        """Snapshots of the store (the backup_folder setting may choose another folder)."""
        return self.home / "backups"

    @property
    def instance_lock(self) -> Path:
        """Held by the one window or terminal chat using this data folder (see memdesk/app/instance.py)."""
        return self.home / "memdesk.lock"

    @property
    def raise_request(self) -> Path:
        """Left by a second start of the window, asking the running one to come forward."""
        return self.home / "raise-window.request"

    @property
    def sent_before_open(self) -> Path:
        """Messages sent in the first window before the store was open (see memdesk/session/sent_before_open.py)."""
        return self.home / "sent-before-open.jsonl"

    def own_entries(self) -> list[Path]:
        """What MemDesk keeps in the data folder (the rest of it, if any, is not MemDesk's)."""
        store = [
            self.database.with_name(self.database.name + suffix)
            # .snapshots-key: the secret with which the store vouches for its snapshots' records
            for suffix in ("", "-wal", "-shm", "-journal", ".snapshots-key")
        ]
        return [
            *store,
            self.instance_lock,
            self.sent_before_open,
            self.files_root,
            self.user_models,
            self.user_tools,
            self.logs,
            self.home / "cache",
            self.backups,
        ]

    def ensure(self) -> Paths:
        """Create the data folder and its folders, for this user only, and take back read access
        from others where an older MemDesk left it (folders 0700, files 0600)."""
        try:
            for folder in (self.home, self.files_root, self.user_models, self.user_tools, self.logs):
                folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        except OSError as error:
            raise StoreReadOnlyError(
                f"Could not create MemDesk's data folder {folder}: {error.strerror}",
                hint="make its parent writable for your user, or set MEMDESK_HOME to a writable folder",
            ) from error
        make_private(self.home)
        make_trees_private(self.own_entries())
        return self
