"""Settings → Privacy: set, change or remove the store's passphrase, and what it protects.

The store is rewritten by a conversion that nothing may have open, so the panel only collects and
checks the passphrases and asks; the window then closes, ``memdesk.ui.startup.main`` converts the store
(``memdesk.app.store_conversion.convert_store``) and opens the window again with the new key."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from memdesk.core.base.paths import Paths
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import literal


@dataclass(frozen=True)
class StoreConversion:
    """What the user asked for: encrypt (old_key None), decrypt (new_key None) or re-key."""

    old_key: str | None
    new_key: str | None

    @property
    def verb(self) -> str:
        if self.old_key is None:
            return "Encrypting"
        return "Decrypting" if self.new_key is None else "Re-encrypting"


ENCRYPTED_FILES = (
    "the store ({database}) and its write-ahead log, which hold every agent, message, memory, "
    "document passage and setting",
    "the model's saved prompt states (the KV cache in {kv}), which hold the prompt's core memory",
    "backups of the store, which are copies of the encrypted file",
)
PLAIN_FILES = (
    "files you export (agent files, Letta .af): you chose where they go, so they are written as you asked",
    "files an agent writes with its file tools, in {files}",
    "the documents you ingest, which stay where they are (their text is copied into the store)",
    "models, your own tools, and the log in {logs} (it records what MemDesk did, never what was said)",
)
FORGOTTEN = "If you forget the passphrase, nothing in the store can be recovered: there is no reset."


def _password_field(placeholder: str) -> QLineEdit:
    field = QLineEdit()
    field.setEchoMode(QLineEdit.EchoMode.Password)
    field.setPlaceholderText(placeholder)
    field.setAccessibleName(placeholder)
    return field


def ask_to_restart(parent: QWidget, conversion: StoreConversion) -> bool:
    answer = QMessageBox.question(
        parent,
        "Restart to apply",
        literal(
            f"{conversion.verb} your memory needs every connection to it closed: MemDesk closes its window, "
            "rewrites the store and opens again. Nothing is lost if it is interrupted. Continue?"
        ),
    )
    return answer == QMessageBox.StandardButton.Yes


class PrivacyPanel(QWidget):
    def __init__(
        self,
        paths: Paths,
        key: str | None,
        request: Callable[[StoreConversion], None],
        parent: QWidget | None = None,
        *,
        confirm: Callable[[QWidget, StoreConversion], bool] = ask_to_restart,
    ) -> None:
        super().__init__(parent)
        self._key = key
        self._request = request
        self._confirm = confirm
        layout = QVBoxLayout(self)
        encrypted = key is not None
        self.status = QLabel(
            "<b>Your memory is encrypted with a passphrase.</b>"
            if encrypted
            else "<b>Your memory is not encrypted.</b> Anyone who can read your files can read it."
        )
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        names = {
            name: escape(str(path))
            for name, path in (
                ("database", paths.database.name),
                ("kv", paths.kv_cache),
                ("files", paths.files_root),
                ("logs", paths.logs),
            )
        }
        self.explanation = QLabel(
            ("<p>With a passphrase, these are encrypted:</p><ul>" if not encrypted else "<p>Encrypted:</p><ul>")
            + "".join(f"<li>{line.format(**names)}</li>" for line in ENCRYPTED_FILES)
            + "</ul><p>Not encrypted:</p><ul>"
            + "".join(f"<li>{line.format(**names)}</li>" for line in PLAIN_FILES)
            + "</ul>"
        )
        self.explanation.setWordWrap(True)
        self.explanation.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.explanation)
        form = QFormLayout()
        self.current = _password_field("Current passphrase")
        self.new = _password_field("New passphrase")
        self.repeat = _password_field("New passphrase again")
        if encrypted:
            form.addRow("Current passphrase", self.current)
        form.addRow("New passphrase", self.new)
        form.addRow("Repeat it", self.repeat)
        layout.addLayout(form)
        warning = QLabel(FORGOTTEN)
        warning.setWordWrap(True)
        warning.setStyleSheet("color: #a15c00")
        layout.addWidget(warning)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #b00020")
        self.error.setVisible(False)
        layout.addWidget(self.error)
        buttons = QHBoxLayout()
        self.encrypt_button = QPushButton("Encrypt with this passphrase…")
        self.change_button = QPushButton("Change passphrase…")
        self.remove_button = QPushButton("Remove passphrase…")
        self.encrypt_button.setVisible(not encrypted)
        self.change_button.setVisible(encrypted)
        self.remove_button.setVisible(encrypted)
        self.encrypt_button.clicked.connect(self.on_encrypt)
        self.change_button.clicked.connect(self.on_change)
        self.remove_button.clicked.connect(self.on_remove)
        for button in (self.encrypt_button, self.change_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addStretch(1)

    # --- actions ---------------------------------------------------------------------------------
    @Slot()
    @reports_errors
    def on_encrypt(self) -> None:
        new = self._new_passphrase()
        if new is not None:
            self._ask(StoreConversion(None, new))

    @Slot()
    @reports_errors
    def on_change(self) -> None:
        if not self._current_is_right():
            return
        new = self._new_passphrase()
        if new is None:
            return
        if new == self._key:
            self._say("The new passphrase is the current one.")
            return
        self._ask(StoreConversion(self._key, new))

    @Slot()
    @reports_errors
    def on_remove(self) -> None:
        if self._current_is_right():
            self._ask(StoreConversion(self._key, None))

    # --- checks ----------------------------------------------------------------------------------
    def _current_is_right(self) -> bool:
        typed = self.current.text()
        # The window holds the passphrase it was opened with: no need to touch the file.
        if not typed or self._key is None or not hmac.compare_digest(typed.encode("utf-8"), self._key.encode("utf-8")):
            self._say("The current passphrase is wrong." if typed else "Type the current passphrase first.")
            self.current.selectAll()
            self.current.setFocus()
            return False
        return True

    def _new_passphrase(self) -> str | None:
        new, repeat = self.new.text(), self.repeat.text()
        if not new:
            self._say("Type a new passphrase.")
            self.new.setFocus()
            return None
        if new != repeat:
            self._say("The two new passphrases differ.")
            self.repeat.selectAll()
            self.repeat.setFocus()
            return None
        return new

    def _ask(self, conversion: StoreConversion) -> None:
        self.error.setVisible(False)
        if self._confirm(self, conversion):
            self._request(conversion)

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(True)
