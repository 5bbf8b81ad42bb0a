"""Bad model files are refused by name before llama.cpp sees them."""

from __future__ import annotations

import shutil

import pytest

from memdesk.core.base.errors import ModelFileError
from memdesk.core.runtime.gguf import read_gguf


def truncated_copy(source, target, size):
    with open(source, "rb") as reader, open(target, "wb") as writer:
        writer.write(reader.read(size))
    return target


def test_reads_the_bundled_models_header(model_path):
    info = read_gguf(model_path)
    assert info.architecture == "llama"
    assert info.context_length == 8192
    assert info.required_size == model_path.stat().st_size
    assert "<|im_start|>" in (info.chat_template or "")


@pytest.mark.parametrize("size", [10, 3_000, 2_000_000, 98_000_000])
def test_truncated_files_are_refused(model_path, tmp_path, size):
    broken = truncated_copy(model_path, tmp_path / "broken.gguf", size)
    with pytest.raises(ModelFileError, match="broken.gguf") as error:
        read_gguf(broken)
    assert "truncated" in error.value.message or "too small" in error.value.message


def test_missing_and_foreign_files_are_refused(tmp_path):
    with pytest.raises(ModelFileError, match="nowhere.gguf"):
        read_gguf(tmp_path / "nowhere.gguf")
    text = tmp_path / "notes.gguf"
    text.write_text("this is not a model, just some text that is long enough" * 10)
    with pytest.raises(ModelFileError, match="notes.gguf.*not a GGUF"):
        read_gguf(text)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty.gguf"):
        read_gguf(empty)


def test_garbage_after_the_magic_is_refused(tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 4000)
    with pytest.raises(ModelFileError, match="fake.gguf"):
        read_gguf(fake)


def test_a_copy_of_the_real_file_is_accepted(model_path, tmp_path):
    copy = shutil.copyfile(model_path, tmp_path / "copy.gguf")
    assert read_gguf(copy).tensor_count > 0
