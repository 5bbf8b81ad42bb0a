"""The dialog that asks for an encrypted store's passphrase at start.

It tries each passphrase itself (``unlock``) and stays open on a wrong one, saying so; Quit ends
the start cleanly with nothing opened. The passphrase lives only in memory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QLabel, QLineEdit, QVBoxLayout, QWidget

from memdesk.core.base.errors import WrongPassphraseError
from memdesk.ui.common.errors import reports_errors

WRONG = "Wrong passphrase. Try again (upper and lower case differ)."
EMPTY = "Type the passphrase first."


class PassphraseDialog(QDialog):
    def __init__(self, store: Path, unlock: Callable[[str], Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Unlock MemDesk")
        self._unlock = unlock
        self.opened: Any = None
        self.failure: Exception | None = None
        self.attempts = 0
        layout = QVBoxLayout(self)
        intro = QLabel("Your memory is encrypted. Enter its passphrase to open it.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        where = QLabel(str(store))
        where.setTextFormat(Qt.TextFormat.PlainText)
        where.setStyleSheet("color: #777; font-size: small")
        layout.addWidget(where)
        self.field = QLineEdit()
        self.field.setEchoMode(QLineEdit.EchoMode.Password)
        self.field.setPlaceholderText("Passphrase")
        self.field.setAccessibleName("Passphrase")
        layout.addWidget(self.field)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #b00020")
        self.error.setVisible(False)
        layout.addWidget(self.error)
        self.buttons = QDialogButtonBox()
        self.unlock_button = self.buttons.addButton("Unlock", QDialogButtonBox.ButtonRole.AcceptRole)
        self.quit_button = self.buttons.addButton("Quit", QDialogButtonBox.ButtonRole.RejectRole)
        self.unlock_button.setDefault(True)
        self.buttons.accepted.connect(self.on_unlock)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.field.setFocus()

    @Slot()
    @reports_errors
    def on_unlock(self) -> None:
        passphrase = self.field.text()
        if not passphrase:
            self._say(EMPTY)
            return
        self.attempts += 1
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)  # the key derivation takes a moment
        try:
            self.opened = self._unlock(passphrase)
        except WrongPassphraseError:
            self.field.selectAll()
            self.field.setFocus()
            self._say(WRONG)
            return
        except Exception as error:  # noqa: BLE001 - the store cannot open for another reason: the caller says why
            self.failure = error
            self.reject()
            return
        finally:
            QApplication.restoreOverrideCursor()
        self.accept()

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(True)


def unlock_store(store: Path, unlock: Callable[[str], Any], parent: QWidget | None = None) -> Any:
    """What ``unlock`` returned for the right passphrase, or None when the user quit. Another
    error of the store than a wrong passphrase is raised."""
    dialog = PassphraseDialog(store, unlock, parent)
    accepted = dialog.exec()
    if dialog.failure is not None:
        raise dialog.failure
    return dialog.opened if accepted else None
