"""Stand-ins for the doctor's model probe that die the ways llama.cpp can die. They run in the
doctor's child process (importable there because pytest puts this folder on sys.path, which the
spawned child inherits)."""

from __future__ import annotations

import ctypes
import os
import signal
import time

NATIVE_BUILD = {
    "version": "0.3.36",
    "kind": "native-1234abcd",
    "flags": "-DGGML_NATIVE=ON",
    "arch": "x86_64",
    "system_info": "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | LLAMAFILE = 1 |",
}
AMX_BUILD = {
    **NATIVE_BUILD,
    "system_info": "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |",
}


def segfault_at_decode(model_path, tokens):
    """What a native build on an AMX CPU does: loads, then dies in the first decode."""
    yield ("build", NATIVE_BUILD)
    yield ("loaded", {"seconds": 0.1, "context": 512})
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def illegal_instruction(model_path, tokens):
    yield ("build", NATIVE_BUILD)
    os.kill(os.getpid(), signal.SIGILL)


def amx_build(model_path, tokens):
    yield ("build", AMX_BUILD)
    yield ("loaded", {"seconds": 0.1, "context": 512})
    yield ("decoded", {"tokens": 16, "seconds": 0.2, "text": "one two three"})


def hangs(model_path, tokens):
    yield ("build", NATIVE_BUILD)
    time.sleep(60)
