"""Grammar-constrained sampling that costs little more than free sampling.

Masking the whole vocabulary with the grammar at every step is what makes grammar sampling slow
(each of ~49k token pieces is matched against the grammar stacks). A model prompted with the call
format mostly picks a valid token anyway, so ``GrammarFirstSampler`` draws as if unconstrained and
asks the grammar about that one token. On a rejection (typically inside the call's fixed text,
where the model would have split ``{"function"`` differently) the grammar masks the ``SHORTLIST``
most likely tokens and the sampler chain draws among the valid ones; only when none of those is
valid is the whole vocabulary masked. Every token produced is one the grammar admits, and the three
paths draw from the same distribution up to the negligible mass outside the shortlist.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memdesk.core.runtime.base import SamplingParams
from memdesk.core.runtime.llamacpp.native import TOKEN_DATA, NativeModel, NativeSampler

SHORTLIST = 512


class GrammarFirstSampler:
    """Draws tokens from logits; with ``grammar`` (GBNF source) only tokens the grammar admits.

    Counters ``checks``, ``shortlist_masks`` and ``full_masks`` say how often each path ran."""

    def __init__(
        self,
        model: NativeModel,
        params: SamplingParams,
        grammar: str | None = None,
        *,
        avoid: Sequence[Sequence[int]] = (),
    ) -> None:
        """``avoid``: token runs the answer must not copy (NativeSampler.chain)."""
        self._chain = NativeSampler.chain(params, model, avoid=avoid)
        try:
            self._grammar = NativeSampler.grammar(model, grammar) if grammar is not None else None
        except BaseException:
            self._chain.close()
            raise
        self._ids = np.arange(model.n_vocab, dtype=np.int32)
        self._candidates = np.zeros(model.n_vocab, dtype=TOKEN_DATA)
        self._shortlist = np.zeros(min(SHORTLIST, model.n_vocab), dtype=TOKEN_DATA)
        self.checks = self.shortlist_masks = self.full_masks = 0

    @property
    def counts(self) -> tuple[int, int, int]:
        return self.checks, self.shortlist_masks, self.full_masks

    def allows(self, token: int) -> bool:
        return self._grammar is None or self._grammar.admits(token)

    def sample(self, logits: np.ndarray) -> int | None:
        """The next token, already accepted; None when the grammar admits nothing more (complete)."""
        self.checks += 1
        token = self._draw(self._full(logits), masked=False)
        if token is not None and not self.allows(token):
            self.shortlist_masks += 1
            shortlist = self._shortlist
            top = np.argpartition(logits, -len(shortlist))[-len(shortlist) :]
            shortlist["id"], shortlist["logit"], shortlist["p"] = top, logits[top], 0.0
            token = self._draw(shortlist, masked=True)
            if token is None:
                self.full_masks += 1
                token = self._draw(self._full(logits), masked=True)
        if token is not None:
            self.accept(token)
        return token

    def accept(self, token: int) -> None:
        """Record ``token``; it must be one ``allows`` admits (the grammar aborts the process otherwise)."""
        self._chain.accept(token)
        if self._grammar is not None:
            self._grammar.accept(token)

    def close(self) -> None:
        self._chain.close()
        if self._grammar is not None:
            self._grammar.close()

    def _full(self, logits: np.ndarray) -> np.ndarray:
        candidates = self._candidates
        candidates["id"] = self._ids  # the chain sorts in place, so ids are reset every step
        candidates["logit"] = logits
        candidates["p"] = 0.0
        return candidates

    def _draw(self, candidates: np.ndarray, masked: bool) -> int | None:
        if masked:
            assert self._grammar is not None
            self._grammar.apply(candidates)
            if not np.isfinite(candidates["logit"]).any():
                return None
        selected = self._chain.apply(candidates)
        return int(candidates["id"][selected])
