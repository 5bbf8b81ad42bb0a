"""``LlamaCppRuntime``: the Runtime interface over the pieces of this package.

Set-up checks the file (``gguf.read_gguf``, so a bad file is a ModelFileError naming it rather than
a native abort), loads it, creates the context and chooses the chat template; a failure at any
point frees what was made and raises its own error. A call renders the prompt, brings the
``PrefixCache`` to it and runs the ``generate`` loop, with a grammar built from the tools.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memdesk.core.base.errors import ModelError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import (
    CallRequest,
    CancelToken,
    ChatMessage,
    GenerationStats,
    ModelTurn,
    RuntimeInfo,
    SamplingParams,
    StreamCallback,
    TextRequest,
    sampling,
)
from memdesk.core.runtime.chat_template import ChatTemplate
from memdesk.core.runtime.gguf import read_gguf
from memdesk.core.runtime.grammar import Limits, build_call_grammar, forced_text
from memdesk.core.runtime.llamacpp.generation import generate
from memdesk.core.runtime.llamacpp.json_end import JsonEnd
from memdesk.core.runtime.llamacpp.kv_store import KvStore
from memdesk.core.runtime.llamacpp.native import NativeContext, NativeModel, default_threads
from memdesk.core.runtime.llamacpp.prefix_cache import PrefixCache
from memdesk.core.runtime.llamacpp.sampler import GrammarFirstSampler
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from memdesk.core.runtime.streaming import CallStreamParser


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    count, limit = 0, min(len(a), len(b))
    while count < limit and a[count] == b[count]:
        count += 1
    return count


class LlamaCppRuntime:
    """A Runtime backed by one llama.cpp model and context. Not thread-safe: one caller at a time."""

    def __init__(self, settings: LlamaSettings) -> None:
        self.settings = settings
        path = Path(settings.model_path)
        gguf = read_gguf(path)
        self._model: NativeModel | None = None
        self._context: NativeContext | None = None
        self._pieces: dict[int, bytes] = {}  # each token's text, for prompt_for_cache
        try:
            self._model = model = NativeModel(path, gpu_layers=settings.gpu_layers)
            n_ctx = max(256, min(settings.context_size, model.n_ctx_train))
            threads = settings.threads or default_threads()
            self._context = NativeContext(model, n_ctx=n_ctx, batch_size=settings.batch_size, threads=threads)
            self.template = ChatTemplate.choose(
                settings.chat_template_override,
                gguf.chat_template,
                model_name=gguf.name,
                bos_token=model.piece_bytes(model.bos, special=True).decode("utf-8", errors="replace"),
                eos_token=model.piece_bytes(model.eos, special=True).decode("utf-8", errors="replace"),
            )
        except BaseException:
            self._free()
            raise
        self.n_ctx = self._context.n_ctx
        self._info = RuntimeInfo(model_id=path.stem, context_window=self.n_ctx, exact_tokens=True)
        self.prefix_cache = PrefixCache(self._context, self._open_store(path), batch_size=settings.batch_size)
        self.last_sampler_counts = (0, 0, 0)  # checks, shortlist masks, full masks in the last run
        self._warmed: list[int] = []  # the last prefix warm() prepared: later prompts start with it

    # --- Runtime interface ------------------------------------------------------------------------
    @property
    def info(self) -> RuntimeInfo:
        return self._info

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text, special=False))

    def count_prompt(self, messages: Sequence[ChatMessage]) -> int:
        return len(self.prompt_tokens(messages))

    def generate_call(
        self, request: CallRequest, *, on_event: StreamCallback | None = None, cancel: CancelToken | None = None
    ) -> ModelTurn:
        limits = Limits() if request.thoughts_chars is None else Limits(thoughts_chars=request.thoughts_chars)
        grammar = build_call_grammar(request.tools, request.heartbeat_tools, limits)
        parser = CallStreamParser()
        end = JsonEnd()

        def on_text(delta: str) -> bool:
            if on_event is not None:
                for event in parser.feed(delta):
                    on_event(event)
            return end.feed(delta)

        return self.complete(
            request.messages,
            request.params,
            grammar=grammar.text,
            on_text=on_text,
            forced=lambda text: forced_text(text, request.tools, request.heartbeat_tools),
            cancel=cancel,
            persist=request.persist,
            avoid=request.avoid,
        )

    def generate_text(self, request: TextRequest, *, cancel: CancelToken | None = None) -> str:
        # Its prompt is its own (message_chatgpt, the summarizer): the conversation's cache comes back after.
        with self.prefix_cache.kept():
            return self.complete(request.messages, request.params, cancel=cancel, persist=request.persist).text.strip()

    def warm(self, messages: Sequence[ChatMessage], *, cancel: CancelToken | None = None) -> int:
        try:
            prefix = self.tokenize(self.template.render(messages, add_generation_prompt=False), special=True)
        except ModelError:  # a template that cannot render a prompt's beginning alone: nothing to warm
            return 0
        evaluated = self.prefix_cache.warm(prefix, cancel)
        self._warmed = prefix
        return evaluated

    def close(self) -> None:
        if getattr(self, "prefix_cache", None) is not None:
            self.prefix_cache.wait()
        self._free()

    def __enter__(self) -> LlamaCppRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- prompts and tokens -----------------------------------------------------------------------
    def render(self, messages: Sequence[ChatMessage]) -> str:
        return self.template.render(messages, add_generation_prompt=True)

    def prompt_tokens(self, messages: Sequence[ChatMessage]) -> list[int]:
        return self.tokenize(self.render(messages), special=True)

    def prompt_for_cache(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The prompt's tokens, keeping the tokens the KV cache holds wherever they spell the
        same text.

        A reply sampled under a grammar is often made of other tokens than its text gives when
        tokenized again (SmolLM2 samples ``.`` then ``",`` where the tokenizer reads ``."`` and
        ``,``): the next prompt's own tokens then part from the cache inside that reply, and the
        rest of the reply is evaluated again, ~45 tokens (~0.5 s) a turn. The model reads the same
        text either way. The spliced tokens are used only when they spell the prompt exactly."""
        text = self.render(messages)
        canonical = self.tokenize(text, special=True)
        held = self.prefix_cache.tokens
        common = _common_prefix(canonical, held)
        if common >= len(held) - 1 or common == len(canonical):
            return canonical  # the cache holds no more of this prompt than its own tokens reach
        spliced = self._splice(text.encode("utf-8"), canonical, held, common)
        if spliced is None or len(spliced) > max(len(canonical), self.n_ctx - 64):
            return canonical  # no splice, or one that would crowd out the answer (the budget counts canonical tokens)
        return spliced

    def _splice(self, text: bytes, canonical: list[int], held: list[int], common: int) -> list[int] | None:
        """``held``'s longest run that spells the start of ``text``, then ``text``'s remainder
        tokenized; None when that reuses no more than ``common`` tokens or does not spell ``text``."""
        model = self._open_model()
        # A BOS the tokenizer added is no text: it must lead both, then the text starts after it.
        added_bos = bool(canonical) and canonical[0] == model.bos and not text.startswith(self._piece(model.bos))
        if added_bos and (not held or held[0] != model.bos):
            return None
        kept, position = int(added_bos), 0
        while kept < len(held):
            piece = self._piece(held[kept])
            if not piece or not text.startswith(piece, position):
                break
            position += len(piece)
            kept += 1
        while kept > common:  # the remainder must start on a character boundary
            try:
                rest = text[position:].decode("utf-8")
                break
            except UnicodeDecodeError:
                kept -= 1
                position -= len(self._piece(held[kept]))
        if kept <= common:
            return None
        tail = model.tokenize(rest, add_bos=False, special=True) if rest else []
        if b"".join(self._piece(token) for token in tail) != text[position:]:
            return None  # e.g. a tokenizer that puts a space before a text's first word
        return [*held[:kept], *tail]

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self._open_model().piece_bytes(token, special=True)
        return piece

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """With ``special``, control-token text (``<|im_start|>``) becomes control tokens and BOS is
        added when the model wants one and the text does not already start with it."""
        model = self._open_model()
        add_bos = special and not (self.template.bos_token and text.startswith(self.template.bos_token))
        return model.tokenize(text, add_bos=add_bos, special=special)

    def stable_prefix(self, messages: Sequence[ChatMessage], prompt: Sequence[int]) -> int:
        """How many leading tokens of ``prompt`` recur across runs: the prefix ``warm`` prepared
        when the prompt starts with it, else the system message."""
        if self._warmed and len(self._warmed) < len(prompt) and list(prompt[: len(self._warmed)]) == self._warmed:
            return len(self._warmed)
        if not messages or messages[0].role != "system":
            return 0
        try:
            head = self.tokenize(self.template.render(messages[:1], add_generation_prompt=False), special=True)
        except ModelError:  # a template that wants more than a system message
            return 0
        # Tokenizing the message alone must give the prompt's own first tokens, else it is no prefix.
        return len(head) if len(head) < len(prompt) and list(prompt[: len(head)]) == head else 0

    def grammar_accepts(self, grammar_text: str, text: str) -> bool:
        """Whether llama.cpp's grammar admits ``text`` as a complete sentence (for tests and tools)."""
        model = self._open_model()
        sampler = GrammarFirstSampler(model, sampling(Settings(temperature=0)), grammar_text)
        try:
            for token in self.tokenize(text, special=False):
                if not sampler.allows(token):
                    return False
                sampler.accept(token)
            return sampler.allows(model.eos)
        finally:
            sampler.close()

    # --- evaluation -------------------------------------------------------------------------------
    @property
    def prefix_loads(self) -> int:
        return self.prefix_cache.loads

    @property
    def prefix_saves(self) -> int:
        return self.prefix_cache.saves

    def evaluate_prompt(self, tokens: list[int], cancel: CancelToken | None, *, stable_prefix: int = 0) -> int:
        """Bring the KV cache to exactly ``tokens``; return how many tokens had to be evaluated."""
        return self.prefix_cache.evaluate(tokens, cancel, stable_prefix=stable_prefix)

    def complete(
        self,
        messages: Sequence[ChatMessage],
        params: SamplingParams,
        *,
        grammar: str | None = None,
        on_text: Callable[[str], bool] = lambda delta: False,
        forced: Callable[[str], str] | None = None,
        cancel: CancelToken | None = None,
        persist: bool = True,
        avoid: Sequence[str] = (),
    ) -> ModelTurn:
        """Generate after the rendered ``messages`` (see ``generation.generate`` for the rest);
        ``persist`` False keeps the prompt's state off the disk."""
        started = time.perf_counter()
        prompt = self.prompt_for_cache(messages)
        evaluating = time.perf_counter()
        evaluated = self.prefix_cache.evaluate(
            prompt, cancel, stable_prefix=self.stable_prefix(messages, prompt), persist=persist
        )
        evaluation = time.perf_counter() - evaluating
        assert self._model is not None and self._context is not None  # evaluate checked that they are open
        result = generate(
            self._model,
            self._context,
            self.prefix_cache,
            params,
            grammar=grammar,
            on_text=on_text,
            forced=forced,
            cancel=cancel,
            avoid=avoid,
        )
        self.last_sampler_counts = result.sampler_counts
        return ModelTurn(
            result.text,
            GenerationStats(len(prompt), evaluated, result.tokens, time.perf_counter() - started, evaluation),
        )

    # --- set-up -----------------------------------------------------------------------------------
    def _open_model(self) -> NativeModel:
        if self._model is None or self._context is None:  # freed: touching the vocabulary would crash
            raise ModelError("The model runtime is closed")
        return self._model

    def _free(self) -> None:
        if self._context is not None:
            self._context.close()
            self._context = None
        if self._model is not None:
            self._model.close()
            self._model = None

    def _open_store(self, path: Path) -> KvStore | None:
        if self.settings.cache_dir is None:
            return None
        assert self._context is not None
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
                "gpu_layers": self.settings.gpu_layers,
                **self._context.state_identity,
            }
            limits = {"max_entries": self.settings.cache_max_entries, "max_bytes": self.settings.cache_max_bytes}
            if self.settings.cache_key is not None:
                from memdesk.core.runtime.llamacpp.encrypted_kv_store import EncryptedKvStore

                return EncryptedKvStore(self.settings.cache_dir, identity, self.settings.cache_key, **limits)
            return KvStore(self.settings.cache_dir, identity, **limits)
        except OSError:  # an unwritable cache folder only costs the speed-up
            return None
