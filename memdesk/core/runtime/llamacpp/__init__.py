"""The local model: llama.cpp through llama-cpp-python's low-level API, one job per module.

* ``native``: the only module that imports ``llama_cpp`` (a test enforces it): the model, its
  context and samplers behind small Python objects;
* ``prefix_cache``: prompt evaluation that reuses the KV cache's longest common prefix, and the
  state of a stable prefix saved on disk across restarts (``kv_store``; ``encrypted_kv_store``
  for an encrypted store's);
* ``sampler``: grammar-first sampling, so a constrained call costs little more than free text;
* ``generation``: the token loop (streaming, forced text, closing a call in time, cancellation);
  ``json_end`` finds where a call's JSON ends;
* ``runtime``: ``LlamaCppRuntime``, the Runtime interface over these, and the model's set-up;
* ``settings``: ``LlamaSettings``, which the app builds in its own process.

Importing the package itself loads nothing: the app's process builds the settings, and only the
model's child process imports ``runtime`` and, through it, the native library.
"""
