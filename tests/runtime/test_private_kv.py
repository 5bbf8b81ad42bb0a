"""A private chat's requests (``persist=False``) never leave a KV state on disk, with the real
bundled model, while the saved chat on the same runtime keeps its disk cache."""

from __future__ import annotations

import pytest

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import CallRequest, ChatMessage, TextRequest, sampling
from memdesk.core.runtime.llamacpp.kv_store import SUFFIX
from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
from memdesk.core.runtime.llamacpp.settings import LlamaSettings
from memdesk.core.runtime.private import PrivateRuntime
from tests.runtime.conftest import TOOLS

pytestmark = pytest.mark.model

GREEDY = sampling(Settings(temperature=0, max_answer_tokens=16))
SYSTEM = (
    "You are Sam, a friendly companion with long-term memory. You remember what the user tells you "
    "and answer briefly. Always reply with one JSON object that calls send_message."
)


def chat(user: str, system: str = SYSTEM) -> list[ChatMessage]:
    return [ChatMessage("system", system), ChatMessage("user", user)]


def files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*" + SUFFIX))} if folder.exists() else {}


def test_private_requests_save_no_state_but_still_load_one(model_path, tmp_path):
    folder = tmp_path / "kv"
    with LlamaCppRuntime(
        LlamaSettings.from_settings(Settings(context_size=512, threads=1), model_path, cache_dir=folder)
    ) as rt:
        rt.generate_call(CallRequest(chat("My secret is zanzibarquux"), TOOLS[:1], GREEDY, persist=False))
        rt.generate_text(TextRequest(chat("Summarize: zanzibarquux"), GREEDY, persist=False))
        rt.prefix_cache.wait()
        assert rt.prefix_saves == 0 and files(folder) == {}

        rt.prefix_cache.forget()  # the saved chat, from a cold context: its prefix goes to disk
        rt.generate_call(CallRequest(chat("Hi"), TOOLS[:1], GREEDY))
        rt.prefix_cache.wait()
        assert rt.prefix_saves == 1
        saved = files(folder)

        rt.prefix_cache.forget()  # a private request reads what is on disk, and writes nothing
        turn = rt.generate_call(CallRequest(chat("Another secret"), TOOLS[:1], GREEDY, persist=False))
        rt.prefix_cache.wait()
        assert rt.prefix_loads == 1 and turn.stats.evaluated_tokens < turn.stats.prompt_tokens
        assert rt.prefix_saves == 1 and files(folder) == saved


def test_the_apps_runtime_keeps_nothing_of_a_private_chat(memdesk_home):
    """Through make_runtime's child process, as the window and the terminal run it."""
    from memdesk.app.runtimes import make_runtime
    from memdesk.core.base.paths import Paths

    rt = make_runtime(Settings(context_size=512))
    folder = Paths.from_environment().kv_cache
    try:
        private = PrivateRuntime(rt)
        assert private.warm(chat("Hi")[:1]) == 0
        private.generate_call(CallRequest(chat("My secret is zanzibarquux"), TOOLS[:1], GREEDY))
        private.close()  # ending the private chat leaves the shared model running
        # Another system message, so its prefix is evaluated (not found in memory) and saved.
        rt.generate_call(CallRequest(chat("Hi", SYSTEM + " Be kind."), TOOLS[:1], GREEDY))
    finally:
        rt.close()  # waits for the child's pending cache file
    saved = files(folder)
    assert len(saved) == 1  # the saved chat's prefix only
    assert not any(b"zanzibarquux" in data for data in saved.values())
