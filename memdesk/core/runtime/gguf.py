"""Read and check a GGUF file's header in pure Python, before llama.cpp ever sees the file.

llama.cpp handles many bad files by returning an error, but not all of them (some malformed
headers hit asserts that abort the whole process). Parsing the header here, and checking that the
file is long enough to hold every tensor it declares, turns a missing, truncated or foreign file
into a ``ModelFileError`` that names it. The metadata we read on the way (context length, chat
template) is also what the catalog and the chat template need, without loading the weights.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import ModelFileError

MAGIC = b"GGUF"
_HINT = "Pick another model file, or download it again."

# ggml type id -> (elements per block, bytes per block); unknown types fall back to an offset check.
_GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
    39: (32, 17),
}
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_KEEP_ARRAY = 64  # longer arrays (the vocabulary) are skipped, only their length is kept


@dataclass(frozen=True)
class GgufInfo:
    path: Path
    version: int
    metadata: dict[str, Any]
    tensor_count: int
    required_size: int  # bytes the file must have to hold every tensor

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def context_length(self) -> int | None:
        value = self.metadata.get(f"{self.architecture}.context_length")
        return int(value) if isinstance(value, int) else None

    @property
    def chat_template(self) -> str | None:
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name") or self.path.stem)


class _Reader:
    def __init__(self, data: mmap.mmap | bytes, path: Path) -> None:
        self.data = data
        self.pos = 0
        self.path = path

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ModelFileError(f"Model file {self.path} is truncated (its header ends early)", hint=_HINT)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        length = self.take("<Q")
        if self.pos + length > len(self.data):
            raise ModelFileError(f"Model file {self.path} is truncated (its header ends early)", hint=_HINT)
        raw = bytes(self.data[self.pos : self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind, count = self.take("<I"), self.take("<Q")
            if count <= _KEEP_ARRAY:
                return [self.value(item_kind) for _ in range(count)]
            self.skip_array(item_kind, count)
            return {"array_length": count}
        raise ModelFileError(f"Model file {self.path} is not a valid GGUF (unknown value type {kind})", hint=_HINT)

    def skip_array(self, kind: int, count: int) -> None:
        if kind in _SCALARS:
            self.pos += struct.calcsize(_SCALARS[kind]) * count
        elif kind == _STRING:
            for _ in range(count):
                length = self.take("<Q")  # read first: `pos += take()` would use the old pos
                self.pos += length
        else:
            for _ in range(count):
                self.value(kind)
        if self.pos > len(self.data):
            raise ModelFileError(f"Model file {self.path} is truncated (its header ends early)", hint=_HINT)


def read_gguf(path: str | Path) -> GgufInfo:
    """Parse the header and tensor table; raise ModelFileError naming the file if anything is off."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"Model file {path} does not exist", hint="Check the path in the settings.")
    size = path.stat().st_size
    if size < 24:
        raise ModelFileError(f"Model file {path} is too small to be a GGUF model ({size} bytes)", hint=_HINT)
    with path.open("rb") as handle:
        if handle.read(4) != MAGIC:
            raise ModelFileError(f"Model file {path} is not a GGUF model (wrong magic bytes)", hint=_HINT)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(_Reader(data, path), size)


def _parse(reader: _Reader, size: int) -> GgufInfo:
    path = reader.path
    reader.pos = 4
    version = reader.take("<I")
    if version not in (2, 3):
        raise ModelFileError(f"Model file {path} has unsupported GGUF version {version}", hint=_HINT)
    tensor_count, kv_count = reader.take("<Q"), reader.take("<Q")
    if tensor_count > 1_000_000 or kv_count > 1_000_000:
        raise ModelFileError(f"Model file {path} is not a valid GGUF (absurd header counts)", hint=_HINT)
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string()
        metadata[key] = reader.value(reader.take("<I"))
    tensors: list[tuple[int, int]] = []  # (offset, byte size or 0 when unknown)
    for _ in range(tensor_count):
        reader.string()
        dims = [reader.take("<Q") for _ in range(reader.take("<I"))]
        kind, offset = reader.take("<I"), reader.take("<Q")
        elements = 1
        for dim in dims:
            elements *= dim
        block = _GGML_BLOCKS.get(kind)
        tensors.append((offset, elements // block[0] * block[1] if block else 0))
    alignment = metadata.get("general.alignment", 32)
    alignment = alignment if isinstance(alignment, int) and alignment > 0 else 32
    data_start = -(-reader.pos // alignment) * alignment
    required = max((data_start + offset + length for offset, length in tensors), default=data_start)
    if required > size:
        raise ModelFileError(
            f"Model file {path} is truncated: {size} bytes, but its tensors need {required}", hint=_HINT
        )
    return GgufInfo(path, version, metadata, tensor_count, required)
