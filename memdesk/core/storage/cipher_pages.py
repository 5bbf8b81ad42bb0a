"""Whether a passphrase is an encrypted store's, read from the pages themselves.

SQLCipher answers a wrong key and a damaged first page with the same error ("file is not a
database"): it gives up at page 1. But every page of a SQLCipher 4 file carries its own HMAC-SHA512
over its ciphertext, its IV and its page number, under a key derived from the passphrase and the
file's salt. So when page 1 fails, the other pages tell: any of them that authenticates proves the
passphrase right and the file damaged; none authenticating means the passphrase is wrong (or the
salt, the file's first 16 bytes that every key derives from, is destroyed: then the two cannot be
told apart).

The layout is SQLCipher 4's defaults, which every store MemDesk encrypts uses: 4096-byte pages, a
reserve of 16 bytes of IV and 64 of HMAC at the end of each, the salt in place of page 1's first 16
bytes, the HMAC key derived from the page key by PBKDF2-HMAC-SHA512 (2 iterations) with the salt
XOR 0x3a, and the page number appended little-endian. ``tests/storage/test_damaged_encrypted_store.py``
checks it against files SQLCipher wrote.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from memdesk.core.storage.driver import SALT_BYTES, derived_key

PAGE_SIZE = 4096
_HMAC_BYTES = 64
_HMAC_SALT_MASK = 0x3A
_HMAC_ITERATIONS = 2
#: Pages checked at most (page 1 and others spread over the file): enough to find an intact one
#: in a damaged file, few enough to take a millisecond on any size.
SAMPLE_PAGES = 64


def _hmac_key(passphrase: str, salt: bytes) -> bytes:
    page_key = derived_key(passphrase, salt)
    return hashlib.pbkdf2_hmac(
        "sha512", page_key, bytes(b ^ _HMAC_SALT_MASK for b in salt), _HMAC_ITERATIONS, len(page_key)
    )


def _authentic(page: bytes, number: int, key: bytes) -> bool:
    if len(page) != PAGE_SIZE:
        return False
    start = SALT_BYTES if number == 1 else 0
    body, tag = page[start : PAGE_SIZE - _HMAC_BYTES], page[PAGE_SIZE - _HMAC_BYTES :]
    return hmac.compare_digest(hmac.new(key, body + number.to_bytes(4, "little"), hashlib.sha512).digest(), tag)


def authenticated_pages(path: Path | str, passphrase: str, *, sample: int = SAMPLE_PAGES) -> tuple[int, int]:
    """(pages that authenticate under ``passphrase``, pages checked): page 1 and up to ``sample``
    others spread evenly over the file."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        salt = file.read(SALT_BYTES)
        pages = size // PAGE_SIZE
        if len(salt) < SALT_BYTES or pages == 0:
            return 0, 0
        key = _hmac_key(passphrase, salt)
        step = max(1, pages // sample)
        numbers = sorted({1, *range(1, pages + 1, step)})[: sample + 1]
        good = 0
        for number in numbers:
            file.seek((number - 1) * PAGE_SIZE)
            good += _authentic(file.read(PAGE_SIZE), number, key)
    return good, len(numbers)


def passphrase_fits(path: Path | str, passphrase: str) -> bool:
    """Whether any checked page of the file authenticates under ``passphrase``."""
    try:
        return authenticated_pages(path, passphrase)[0] > 0
    except OSError:
        return False
