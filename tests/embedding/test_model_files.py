"""A missing, truncated or damaged embedding model file is refused with a ModelFileError naming it,
before anything is embedded: never a crash, never vectors that would poison the store."""

from __future__ import annotations

import json
import shutil
import struct

import numpy as np
import pytest

from memdesk.core.base.errors import ModelFileError
from memdesk.core.embedding.minilm import MiniLMEmbedder, bundled_model_path

WEIGHTS = "model.safetensors"


@pytest.fixture
def model_copy(tmp_path):
    """The bundled model's folder with everything but its weights: each test writes its own."""
    folder = tmp_path / "model"
    shutil.copytree(bundled_model_path(), folder, ignore=shutil.ignore_patterns(WEIGHTS))
    return folder


def refused(folder) -> ModelFileError:
    with pytest.raises(ModelFileError) as raised:
        MiniLMEmbedder(folder).embed(["a quiet morning by the lake"])
    return raised.value


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs)


def test_a_missing_model_file_is_refused_with_its_path(model_copy):
    error = refused(model_copy)
    assert str(model_copy / WEIGHTS) in str(error)


def test_a_truncated_model_file_is_refused(model_copy):
    with (bundled_model_path() / WEIGHTS).open("rb") as whole:
        (model_copy / WEIGHTS).write_bytes(whole.read(5_000_000))
    error = refused(model_copy)
    assert "truncated" in str(error) and str(model_copy / WEIGHTS) in str(error)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:0123\nsize 90868376\n",  # an LFS pointer
        struct.pack("<Q", 40) + b"{not json at all, just forty bytes....}",
        struct.pack("<Q", 2) + b"[]",
    ],
    ids=["empty", "git-lfs-pointer", "header-not-json", "header-not-a-table"],
)
def test_a_file_that_is_not_safetensors_is_refused(model_copy, content):
    (model_copy / WEIGHTS).write_bytes(content)
    error = refused(model_copy)
    assert str(model_copy / WEIGHTS) in str(error)


def test_weights_of_another_model_are_refused_naming_what_is_missing(model_copy):
    (model_copy / WEIGHTS).write_bytes(safetensors_bytes({"embeddings.LayerNorm.weight": np.ones(384)}))
    assert "embeddings.word_embeddings.weight" in str(refused(model_copy))


def test_a_tensor_of_the_wrong_shape_is_refused(model_copy):
    (model_copy / WEIGHTS).write_bytes(safetensors_bytes({"embeddings.word_embeddings.weight": np.ones((10, 384))}))
    assert "(30522, 384)" in str(refused(model_copy))


@pytest.mark.embedder
def test_damaged_weights_are_refused_rather_than_stored_as_vectors(model_copy):
    """Bytes flipped to NaN inside a tensor keep the file's shape: the vectors show it."""
    shutil.copyfile(bundled_model_path() / WEIGHTS, model_copy / WEIGHTS)
    with (model_copy / WEIGHTS).open("r+b") as file:
        header_length = struct.unpack("<Q", file.read(8))[0]
        start = json.loads(file.read(header_length))["embeddings.position_embeddings.weight"]["data_offsets"][0]
        file.seek(8 + header_length + start)
        file.write(np.full(384, np.nan, dtype="<f4").tobytes())  # position 0, which every text uses
    assert "non-finite" in str(refused(model_copy))
