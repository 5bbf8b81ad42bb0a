"""Model runtimes: what turns a prompt into the model's next function call.

``base`` defines the interface the agent uses; ``scripted`` is a deterministic runtime for tests of
the agent's rules; ``llamacpp`` (the only module that imports llama_cpp) runs GGUF models locally;
``openai_http`` talks to an OpenAI-compatible server.
"""
