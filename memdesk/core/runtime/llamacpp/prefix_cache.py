"""The context's KV cache, reused across prompts and across restarts.

In memory: the tokens whose keys and values the context holds are remembered, and a new prompt only
evaluates what follows the longest common prefix (the agent orders prompts stable-first, so that is
usually just the newest messages). On disk (``kv_store.KvStore``): the state of a *stable prefix*
(the system message, or what ``warm`` was given) is saved once evaluated and loaded instead of
evaluated when a fresh context meets a prompt that starts with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from memdesk.core.base.errors import ContextOverflowError, GenerationCancelled, ModelError
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.llamacpp.kv_store import KvStore
from memdesk.core.runtime.llamacpp.native import NativeContext

#: Shorter prefixes are evaluated in less time than a cache file takes to check.
MIN_STABLE_PREFIX = 32
#: Largest state ``kept`` copies in memory (the bundled model's full 8k context is ~190 MB).
KEPT_MAX_BYTES = 512 << 20


class PrefixCache:
    def __init__(self, context: NativeContext, store: KvStore | None, *, batch_size: int) -> None:
        self._context = context
        self.store = store
        self._batch = batch_size
        self.tokens: list[int] = []  # what the KV cache holds, in order
        self.loads = self.saves = 0  # disk cache hits and writes, for tests and benchmarks

    @property
    def room(self) -> int:
        """Positions left in the context."""
        return self._context.n_ctx - len(self.tokens)

    def evaluate(
        self, tokens: Sequence[int], cancel: CancelToken | None, *, stable_prefix: int = 0, persist: bool = True
    ) -> int:
        """Bring the cache to exactly ``tokens``; return how many had to be evaluated.

        ``stable_prefix`` is how many leading tokens are likely to recur in later runs: their
        state is loaded from disk when that saves evaluating them, and saved there when they had to
        be evaluated, unless ``persist`` is False (a private chat's prompt must never reach the
        disk, not even its memory section). The last token is always evaluated (its logits are needed)."""
        self._check_open()
        if len(tokens) >= self._context.n_ctx:
            raise ContextOverflowError(f"The prompt has {len(tokens)} tokens; the context holds {self._context.n_ctx}")
        prefix = stable_prefix if MIN_STABLE_PREFIX <= stable_prefix < len(tokens) else 0
        keep = self._reuse(tokens, limit=len(tokens) - 1, prefix=prefix)
        self._fill(tokens, keep, prefix, cancel, persist=persist)
        return len(tokens) - keep

    def warm(self, prefix: Sequence[int], cancel: CancelToken | None) -> int:
        """Bring the cache to exactly ``prefix`` and have its state on disk; return how many
        tokens had to be evaluated (0 when the cache or the disk held it already)."""
        self._check_open()
        if len(prefix) >= self._context.n_ctx:
            raise ContextOverflowError(f"The prompt has {len(prefix)} tokens; the context holds {self._context.n_ctx}")
        if len(prefix) < MIN_STABLE_PREFIX:
            return 0  # cheaper to evaluate with the first prompt than to keep on disk
        prefix = list(prefix)
        if self.tokens[: len(prefix)] == prefix:  # in memory already (perhaps with a conversation after it)
            if len(self.tokens) == len(prefix):
                self._save(prefix)  # so that a restart finds it too
            return 0
        keep = self._reuse(prefix, limit=len(prefix), prefix=len(prefix))
        self._fill(prefix, keep, len(prefix), cancel)
        return len(prefix) - keep

    @contextmanager
    def kept(self, max_bytes: int = KEPT_MAX_BYTES) -> Iterator[None]:
        """Run a generation with a prompt of its own (a plain-text answer, a summary) and bring the
        cache back to what it held before: a copy of the sequence's state each way, far cheaper
        than evaluating the conversation again at the next call (seconds per thousand tokens on
        a slow CPU). A state above ``max_bytes`` (a large model's long context) is not copied."""
        tokens = list(self.tokens)
        state = self._context.state(max_bytes) if len(tokens) >= MIN_STABLE_PREFIX and self._context.is_open else None
        try:
            yield
        finally:
            if state is not None and self._context.is_open and self.tokens != tokens:
                refused = self._context.restore(state, len(tokens))
                self.tokens = tokens if refused is None else []

    def extend(self, tokens: Sequence[int]) -> None:
        """Evaluate generated ``tokens`` (one batch) after what the cache holds."""
        try:
            self._context.decode(tokens)
        except ModelError:
            self.forget()  # a failed batch leaves the cache in an unknown state
            raise
        self.tokens.extend(tokens)

    def forget(self) -> None:
        self._context.clear()
        self.tokens = []

    def wait(self) -> None:
        """Finish writing a pending state file (rather than leave a temp file behind)."""
        if self.store is not None:
            self.store.wait()

    # --- steps ---------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if not self._context.is_open:  # the context is freed: touching it would crash
            raise ModelError("The model runtime is closed")

    def _reuse(self, tokens: Sequence[int], *, limit: int, prefix: int) -> int:
        """Keep the longest cached prefix of ``tokens`` (at most ``limit``), or load ``tokens[:prefix]``
        from disk when that keeps more; drop the rest. Returns how many tokens are kept."""
        keep = 0
        limit = min(len(self.tokens), limit)
        while keep < limit and self.tokens[keep] == tokens[keep]:
            keep += 1
        if keep < prefix and self._load(list(tokens[:prefix])):
            return prefix
        keep = min(keep, len(self.tokens))  # a refused state file has emptied the cache
        if keep < len(self.tokens):
            if self._context.truncate(keep):
                del self.tokens[keep:]
            else:  # some memory kinds (recurrent models) cannot drop a tail
                self.forget()
                keep = 0
        return keep

    def _fill(
        self, tokens: Sequence[int], keep: int, prefix: int, cancel: CancelToken | None, *, persist: bool = True
    ) -> None:
        """Evaluate ``tokens[keep:]`` in batches, saving the state at ``prefix`` when it is reached.

        Batches restart at the prefix boundary whether or not there is a disk cache, so the tokens
        after it are evaluated in the same batches either way: loading the prefix gives
        bit-identical logits to evaluating it, and greedy output does not depend on the cache."""
        bounds = [prefix] if keep < prefix < len(tokens) else []
        start = keep
        for end in [*bounds, len(tokens)]:
            for chunk in range(start, end, self._batch):
                if cancel is not None and cancel.cancelled:
                    raise GenerationCancelled("Generation stopped")
                self.extend(tokens[chunk : min(chunk + self._batch, end)])
            if end == prefix and persist:
                self._save(list(tokens[:prefix]))
            start = end

    def _load(self, prefix: list[int]) -> bool:
        """Replace the cache with the saved state of ``prefix``; False (cache untouched) on a miss."""
        if self.store is None:
            return False
        state = self.store.load(prefix)
        if state is None:
            return False
        refused = self._context.restore(state, len(prefix))
        if refused is not None:
            self.tokens = []
            self.store.discard(prefix, refused)
            return False
        self.tokens = list(prefix)
        self.loads += 1
        return True

    def _save(self, prefix: list[int]) -> None:
        """Save the cache, which holds exactly ``prefix`` now, unless it is on disk already."""
        if self.store is None or self.store.has(prefix):
            return
        state = self._context.state()
        if state is None:
            return
        self.store.save_async(prefix, state)  # a memcpy here; the file is written in the background
        self.saves += 1
