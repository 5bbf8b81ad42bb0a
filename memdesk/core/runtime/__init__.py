"""Model runtimes: what turns a prompt into the model's next function call.

``base`` defines the interface the agent uses (a call is asked for with one frozen ``CallRequest``);
``scripted`` is a deterministic runtime for tests of the agent's rules; the ``llamacpp`` package runs
GGUF models locally (its ``native`` module is the only one that imports llama_cpp), and ``isolated``
runs it in a child process; ``openai_http`` talks to an OpenAI-compatible server.
"""
