"""llama.cpp's C API behind three small objects; the only module that imports ``llama_cpp``.

A test (tests/test_layering.py) keeps it that way, so every ctypes detail lives here and the rest of
the runtime is plain Python: ``NativeModel`` (the weights and the vocabulary), ``NativeContext``
(one sequence's KV cache: evaluation, logits, state bytes) and ``NativeSampler`` (one llama.cpp
sampler: a chain of the usual samplers, or a grammar). Native failures become ``ModelError``s that
quote llama.cpp's last logged error.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import llama_cpp
import numpy as np

from memdesk.core.base.errors import ModelError, ModelFileError
from memdesk.core.runtime.base import DRY, SamplingParams

#: llama.cpp's ``llama_token_data`` as a NumPy record, so candidate arrays are filled without loops.
TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")], align=True)
assert TOKEN_DATA.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)

# --- native logging: keep llama.cpp's chatter off stderr, but remember errors for our messages ---
_LOG_TAIL: deque[str] = deque(maxlen=20)


@llama_cpp.llama_log_callback
def _on_native_log(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    if level == 3:  # GGML_LOG_LEVEL_ERROR
        _LOG_TAIL.append(text.decode("utf-8", errors="replace").strip())


_BACKEND_LOCK = threading.Lock()
_backend_ready = False


def init_backend() -> None:
    global _backend_ready
    with _BACKEND_LOCK:
        if not _backend_ready:
            llama_cpp.llama_log_set(_on_native_log, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _backend_ready = True


def native_reason() -> str:
    """llama.cpp's last logged error, as a suffix for our messages ("" when it logged none)."""
    return f": {_LOG_TAIL[-1]}" if _LOG_TAIL else ""


#: Written next to the installed package by scripts/llama-wheel: the build's kind, flags and arch.
BUILD_RECORD = "MEMDESK_BUILD"


def build_info() -> dict[str, str]:
    """Which llama.cpp this is: MemDesk's build record (kind ``portable`` or ``native-…``, the CMake
    flags, the arch) and llama.cpp's own list of the CPU features it was compiled to use.
    Benchmarks and ``memdesk doctor`` report it, so a figure or a crash names its build."""
    info = {"version": str(getattr(llama_cpp, "__version__", "")), "kind": "unknown", "flags": "", "arch": ""}
    record = Path(llama_cpp.__file__).parent / BUILD_RECORD
    if record.is_file():
        for line in record.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("kind", "flags", "arch"):
                info[key.strip()] = value.strip()
    info["system_info"] = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()
    return info


def default_threads() -> int:
    """Half the logical CPUs: llama.cpp's worker threads spin while waiting for each other, so
    claiming every core (hyper-threads, or cores other apps are using) is slower, often much
    slower: 11 tokens/s with 2 threads against 55 with 1 on a busy 2-core machine."""
    return max(1, (os.cpu_count() or 2) // 2)


class NativeModel:
    """Loaded weights and their vocabulary. Tokens are plain ints."""

    def __init__(self, path: Path, *, gpu_layers: int = 0) -> None:
        init_backend()
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = gpu_layers
        _LOG_TAIL.clear()
        self._model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not self._model:
            raise ModelFileError(f"llama.cpp could not load model file {path}{native_reason()}")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.n_vocab: int = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self.n_ctx_train: int = llama_cpp.llama_model_n_ctx_train(self._model)
        self.bos: int = llama_cpp.llama_vocab_bos(self._vocab)
        self.eos: int = llama_cpp.llama_vocab_eos(self._vocab)

    @property
    def is_open(self) -> bool:
        return bool(self._model)

    def tokenize(self, text: str, *, add_bos: bool, special: bool) -> list[int]:
        raw = text.encode("utf-8")
        capacity = len(raw) + 8
        buffer = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(self._vocab, raw, len(raw), buffer, capacity, add_bos, special)
        if count < 0:
            raise ModelError(f"Tokenizing {len(raw)} bytes failed")
        return list(buffer[:count])

    def piece_bytes(self, token: int, *, special: bool = False) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, 64, 0, special)
        if length < 0:
            buffer = ctypes.create_string_buffer(-length)
            length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, -length, 0, special)
        return buffer.raw[:length]

    def is_end(self, token: int) -> bool:
        """End of generation (EOS, EOT and the like)."""
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def close(self) -> None:
        if self._model:
            llama_cpp.llama_model_free(self._model)
            self._model = None


