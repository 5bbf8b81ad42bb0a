"""The token loop: sample, stream, evaluate, until the call is complete, cut short or cancelled.

It runs after the prompt is in the KV cache (``PrefixCache.evaluate``) and appends each token it
keeps to that cache. Text goes out through ``on_text`` as UTF-8 is completed; ``forced`` lets the
caller write text the grammar leaves no choice about (a function's fixed keys) in one batch.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.runtime.base import CancelToken, SamplingParams
from memdesk.core.runtime.llamacpp.native import NativeContext, NativeModel
from memdesk.core.runtime.llamacpp.prefix_cache import PrefixCache
from memdesk.core.runtime.llamacpp.sampler import GrammarFirstSampler

#: Tokens kept at the end of a call's budget to close it validly (see ``generate``).
CLOSING_RESERVE = 48


@dataclass(frozen=True)
class Generated:
    text: str
    tokens: int
    sampler_counts: tuple[int, int, int]  # checks, shortlist masks, full masks (see GrammarFirstSampler)


def generate(
    model: NativeModel,
    context: NativeContext,
    cache: PrefixCache,
    params: SamplingParams,
    *,
    grammar: str | None = None,
    on_text: Callable[[str], bool] = lambda delta: False,
    forced: Callable[[str], str] | None = None,
    cancel: CancelToken | None = None,
    avoid: Sequence[str] = (),
) -> Generated:
    """Generate after what ``cache`` holds; ``on_text`` gets each text delta and returns True to
    stop. With ``grammar`` (GBNF source), every token is one the grammar admits. ``forced`` maps
    the text so far to text that must come next. ``avoid``: texts the answer must not copy."""
    runs = [model.tokenize(text, add_bos=False, special=False) for text in avoid if text]
    sampler = GrammarFirstSampler(model, params, grammar, avoid=runs)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    quote = model.tokenize('"', add_bos=False, special=False)[-1]  # closes a JSON string
    pieces: list[str] = []
    generated = 0

    def emit(token: int) -> bool:
        delta = decoder.decode(model.piece_bytes(token))
        pieces.append(delta)
        return bool(delta) and on_text(delta)

    def forced_tokens(text: str) -> list[int]:
        """Tokens of ``text`` that the grammar admits, in order, each already accepted."""
        accepted: list[int] = []
        for token in model.tokenize(text, add_bos=False, special=False) if text else []:
            if not sampler.allows(token):
                break
            sampler.accept(token)
            accepted.append(token)
        return accepted

    # A call cut off by max_tokens would be invalid JSON. Near the end of the budget the call is
    # closed instead: every string ends at once and the grammar supplies the remaining keys, so
    # the agent gets a valid (if terse) call it can run or report back as a failure.
    closing_at = params.max_tokens - min(CLOSING_RESERVE, params.max_tokens // 3) if grammar else params.max_tokens
    limit = params.max_tokens + (CLOSING_RESERVE if grammar else 0)
    token: int | None  # None: the grammar admits nothing more (the call is complete)
    try:
        while generated < limit and cache.room > 0:
            if cancel is not None and cancel.cancelled:
                raise GenerationCancelled("Generation stopped")
            batch = forced_tokens(forced("".join(pieces))) if forced else []
            if batch:
                generated += len(batch)
                if any([emit(token) for token in batch]):
                    break
                cache.extend(batch)
                continue
            if generated >= closing_at and sampler.allows(quote):
                token = quote
                sampler.accept(token)
            else:
                token = sampler.sample(context.logits())
            generated += 1
            if token is None or model.is_end(token) or emit(token):
                break
            cache.extend([token])
        pieces.append(decoder.decode(b"", final=True))
    finally:
        sampler.close()
    return Generated("".join(pieces), generated, sampler.counts)
