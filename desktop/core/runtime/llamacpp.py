"""The local model: llama.cpp through llama-cpp-python's low-level API.

This is the only module that imports ``llama_cpp`` (a test enforces it). It owns four things:

* loading a GGUF after ``gguf.read_gguf`` has checked the file, so a bad file is a ModelFileError
  naming it rather than a native abort;
* prompt evaluation with KV-cache prefix reuse: the tokens in the cache are remembered, and a new
  prompt only evaluates what follows the longest common prefix (the agent orders prompts
  stable-first, so that is usually just the newest messages);
* the same across restarts: with ``settings.cache_dir`` the KV state of the system message is
  saved to disk (``kv_store.KvStore``) and loaded instead of evaluated when a fresh context meets
  a prompt that starts with it;
* sampling: ``sampler.GrammarFirstSampler`` draws from the unconstrained distribution and asks the
  grammar about that one token, falling back to masking the whole vocabulary only on a rejection;
* streaming the call's thoughts and message through ``CallStreamParser``, with cancellation
  polled between tokens.
"""

from __future__ import annotations

import codecs
import ctypes
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

import llama_cpp
import numpy as np

from desktop.core.runtime.llamacpp_settings import LlamaSettings  # noqa: F401 - re-exported
from desktop.core.runtime.base import (
    CancelToken,
    ChatMessage,
    GenerationStats,
    ModelTurn,
    RuntimeInfo,
    SamplingParams,
    StreamCallback,
    ToolSpec,
)
from desktop.core.runtime.chat_template import ChatTemplate
from desktop.core.runtime.gguf import read_gguf
from desktop.core.runtime.grammar import build_call_grammar, forced_text
from desktop.core.runtime.json_end import JsonEnd
from desktop.core.runtime.kv_store import KvStore
from desktop.core.runtime.streaming import CallStreamParser
from desktop.errors import ContextOverflowError, GenerationCancelled, ModelError, ModelFileError

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")], align=True)
assert _TOKEN_DATA.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)

# --- native logging: keep llama.cpp's chatter off stderr, but remember errors for our messages ---
_LOG_TAIL: deque[str] = deque(maxlen=20)


