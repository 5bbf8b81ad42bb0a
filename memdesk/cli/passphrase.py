"""Where the terminal commands get the store's passphrase: a file named by MEMDESK_PASSPHRASE_FILE
(its first line), else a question on the terminal that does not echo. Never from the command line:
argv is visible to every user of the machine (ps) and lands in shell history.

``open_store_services`` is how every command opens the user's store: the composition root opens it
(memdesk.app.services.unlock_and_open), and the terminal's prompt is asked only when it is encrypted."""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from memdesk.app.services import Services, unlock_and_open
from memdesk.core.base.errors import PassphraseError, PassphraseRequiredError, WrongPassphraseError
from memdesk.core.base.paths import Paths
from memdesk.core.storage.driver import file_is_encrypted
from memdesk.core.text.visible import visible

PASSPHRASE_FILE_ENV = "MEMDESK_PASSPHRASE_FILE"
#: The new passphrase for `memdesk encrypt --change`, when the current one is in MEMDESK_PASSPHRASE_FILE.
NEW_PASSPHRASE_FILE_ENV = "MEMDESK_NEW_PASSPHRASE_FILE"
#: Tries on the terminal before giving up (a file is read once: it will not get better).
ATTEMPTS = 3

Opened = TypeVar("Opened")


def passphrase_file(env: str = PASSPHRASE_FILE_ENV) -> Path | None:
    value = os.environ.get(env)
    return Path(value).expanduser() if value else None


def read_passphrase_file(path: Path) -> str:
    """The first line of ``path``, without its line ending (other spaces are part of it)."""
    try:
        with open(path, encoding="utf-8") as file:
            line = file.readline()
    except OSError as error:
        raise PassphraseRequiredError(
            f"Cannot read the passphrase file {path}: {error.strerror}", hint="check the path and its permissions"
        ) from None
    passphrase = line.rstrip("\r\n")
    if not passphrase:
        raise PassphraseRequiredError(
            f"The passphrase file {path} is empty", hint="write the passphrase on its first line"
        )
    return passphrase


def ask(prompt: str) -> str:
    """One passphrase typed on the terminal (not echoed)."""
    try:
        passphrase = getpass.getpass(visible(prompt))  # written to the terminal itself
    except EOFError:
        passphrase = ""
    if not passphrase:
        raise PassphraseRequiredError(
            "No passphrase was given", hint=f"type it when asked, or set {PASSPHRASE_FILE_ENV} to a file holding it"
        )
    return passphrase


def current_passphrase(store: Path, *, prompt: str | None = None) -> str:
    """The passphrase of the encrypted store ``store``: from the file, else asked."""
    path = passphrase_file()
    if path is not None:
        return read_passphrase_file(path)
    return ask(prompt or f"Passphrase for {store}: ")


def new_passphrase(*, current_in_file: bool) -> str:
    """A passphrase to set: MEMDESK_NEW_PASSPHRASE_FILE, else (when the current one is not what
    MEMDESK_PASSPHRASE_FILE holds) MEMDESK_PASSPHRASE_FILE, else typed twice on the terminal."""
    for env in (NEW_PASSPHRASE_FILE_ENV, None if current_in_file else PASSPHRASE_FILE_ENV):
        path = passphrase_file(env) if env else None
        if path is not None:
            return read_passphrase_file(path)
    first = ask("New passphrase: ")
    if ask("Type it again: ") != first:
        raise PassphraseError("The two passphrases differ; nothing was changed", hint="type the same passphrase twice")
    return first


def unlock_on_terminal(store: Path, open_with: Callable[[str], Opened]) -> Opened:
    """``open_with(passphrase)`` with the passphrase of the encrypted ``store``; on the terminal a
    wrong one is asked again, up to ATTEMPTS times."""
    attempts = 1 if passphrase_file() is not None else ATTEMPTS
    for attempt in range(1, attempts + 1):
        try:
            return open_with(current_passphrase(store))
        except WrongPassphraseError as error:
            if attempt == attempts:
                raise
            print(f"memdesk: {error.message}; try again.", file=sys.stderr)
    raise AssertionError("unreachable")  # pragma: no cover


def with_key(store: Path, open_with_key):
    """Call ``open_with_key(key)`` with the store's passphrase (None for a plain store), asked as
    ``unlock_on_terminal`` asks."""
    if not file_is_encrypted(store):
        return open_with_key(None)
    return unlock_on_terminal(store, open_with_key)


def open_store_services(paths: Paths | None = None, **options) -> Services:
    """The services of the user's store, its passphrase asked on the terminal when it is encrypted."""
    services = unlock_and_open(paths, unlock=unlock_on_terminal, **options)
    assert services is not None  # the terminal asks again or raises: it never gives up
    return services
