"""A BERT encoder's forward pass in NumPy, mean-pooled: what sentence-transformers computes with torch.

The texts of a batch are packed end to end, one row per real token, so no work goes to padding:
the dense layers (the attention's projections, the feed-forward) run on all rows at once, and
attention runs per text over its own rows, which is what the padding mask achieves in torch. The
feed-forward runs in blocks of rows that stay in the CPU's cache through both products and the GELU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memdesk.core.base.errors import ModelFileError

#: Rows of the feed-forward computed together: 256 x 1,536 float32 is 1.5 MB, inside L2 on most CPUs.
FEED_FORWARD_ROWS = 256

# erf(x) as x * P(x^2) / Q(x^2) on [-4, 4] (Eigen's float erf; beyond 4, erf is 1 in float32).
# Its largest error is 4.2e-7 (tests/embedding check it against math.erf): BERT's GELU is the exact
# one, x * (1 + erf(x / sqrt 2)) / 2, and the tanh approximation would move the vectors.
_ERF_P = np.array(
    [-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05]
    + [-7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02],
    dtype=np.float32,
)
_ERF_Q = np.array(
    [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03]
    + [-1.42647390514189e-02],
    dtype=np.float32,
)


def erf(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, np.float32(-4.0), np.float32(4.0))
    square = x * x
    p = np.full_like(x, _ERF_P[0])
    for c in _ERF_P[1:]:
        p *= square
        p += c
    q = np.full_like(x, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q *= square
        q += c
    p *= x
    p /= q
    return p


def gelu_(x: np.ndarray) -> None:
    """The exact GELU, in place."""
    x *= np.float32(0.5) * (np.float32(1.0) + erf(x * np.float32(1 / np.sqrt(2))))


@dataclass(frozen=True)
class Layer:
    qkv: np.ndarray  # (hidden, 3 hidden): query, key and value projections side by side
    qkv_bias: np.ndarray
    out: np.ndarray  # nn.Linear weights are (out, in); these hold the transposed views
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


class BertEncoder:
    """The encoder of a Hugging Face ``BertModel`` checkpoint (absolute positions, one segment)."""

    def __init__(self, tensors: Mapping[str, np.ndarray], config: Mapping[str, object]) -> None:
        try:
            self._hidden = int(config["hidden_size"])  # type: ignore[call-overload]
            self._heads = int(config["num_attention_heads"])  # type: ignore[call-overload]
            layers = int(config["num_hidden_layers"])  # type: ignore[call-overload]
            self._inner = int(config["intermediate_size"])  # type: ignore[call-overload]
            vocabulary = int(config["vocab_size"])  # type: ignore[call-overload]
            positions = int(config["max_position_embeddings"])  # type: ignore[call-overload]
            self._eps = np.float32(config["layer_norm_eps"])  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError) as error:
            raise ModelFileError(f"The embedding model's config.json lacks a BERT setting: {error}") from error
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

        def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
            tensor = tensors.get(prefix + name)
            if tensor is None:
                raise ModelFileError(f"The embedding model has no tensor {prefix + name}")
            if tensor.shape != shape or tensor.dtype != np.float32:
                raise ModelFileError(
                    f"The embedding model's tensor {prefix + name} is {tensor.dtype} {tensor.shape},"
                    f" not float32 {shape}"
                )
            return tensor

        h = self._hidden
        self._words = get("embeddings.word_embeddings.weight", (vocabulary, h))
        self._positions = get("embeddings.position_embeddings.weight", (positions, h))
        self._segment = np.array(get("embeddings.token_type_embeddings.weight", (2, h))[0])
        self._norm = self._pair("embeddings.LayerNorm", get, h)
        self._layers = [self._layer(f"encoder.layer.{i}.", get) for i in range(layers)]

    @staticmethod
    def _pair(name: str, get, h: int) -> tuple[np.ndarray, np.ndarray]:
        return get(f"{name}.weight", (h,)), get(f"{name}.bias", (h,))

    def _layer(self, at: str, get) -> Layer:
        h = self._hidden
        inner = self._inner
        projections = [get(f"{at}attention.self.{part}.weight", (h, h)) for part in ("query", "key", "value")]
        return Layer(
            qkv=np.ascontiguousarray(np.concatenate(projections).T),
            qkv_bias=np.concatenate(
                [get(f"{at}attention.self.{part}.bias", (h,)) for part in ("query", "key", "value")]
            ),
            out=get(f"{at}attention.output.dense.weight", (h, h)).T,
            out_bias=get(f"{at}attention.output.dense.bias", (h,)),
            norm1=self._pair(f"{at}attention.output.LayerNorm", get, h),
            up=get(f"{at}intermediate.dense.weight", (inner, h)).T,
            up_bias=get(f"{at}intermediate.dense.bias", (inner,)),
            down=get(f"{at}output.dense.weight", (h, inner)).T,
            down_bias=get(f"{at}output.dense.bias", (h,)),
            norm2=self._pair(f"{at}output.LayerNorm", get, h),
        )

    @property
    def max_positions(self) -> int:
        return int(self._positions.shape[0])

    def mean_pooled(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """The mean of each token sequence's last hidden states, shape (len(sequences), hidden)."""
        lengths = np.array([len(ids) for ids in sequences], dtype=np.int64)
        if len(lengths) == 0:
            return np.zeros((0, self._hidden), dtype=np.float32)
        if lengths.min() < 1 or lengths.max() > self.max_positions:
            raise ValueError(f"token sequences must hold 1 to {self.max_positions} tokens")
        ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences])
        if ids.min() < 0 or ids.max() >= self._words.shape[0]:
            raise ValueError("a token id lies outside the model's vocabulary")
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        positions = np.arange(len(ids)) - np.repeat(starts, lengths)
        x = self._words[ids] + self._positions[positions]
        x += self._segment
        x = self._layer_norm(x, self._norm)
        bounds = [(int(s), int(s + n)) for s, n in zip(starts, lengths, strict=True)]
        for layer in self._layers:
            x = self._attention(x, layer, bounds)
            self._feed_forward(x, layer)
        return np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)

    def _layer_norm(self, x: np.ndarray, norm: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        x -= x.mean(axis=-1, keepdims=True)
        variance = np.mean(x * x, axis=-1, keepdims=True)
        variance += self._eps
        x /= np.sqrt(variance)
        x *= norm[0]
        x += norm[1]
        return x

    def _attention(self, x: np.ndarray, layer: Layer, bounds: list[tuple[int, int]]) -> np.ndarray:
        h, heads = self._hidden, self._heads
        size = h // heads
        qkv = x @ layer.qkv
        qkv += layer.qkv_bias
        qkv[:, :h] *= np.float32(1 / np.sqrt(size))
        # (3, heads, tokens, size) in one copy: a text's rows of one head are then a C-contiguous
        # matrix, which BLAS takes as it is (strided views made numpy multiply without BLAS).
        query, key, value = np.ascontiguousarray(qkv.reshape(len(x), 3, heads, size).transpose(1, 2, 0, 3))
        context = np.empty((heads, len(x), size), dtype=np.float32)
        for start, end in bounds:
            scores = query[:, start:end] @ key[:, start:end].transpose(0, 2, 1)
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            # The softmax's division is made on the (heads, n, size) result, not the (heads, n, n) weights.
            total = scores.sum(axis=-1, keepdims=True)
            np.matmul(scores, value[:, start:end], out=context[:, start:end])
            context[:, start:end] /= total
        context = context.transpose(1, 0, 2).reshape(len(x), h)
        out = context @ layer.out
        out += layer.out_bias
        out += x
        return self._layer_norm(out, layer.norm1)

    def _feed_forward(self, x: np.ndarray, layer: Layer) -> None:
        for start in range(0, len(x), FEED_FORWARD_ROWS):
            rows = x[start : start + FEED_FORWARD_ROWS]
            inner = rows @ layer.up
            inner += layer.up_bias
            gelu_(inner)
            out = inner @ layer.down
            out += layer.down_bias
            out += rows
            rows[...] = self._layer_norm(out, layer.norm2)
