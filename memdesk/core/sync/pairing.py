"""Pairing codes and the keys they give.

The device that starts a sync folder draws a random code of 100 bits, shown as five groups of four
letters and digits (base32, so no 0/O or 1/I to confuse when typed). Every device derives the
folder's key from the code and the folder's group id (HKDF-SHA256); the code itself is never
written anywhere. 100 random bits cannot be guessed offline, so no slow key derivation is needed.
"""

from __future__ import annotations

import base64
import os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memdesk.core.base.errors import PairingCodeError

CODE_CHARACTERS = 20
_CONFUSABLE = str.maketrans({"0": "O", "1": "I", "8": "B", "9": "G"})


def new_code() -> str:
    letters = base64.b32encode(os.urandom(CODE_CHARACTERS * 5 // 8)).decode()[:CODE_CHARACTERS]
    return "-".join(letters[i : i + 4] for i in range(0, CODE_CHARACTERS, 4))


def normalize(code: str) -> str:
    letters = "".join(ch for ch in code.upper() if ch.isalnum()).translate(_CONFUSABLE)
    if len(letters) != CODE_CHARACTERS or any(ch not in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" for ch in letters):
        raise PairingCodeError(
            "That is not a pairing code",
            hint="type the 20 letters and digits `memdesk sync init` showed (XXXX-XXXX-...)",
        )
    return letters


def group_key(code: str, group_id: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=group_id.encode(), info=b"memdesk sync group key").derive(
        normalize(code).encode()
    )
