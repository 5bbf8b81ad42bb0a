"""Messages the user sent in the first window, before the store was open.

The first window shows within half a second of the launch, long before the store, the agent and
the model are ready (see memdesk/ui/startup/first_window.py). What is sent there is the user's the
moment Send is pressed, so it is written here at once, one JSON line per message, flushed to disk.
The main window moves the messages into the store as it opens, where they are answered like any
message sent while the model loads, and then deletes this file. A start that ends before that (a
crash, a store that does not open) leaves them here for the next start, which delivers them the
same way. Only an unencrypted store's first window writes here: an encrypted one asks its
passphrase before any window, so nothing the user types waits in a plain file.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger("memdesk.sent_before_open")


class SentBeforeOpen:
    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, text: str) -> None:
        """Keep ``text`` on disk before returning (OSError when it cannot be: nothing was kept)."""
        line = json.dumps({"text": text}, ensure_ascii=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def texts(self) -> list[str]:
        """What was sent, oldest first. A line a crash cut short is skipped (it was never
        acknowledged to the user: Send returns after the whole line is on disk)."""
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        texts = []
        for line in lines:
            try:
                text = json.loads(line)["text"]
            except (ValueError, KeyError, TypeError):
                log.warning("a damaged line of %s was skipped", self.path.name)
                continue
            if isinstance(text, str) and text.strip():
                texts.append(text)
        return texts

    def clear(self) -> None:
        """Called once the messages are in the store."""
        self.path.unlink(missing_ok=True)