class NativeContext:
    """One sequence's KV cache over a ``NativeModel``: evaluate tokens, read logits, save and
    restore the cache as bytes."""

    def __init__(self, model: NativeModel, *, n_ctx: int, batch_size: int, threads: int) -> None:
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = batch_size
        params.n_ubatch = batch_size
        params.n_threads = threads
        params.n_threads_batch = threads
        params.n_seq_max = 1
        self._ctx = llama_cpp.llama_init_from_model(model._model, params)
        if not self._ctx:
            raise ModelError(f"llama.cpp could not create a context{native_reason()}")
        self.n_ctx: int = llama_cpp.llama_n_ctx(self._ctx)
        self.n_vocab = model.n_vocab
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        # What, besides the model file and the batch size, decides the bytes of a saved state.
        self.state_identity = {
            "llama_cpp": llama_cpp.__version__,
            "type_k": params.type_k,
            "type_v": params.type_v,
            "flash_attn": params.flash_attn_type,
        }

    @property
    def is_open(self) -> bool:
        return bool(self._ctx)

    def decode(self, tokens: Sequence[int]) -> None:
        """Evaluate ``tokens`` after what the cache holds (one batch)."""
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        status = llama_cpp.llama_decode(self._ctx, llama_cpp.llama_batch_get_one(array, len(tokens)))
        if status != 0:
            raise ModelError(f"llama.cpp failed to evaluate the prompt (status {status}){native_reason()}")

    def logits(self) -> np.ndarray:
        """The last evaluated token's logits (a view: valid until the next decode)."""
        pointer = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def clear(self) -> None:
        llama_cpp.llama_memory_clear(self._memory, True)

    def truncate(self, keep: int) -> bool:
        """Drop every position from ``keep`` on; False when this memory kind cannot (recurrent models)."""
        return bool(llama_cpp.llama_memory_seq_rm(self._memory, 0, keep, -1))

    def state(self, max_bytes: int | None = None) -> bytearray | None:
        """The sequence's KV state as bytes (None if llama.cpp wrote fewer than it announced, or
        if it is larger than ``max_bytes``)."""
        size = llama_cpp.llama_state_seq_get_size(self._ctx, 0)
        if max_bytes is not None and size > max_bytes:
            return None
        state = bytearray(size)
        written = llama_cpp.llama_state_seq_get_data(self._ctx, (ctypes.c_uint8 * size).from_buffer(state), size, 0)
        return state if written == size else None

    def restore(self, state: bytearray, positions: int) -> str | None:
        """Replace the cache with ``state``, which must cover exactly ``positions`` tokens.
        Returns None on success, else why it was refused (and the cache is then empty)."""
        self.clear()
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        restored = llama_cpp.llama_state_seq_set_data(self._ctx, buffer, len(state), 0)
        low = llama_cpp.llama_memory_seq_pos_min(self._memory, 0)
        high = llama_cpp.llama_memory_seq_pos_max(self._memory, 0)
        if restored == len(state) and low == 0 and high == positions - 1:
            return None
        self.clear()
        return f"llama.cpp did not restore it (read {restored} of {len(state)} bytes){native_reason()}"

    def close(self) -> None:
        if self._ctx:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None