@llama_cpp.llama_log_callback
def _on_native_log(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    if level == 3:  # GGML_LOG_LEVEL_ERROR
        _LOG_TAIL.append(text.decode("utf-8", errors="replace").strip())


_BACKEND_LOCK = threading.Lock()
_backend_ready = False


def _init_backend() -> None:
    global _backend_ready
    with _BACKEND_LOCK:
        if not _backend_ready:
            llama_cpp.llama_log_set(_on_native_log, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _backend_ready = True


def _native_reason() -> str:
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


class LlamaCppRuntime:
    """A Runtime backed by one llama.cpp model and context. Not thread-safe: one caller at a time."""

    def __init__(self, settings: LlamaSettings) -> None:
        self.settings = settings
        path = Path(settings.model_path)
        gguf = read_gguf(path)
        _init_backend()
        self._model = None
        self._ctx = None
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = settings.gpu_layers
        _LOG_TAIL.clear()
        self._model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), model_params)
        if not self._model:
            raise ModelFileError(f"llama.cpp could not load model file {path}{_native_reason()}")
        try:
            self._vocab = llama_cpp.llama_model_get_vocab(self._model)
            self.n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
            n_ctx_train = llama_cpp.llama_model_n_ctx_train(self._model)
            threads = settings.threads or default_threads()
            context_params = llama_cpp.llama_context_default_params()
            context_params.n_ctx = max(256, min(settings.context_size, n_ctx_train))
            context_params.n_batch = settings.batch_size
            context_params.n_ubatch = settings.batch_size
            context_params.n_threads = threads
            context_params.n_threads_batch = threads
            context_params.n_seq_max = 1
            self._ctx = llama_cpp.llama_init_from_model(self._model, context_params)
            if not self._ctx:
                raise ModelError(f"llama.cpp could not create a context for {path}{_native_reason()}")
            self.n_ctx = llama_cpp.llama_n_ctx(self._ctx)
            self._memory = llama_cpp.llama_get_memory(self._ctx)
            self.template = ChatTemplate.choose(
                settings.chat_template_override,
                gguf.chat_template,
                model_name=gguf.name,
                bos_token=self._piece(llama_cpp.llama_vocab_bos(self._vocab), special=True),
                eos_token=self._piece(llama_cpp.llama_vocab_eos(self._vocab), special=True),
            )
        except BaseException:
            self.close()
            raise
        self._info = RuntimeInfo(model_id=path.stem, context_window=self.n_ctx, exact_tokens=True)
        self._store = self._open_store(path, context_params)
        self.prefix_loads = self.prefix_saves = 0  # disk cache hits and writes, for tests and benchmarks
        self.last_sampler_counts = (0, 0, 0)  # checks, shortlist masks, full masks in the last run
        self._cached: list[int] = []  # tokens whose keys/values are in the KV cache, in order
        self._candidates = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        self._candidates["id"] = np.arange(self.n_vocab, dtype=np.int32)
        quote = self.tokenize('"', special=False)
        self._quote = quote[-1]  # the token that closes a JSON string when a call must end

    # --- Runtime interface ------------------------------------------------------------------------
    @property
    def info(self) -> RuntimeInfo:
        return self._info

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text, special=False))

    def render(self, messages: Sequence[ChatMessage]) -> str:
        return self.template.render(messages, add_generation_prompt=True)

    def prompt_tokens(self, messages: Sequence[ChatMessage]) -> list[int]:
        return self.tokenize(self.render(messages), special=True)

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return len(self.prompt_tokens(messages))

    def generate_call(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        params: SamplingParams,
        *,
        heartbeat_tools: frozenset[str] = frozenset(),
        on_event: StreamCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelTurn:
        grammar = build_call_grammar(tools, heartbeat_tools)
        parser = CallStreamParser()
        end = JsonEnd()

        def on_text(delta: str) -> bool:
            if on_event is not None:
                for event in parser.feed(delta):
                    on_event(event)
            return end.feed(delta)

        names = [tool.name for tool in tools]
        return self.complete(
            messages, params, grammar=grammar.text, on_text=on_text, forced=lambda text: forced_text(text, names), cancel=cancel
        )

    def generate_text(self, messages: Sequence[ChatMessage], params: SamplingParams, *, cancel: CancelToken | None = None) -> str:
        return self.complete(messages, params, cancel=cancel).text.strip()

    def close(self) -> None:
        if self._store is not None:
            self._store.wait()  # finish a pending prefix file rather than leave a temp file behind
        if self._ctx:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            llama_cpp.llama_model_free(self._model)
            self._model = None

    def __enter__(self) -> "LlamaCppRuntime":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tokens -----------------------------------------------------------------------------------
    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """With ``special``, control-token text (``<|im_start|>``) becomes control tokens and BOS is
        added when the model wants one and the text does not already start with it."""
        self._check_open()
        raw = text.encode("utf-8")
        add_bos = special and not (self.template.bos_token and text.startswith(self.template.bos_token))
        capacity = len(raw) + 8
        buffer = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(self._vocab, raw, len(raw), buffer, capacity, add_bos, special)
        if count < 0:
            raise ModelError(f"Tokenizing {len(raw)} bytes failed")
        return list(buffer[:count])

    def _piece(self, token: int, *, special: bool = False) -> str:
        return self.piece_bytes(token, special=special).decode("utf-8", errors="replace")

    def piece_bytes(self, token: int, *, special: bool = False) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, 64, 0, special)
        if length < 0:
            buffer = ctypes.create_string_buffer(-length)
            length = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, -length, 0, special)
        return buffer.raw[:length]

    def grammar_accepts(self, grammar_text: str, text: str) -> bool:
        """Whether llama.cpp's grammar admits ``text`` as a complete sentence (for tests and tools)."""
        sampler = GrammarFirstSampler(self, SamplingParams(temperature=0), grammar_text)
        try:
            for token in self.tokenize(text, special=False):
                if not sampler.allows(token):
                    return False
                sampler.accept(token)
            return sampler.allows(llama_cpp.llama_vocab_eos(self._vocab))
        finally:
            sampler.close()

    # --- evaluation ---------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if not self._ctx:  # the vocab and context are freed: touching them would crash
            raise ModelError("The model runtime is closed")

    def _decode(self, tokens: Sequence[int]) -> None:
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        status = llama_cpp.llama_decode(self._ctx, llama_cpp.llama_batch_get_one(array, len(tokens)))
        if status != 0:
            self._forget_cache()
            raise ModelError(f"llama.cpp failed to evaluate the prompt (status {status}){_native_reason()}")
        self._cached.extend(tokens)

    def _forget_cache(self) -> None:
        llama_cpp.llama_memory_clear(self._memory, True)
        self._cached = []

    def evaluate_prompt(self, tokens: list[int], cancel: CancelToken | None, *, stable_prefix: int = 0) -> int:
        """Bring the KV cache to exactly ``tokens``; return how many tokens had to be evaluated.

        ``stable_prefix`` is how many leading tokens are likely to recur in later runs (the system
        message): their KV state is loaded from the disk cache when that saves evaluating them, and
        saved there when they had to be evaluated."""
        self._check_open()
        if len(tokens) >= self.n_ctx:
            raise ContextOverflowError(f"The prompt has {len(tokens)} tokens; the context holds {self.n_ctx}")
        # The last token is always evaluated (its logits are needed), so a prefix must end before it.
        prefix = stable_prefix if _MIN_STABLE_PREFIX <= stable_prefix < len(tokens) else 0
        keep = 0
        limit = min(len(self._cached), len(tokens) - 1)  # the last token is always re-evaluated for its logits
        while keep < limit and self._cached[keep] == tokens[keep]:
            keep += 1
        if keep < prefix and self._load_prefix(tokens[:prefix]):
            keep = prefix
        else:
            keep = min(keep, len(self._cached))  # a refused state file has emptied the cache
            if keep < len(self._cached):
                if llama_cpp.llama_memory_seq_rm(self._memory, 0, keep, -1):
                    del self._cached[keep:]
                else:  # some memory kinds (recurrent models) cannot drop a tail
                    self._forget_cache()
                    keep = 0
        # Batches restart at the prefix boundary whether or not there is a disk cache, so the
        # tokens after it are evaluated in the same batches either way: loading the prefix gives
        # bit-identical logits to evaluating it, and greedy output does not depend on the cache.
        bounds = [prefix] if keep < prefix else []
        batch = self.settings.batch_size
        start = keep
        for end in [*bounds, len(tokens)]:
            for chunk in range(start, end, batch):
                if cancel is not None and cancel.cancelled:
                    raise GenerationCancelled("Generation stopped")
                self._decode(tokens[chunk : min(chunk + batch, end)])
            if end == prefix:
                self._save_prefix(tokens[:prefix])
            start = end
        return len(tokens) - keep

    # --- the prefix cache on disk ---------------------------------------------------------------
    def _open_store(self, path: Path, context_params: llama_cpp.llama_context_params) -> KvStore | None:
        if self.settings.cache_dir is None:
            return None
        try:
            stat = path.resolve().stat()
            # Everything that changes the bytes or the meaning of a sequence state is in the key,
            # so a state is only ever loaded into a context that could have computed it.
            identity = {
                "model": str(path.resolve()),
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "n_ctx": self.n_ctx,
                "n_batch": self.settings.batch_size,  # batch splits change the last bits of the keys/values
                "llama_cpp": llama_cpp.__version__,
                "type_k": context_params.type_k,
                "type_v": context_params.type_v,
                "flash_attn": context_params.flash_attn_type,
                "gpu_layers": self.settings.gpu_layers,
            }
            return KvStore(self.settings.cache_dir, identity, max_entries=self.settings.cache_max_entries, max_bytes=self.settings.cache_max_bytes)
        except OSError:  # an unwritable cache folder only costs the speed-up
            return None

    def _load_prefix(self, prefix: list[int]) -> bool:
        """Replace the KV cache with the saved state of ``prefix``; False (cache untouched) on a miss."""
        if self._store is None:
            return False
        state = self._store.load(prefix)
        if state is None:
            return False
        self._forget_cache()
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        restored = llama_cpp.llama_state_seq_set_data(self._ctx, buffer, len(state), 0)
        # A state that llama.cpp accepted must also cover exactly the prefix's positions.
        if restored != len(state) or llama_cpp.llama_memory_seq_pos_min(self._memory, 0) != 0 or llama_cpp.llama_memory_seq_pos_max(self._memory, 0) != len(prefix) - 1:
            self._forget_cache()
            self._store.discard(prefix, f"llama.cpp did not restore it (read {restored} of {len(state)} bytes){_native_reason()}")
            return False
        self._cached = list(prefix)
        self.prefix_loads += 1
        return True

    def _save_prefix(self, prefix: list[int]) -> None:
        """Save the KV cache, which holds exactly ``prefix`` now, unless it is on disk already."""
        if self._store is None or self._store.has(prefix):
            return
        size = llama_cpp.llama_state_seq_get_size(self._ctx, 0)
        state = bytearray(size)
        written = llama_cpp.llama_state_seq_get_data(self._ctx, (ctypes.c_uint8 * size).from_buffer(state), size, 0)
        if written != size:
            return
        self._store.save_async(prefix, state)  # a memcpy here; the file is written in the background
        self.prefix_saves += 1

    def stable_prefix(self, messages: Sequence[ChatMessage], prompt: Sequence[int]) -> int:
        """How many tokens of ``prompt`` are the system message: the part that recurs across runs."""
        if not messages or messages[0].role != "system":
            return 0
        try:
            head = self.tokenize(self.template.render(messages[:1], add_generation_prompt=False), special=True)
        except ModelError:  # a template that wants more than a system message
            return 0
        # Tokenizing the message alone must give the prompt's own first tokens, else it is no prefix.
        return len(head) if len(head) < len(prompt) and list(prompt[: len(head)]) == head else 0

    def _forced_tokens(self, text: str, sampler: GrammarFirstSampler) -> list[int]:
        """Tokens of ``text`` that the grammar admits, in order, each already accepted."""
        accepted: list[int] = []
        for token in self.tokenize(text, special=False) if text else []:
            if not sampler.allows(token):
                break
            sampler.accept(token)
            accepted.append(token)
        return accepted

    def logits(self) -> np.ndarray:
        pointer = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def complete(
        self,
        messages: Sequence[ChatMessage],
        params: SamplingParams,
        *,
        grammar: str | None = None,
        on_text: Callable[[str], bool] = lambda delta: False,
        forced: Callable[[str], str] | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelTurn:
        """Generate after the rendered ``messages``; ``on_text`` gets each text delta and returns
        True to stop. With ``grammar`` (GBNF source), every token is one the grammar admits.
        ``forced`` maps the text so far to text that must come next; it is written in one batch."""
        started = time.perf_counter()
        prompt = self.prompt_tokens(messages)
        evaluated = self.evaluate_prompt(prompt, cancel, stable_prefix=self.stable_prefix(messages, prompt))
        sampler = GrammarFirstSampler(self, params, grammar)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pieces: list[str] = []
        generated = 0

        def emit(token: int) -> bool:
            delta = decoder.decode(self.piece_bytes(token))
            pieces.append(delta)
            return bool(delta) and on_text(delta)

        # A call cut off by max_tokens would be invalid JSON. Near the end of the budget the call is
        # closed instead: every string ends at once and the grammar supplies the remaining keys,
        # so the agent gets a valid (if terse) call it can run or report back as a failure.
        closing_at = params.max_tokens - min(_CLOSING_RESERVE, params.max_tokens // 3) if grammar else params.max_tokens
        limit = params.max_tokens + (_CLOSING_RESERVE if grammar else 0)
        try:
            while generated < limit and len(self._cached) < self.n_ctx:
                if cancel is not None and cancel.cancelled:
                    raise GenerationCancelled("Generation stopped")
                batch = self._forced_tokens(forced("".join(pieces)), sampler) if forced else []
                if batch:
                    generated += len(batch)
                    if any([emit(token) for token in batch]):
                        break
                    self._decode(batch)
                    continue
                if generated >= closing_at and sampler.allows(self._quote):
                    token = self._quote
                    sampler.accept(token)
                else:
                    token = sampler.sample(self.logits())
                generated += 1
                if token is None or llama_cpp.llama_vocab_is_eog(self._vocab, token) or emit(token):
                    break
                self._decode([token])
            pieces.append(decoder.decode(b"", final=True))
        finally:
            sampler.close()
        self.last_sampler_counts = (sampler.checks, sampler.shortlist_masks, sampler.full_masks)
        stats = GenerationStats(len(prompt), evaluated, generated, time.perf_counter() - started)
        return ModelTurn("".join(pieces), stats)


#: Tokens kept at the end of a call's budget to close it validly (see ``complete``).
_CLOSING_RESERVE = 48
#: Shorter system messages are evaluated in less time than a cache file takes to check.
_MIN_STABLE_PREFIX = 32


class GrammarFirstSampler:
    """Sample as if unconstrained, then ask the grammar about the one token drawn.

    Masking the whole vocabulary with the grammar at every step is what makes grammar sampling
    slow (each of ~49k token pieces is matched against the grammar stacks). A model prompted with
    the call format mostly picks a valid token anyway, so we check only that token. On a rejection
    (typically inside the call's fixed text, where the model would have split ``{"function"``
    differently) the grammar masks the ``_SHORTLIST`` most likely tokens and the full sampler chain
    draws among the valid ones; only when none of those is valid is the whole vocabulary masked.
    Every token produced is one the grammar admits, and the three paths draw from the same
    distribution up to the negligible mass outside the shortlist.
    """

    _SHORTLIST = 512

    def __init__(self, runtime: LlamaCppRuntime, params: SamplingParams, grammar_text: str | None) -> None:
        self._runtime = runtime
        self._chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        self._grammar = None
        seed = params.seed if params.seed is not None else llama_cpp.LLAMA_DEFAULT_SEED
        add = lambda sampler: llama_cpp.llama_sampler_chain_add(self._chain, sampler)  # noqa: E731
        add(llama_cpp.llama_sampler_init_penalties(runtime.n_vocab, 64, params.repeat_penalty, 0.0, 0.0))
        if params.temperature <= 0:
            add(llama_cpp.llama_sampler_init_greedy())
        else:
            add(llama_cpp.llama_sampler_init_top_k(params.top_k))
            add(llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
            add(llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
            add(llama_cpp.llama_sampler_init_temp(params.temperature))
            add(llama_cpp.llama_sampler_init_dist(seed))
        if grammar_text is not None:
            self._grammar = llama_cpp.llama_sampler_init_grammar(runtime._vocab, grammar_text.encode("utf-8"), b"root")
            if not self._grammar:
                self.close()
                raise ModelError(f"llama.cpp rejected the call grammar{_native_reason()}")
        self._single = llama_cpp.llama_token_data(0, 0.0, 0.0)
        self._single_array = llama_cpp.llama_token_data_array(ctypes.pointer(self._single), 1, -1, False)
        self._ids = np.arange(runtime.n_vocab, dtype=np.int32)
        self._shortlist = np.zeros(min(self._SHORTLIST, runtime.n_vocab), dtype=_TOKEN_DATA)
        self.checks = self.shortlist_masks = self.full_masks = 0

    @staticmethod
    def _array_of(candidates: np.ndarray) -> llama_cpp.llama_token_data_array:
        data = candidates.ctypes.data_as(llama_cpp.llama_token_data_p)
        return llama_cpp.llama_token_data_array(data, len(candidates), -1, False)

    def _full(self, logits: np.ndarray) -> np.ndarray:
        candidates = self._runtime._candidates
        candidates["id"] = self._ids  # the chain sorts in place, so ids are reset every step
        candidates["logit"] = logits
        candidates["p"] = 0.0
        return candidates

    def allows(self, token: int) -> bool:
        if self._grammar is None:
            return True
        self._single.id, self._single.logit, self._single.p = token, 0.0, 0.0
        self._single_array.size, self._single_array.selected = 1, -1
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(self._single_array))
        return bool(np.isfinite(self._single.logit))

    def _draw(self, candidates: np.ndarray, masked: bool) -> int | None:
        array = self._array_of(candidates)
        if masked:
            llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(array))
            if not np.isfinite(candidates["logit"]).any():
                return None
        llama_cpp.llama_sampler_apply(self._chain, ctypes.byref(array))
        return int(candidates["id"][array.selected])

    def sample(self, logits: np.ndarray) -> int | None:
        self.checks += 1
        token = self._draw(self._full(logits), masked=False)
        if token is not None and not self.allows(token):
            self.shortlist_masks += 1
            shortlist = self._shortlist
            top = np.argpartition(logits, -len(shortlist))[-len(shortlist):]
            shortlist["id"], shortlist["logit"], shortlist["p"] = top, logits[top], 0.0
            token = self._draw(shortlist, masked=True)
            if token is None:
                self.full_masks += 1
                token = self._draw(self._full(logits), masked=True)  # None: the grammar is complete
        if token is not None:
            self.accept(token)
        return token

    def accept(self, token: int) -> None:
        """Record ``token``; it must be one ``allows`` admits (the grammar aborts the process otherwise)."""
        llama_cpp.llama_sampler_accept(self._chain, token)
        if self._grammar is not None:
            llama_cpp.llama_sampler_accept(self._grammar, token)

    def close(self) -> None:
        for sampler in (self._chain, self._grammar):
            if sampler:
                llama_cpp.llama_sampler_free(sampler)
        self._chain = self._grammar = None


def stock_grammar_completion(settings: LlamaSettings, prompt: str, grammar: str, params: SamplingParams, max_tokens: int) -> tuple[str, int, float]:
    """llama-cpp-python's own grammar path (``Llama`` + ``LlamaGrammar``), for the decode benchmark.

    Returns (text, generated tokens, decode seconds). The prompt is evaluated by a first one-token
    call, so the timed call measures grammar-constrained decoding only.
    """
    _init_backend()
    model = llama_cpp.Llama(
        model_path=str(settings.model_path),
        n_ctx=min(settings.context_size, 4096),
        n_threads=settings.threads or default_threads(),
        n_gpu_layers=settings.gpu_layers,
        verbose=False,
    )
    llama_cpp.llama_log_set(_on_native_log, ctypes.c_void_p(0))  # Llama() installs its own logger
    try:
        compiled = llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
        options = dict(
            temperature=params.temperature, top_k=params.top_k, top_p=params.top_p, min_p=params.min_p,
            repeat_penalty=params.repeat_penalty, seed=params.seed if params.seed is not None else 0,
        )
        model.create_completion(prompt, max_tokens=1, **options)
        started = time.perf_counter()
        result = model.create_completion(prompt, max_tokens=max_tokens, grammar=compiled, **options)
        seconds = time.perf_counter() - started
        return result["choices"][0]["text"], int(result["usage"]["completion_tokens"]), seconds
    finally:
        model.close()
