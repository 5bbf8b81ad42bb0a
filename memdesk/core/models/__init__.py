"""Which models MemDesk can run and how it gets them, without Qt and without llama.cpp.

* ``catalog``: the curated list in ``memdesk/resources/catalog.json``, every figure with its source,
  and each entry's per-model behaviour (sampling, tool section style, step cap);
* ``library``: the models on this machine (bundled, downloaded, dropped-in files), which one is
  active, and turning a name into the settings that select it;
* ``download``: verified, resumable downloads from the Hugging Face hub in a child process;
* ``preflight``: the checks a model file must pass before it may replace the working model;
* ``servers``: Ollama and LM Studio on the loopback interface, looked for only when asked.
"""
