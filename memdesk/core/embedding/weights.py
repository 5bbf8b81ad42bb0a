"""A model's tensors from a safetensors file, mapped rather than read.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range, then the bytes. Mapping the file keeps only the pages a text touches
resident: the embedding table is half of MiniLM's 87 MB and a text reads a few of its rows. Every
range is checked against the file before it is mapped, so a truncated or damaged file is refused
with a ModelFileError instead of crashing the process when a missing page is touched.
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path

import numpy as np

from memdesk.core.base.errors import ModelFileError

#: The dtypes a BERT checkpoint uses, as safetensors names them.
DTYPES: dict[str, np.dtype] = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "I64": np.dtype("<i8")}
#: No real header comes near this; a larger length is a damaged file, not a model.
MAX_HEADER_BYTES = 16 * 1024 * 1024


def load_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor in ``path`` as a read-only array over the mapped file."""
    try:
        with path.open("rb") as file:
            size = path.stat().st_size
            if size < 8:
                raise ModelFileError(f"The model file {path} is truncated ({size} bytes)")
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as error:
        raise ModelFileError(f"Could not read the model file {path}: {error}") from error
    buffer = np.frombuffer(mapped, dtype=np.uint8)
    header_length = int(buffer[:8].view("<u8")[0])
    if header_length > min(MAX_HEADER_BYTES, size - 8):
        raise ModelFileError(f"The model file {path} is damaged: its header claims {header_length} bytes")
    try:
        header = json.loads(bytes(buffer[8 : 8 + header_length]))
    except (UnicodeDecodeError, ValueError) as error:
        raise ModelFileError(f"The model file {path} is damaged: its header is not JSON ({error})") from error
    if not isinstance(header, dict):
        raise ModelFileError(f"The model file {path} is damaged: its header is not a table of tensors")
    data = buffer[8 + header_length :]
    return {name: _tensor(path, name, entry, data) for name, entry in header.items() if name != "__metadata__"}


def _tensor(path: Path, name: str, entry: object, data: np.ndarray) -> np.ndarray:
    try:
        if not isinstance(entry, dict):
            raise TypeError(name)
        dtype = DTYPES[entry["dtype"]]
        shape = tuple(int(n) for n in entry["shape"])
        start, end = (int(n) for n in entry["data_offsets"])
    except (KeyError, TypeError, ValueError) as error:
        raise ModelFileError(f"The model file {path} is damaged: tensor {name} is described wrongly") from error
    expected = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if not 0 <= start <= end <= len(data) or end - start != expected:
        raise ModelFileError(
            f"The model file {path} is damaged or truncated: tensor {name} lies outside it",
            hint="reinstall MemDesk's dependencies (`make install`) to restore the embedding model",
        )
    return data[start:end].view(dtype).reshape(shape)