def _primed_dry(model: NativeModel, avoid: Sequence[Sequence[int]], max_tokens: int) -> object:
    """A DRY sampler whose history already holds ``avoid``: it only ever sees the tokens it is
    given, so a run copied from the prompt counts only once the prompt's text is in it."""
    breakers = [b.encode("utf-8") for b in DRY.breakers]
    array = (ctypes.c_char_p * len(breakers))(*breakers)
    primed = sum(len(tokens) + 1 for tokens in avoid)
    handle = llama_cpp.llama_sampler_init_dry(
        model._vocab, DRY.multiplier, DRY.base, DRY.allowed, primed + max_tokens + 64, array, len(breakers)
    )
    if not handle:
        raise ModelError(f"llama.cpp could not make its DRY sampler{native_reason()}")
    separator = model.tokenize("\n", add_bos=False, special=False)
    for tokens in avoid:
        for token in [*tokens, *separator]:  # a line break between texts: no run spans two of them
            llama_cpp.llama_sampler_accept(handle, token)
    return handle


class NativeSampler:
    """One llama.cpp sampler over arrays of ``TOKEN_DATA`` candidates."""

    def __init__(self, handle: object) -> None:
        self._handle = handle
        # One reusable single-token array: checking one token is the hot path of grammar sampling.
        self._single = llama_cpp.llama_token_data(0, 0.0, 0.0)
        self._single_array = llama_cpp.llama_token_data_array(ctypes.pointer(self._single), 1, -1, False)

    @classmethod
    def chain(cls, params: SamplingParams, model: NativeModel, *, avoid: Sequence[Sequence[int]] = ()) -> NativeSampler:
        """Repetition penalty, DRY against ``avoid`` (token runs the answer must not copy; see
        base.Dry) when there are any, then greedy or top-k / top-p / min-p / temperature / a
        seeded draw."""
        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        add = lambda sampler: llama_cpp.llama_sampler_chain_add(chain, sampler)  # noqa: E731
        add(llama_cpp.llama_sampler_init_penalties(model.n_vocab, 64, params.repeat_penalty, 0.0, 0.0))
        if avoid:
            add(_primed_dry(model, avoid, params.max_tokens))
        if params.temperature <= 0:
            add(llama_cpp.llama_sampler_init_greedy())
        else:
            seed = params.seed if params.seed is not None else llama_cpp.LLAMA_DEFAULT_SEED
            add(llama_cpp.llama_sampler_init_top_k(params.top_k))
            add(llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
            add(llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
            add(llama_cpp.llama_sampler_init_temp(params.temperature))
            add(llama_cpp.llama_sampler_init_dist(seed))
        return cls(chain)

    @classmethod
    def grammar(cls, model: NativeModel, source: str) -> NativeSampler:
        """A sampler that sets the logit of every token the GBNF ``source`` forbids to -inf."""
        handle = llama_cpp.llama_sampler_init_grammar(model._vocab, source.encode("utf-8"), b"root")
        if not handle:
            raise ModelError(f"llama.cpp rejected the call grammar{native_reason()}")
        return cls(handle)

    def apply(self, candidates: np.ndarray) -> int:
        """Run the sampler over ``candidates`` in place; returns the selected index (-1: none)."""
        array = llama_cpp.llama_token_data_array(
            candidates.ctypes.data_as(llama_cpp.llama_token_data_p), len(candidates), -1, False
        )
        llama_cpp.llama_sampler_apply(self._handle, ctypes.byref(array))
        return int(array.selected)

    def admits(self, token: int) -> bool:
        """Whether the sampler leaves ``token`` a finite logit (for a grammar: the token is allowed)."""
        # llama_cpp types the field as c_int32; ctypes takes a Python int for it.
        self._single.id, self._single.logit, self._single.p = token, 0.0, 0.0  # type: ignore[assignment]
        self._single_array.size, self._single_array.selected = 1, -1
        llama_cpp.llama_sampler_apply(self._handle, ctypes.byref(self._single_array))
        return bool(np.isfinite(self._single.logit))

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self._handle, token)

    def close(self) -> None:
        if self._handle:
            llama_cpp.llama_sampler_free(self._handle)
            self._handle = None
