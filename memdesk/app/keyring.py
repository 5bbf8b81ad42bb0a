"""An encrypted store's passphrase in the system keyring, where the user chose to keep it there
(``memdesk mcp keyring``), so that apps connected over MCP can open the store while the window
is closed. Never in a client's configuration file, never on a command line.

The entry is named by the store's path. A machine without a keyring service (a server, a
container) says so when the user asks to keep it there; reading finds nothing there and the store
stays locked, with the hint of how to unlock it.
"""

from __future__ import annotations

import logging

from memdesk.core.base.errors import PassphraseError
from memdesk.core.base.paths import Paths

log = logging.getLogger("memdesk.app")

SERVICE = "MemDesk store passphrase"


def _entry(paths: Paths) -> str:
    return str(paths.database.resolve())


def key_from_keyring(paths: Paths) -> str | None:
    try:
        import keyring
        from keyring.errors import KeyringError

        try:
            return keyring.get_password(SERVICE, _entry(paths)) or None
        except KeyringError as error:
            log.info("no passphrase from the system keyring: %s", type(error).__name__)
            return None
    except ImportError:
        return None


def keep_in_keyring(paths: Paths, key: str) -> str:
    """Store the passphrase; returns the keyring's name. PassphraseError when there is none."""
    import keyring
    from keyring.errors import KeyringError

    try:
        keyring.set_password(SERVICE, _entry(paths), key)
    except KeyringError as error:
        raise PassphraseError(
            f"The system keyring could not keep the passphrase: {error}",
            hint="apps can still reach the store while MemDesk's window runs",
        ) from None
    return type(keyring.get_keyring()).__name__


def drop_from_keyring(paths: Paths) -> bool:
    """Remove the passphrase from the keyring; False when it was not there."""
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    try:
        keyring.delete_password(SERVICE, _entry(paths))
    except PasswordDeleteError:
        return False
    except KeyringError as error:
        raise PassphraseError(f"The system keyring could not be reached: {error}") from None
    return True
