"""The local model: llama.cpp through llama-cpp-python's low-level API, one job per module.

* ``native``: the only module that imports ``llama_cpp`` (a test enforces it): the model, its
  context and samplers behind small Python objects;
* ``prefix_cache``: prompt evaluation that reuses the KV cache's longest common prefix, and the
  state of a stable prefix saved on disk across restarts (``kv_store``);
* ``sampler``: grammar-first sampling, so a constrained call costs little more than free text;
* ``generation``: the token loop (streaming, forced text, closing a call in time, cancellation);
* ``runtime``: ``LlamaCppRuntime``, the Runtime interface over these, and the model's set-up.
"""

from desktop.core.runtime.llamacpp.native import default_threads
from desktop.core.runtime.llamacpp.runtime import LlamaCppRuntime
from desktop.core.runtime.llamacpp_settings import LlamaSettings

__all__ = ["LlamaCppRuntime", "LlamaSettings", "default_threads"]
