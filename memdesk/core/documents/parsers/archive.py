"""Zip-based formats (.docx) are measured by their zip directory before any part is inflated: a
document of a few hundred KB can hold parts that expand to gigabytes in memory (a zip bomb).

The directory alone is enough to bound the read, not only to estimate it: CPython's zipfile stops
inflating each member at the size the directory declares (``ZipExtFile`` cuts its output there and
then checks the CRC), so a directory that understates its sizes yields a damaged file, not more
bytes. The parsers read parts only through zipfile.
"""

from __future__ import annotations

import io
import zipfile

from memdesk.core.base.errors import DocumentError


def _size(count: int) -> str:
    return f"{count / 1024 / 1024:,.0f} MB" if count >= 1024 * 1024 else f"{count / 1024:,.0f} KB"


def check_unpacked_size(data: bytes, name: str, max_bytes: int) -> None:
    """Refuse an archive whose parts add up to more than ``max_bytes`` once unpacked. A file that
    is not a readable zip passes: its own parser says what is wrong with it in its format's terms."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, EOFError, OSError, ValueError):
        return
    if total > max_bytes:
        raise DocumentError(
            f"{name}: unpacks to {_size(total)}, more than the {_size(max_bytes)} a compressed document may hold;"
            " it was not read",
            hint="a document this large is probably damaged or made to exhaust memory",
        )
