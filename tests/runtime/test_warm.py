"""Warming a prompt's static beginning ahead of time (issue 9 item 4), on the real bundled model:
the first call then evaluates only what follows it, with the same greedy output, and the state is
on disk for the next start. Warming gives way to real work within one prompt batch."""

from __future__ import annotations

import pytest

from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.runtime.base import CancelToken, ChatMessage
from tests.runtime.test_kv_cache import SYSTEM, chat, run, runtime

pytestmark = pytest.mark.model

STATIC = [ChatMessage("system", SYSTEM)]


class CancelAfter(CancelToken):
    """Says "cancelled" from its ``checks``-th look on: a user message arriving mid-warm-up."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self.looks = 0
        self._checks = checks

    @property
    def cancelled(self) -> bool:
        self.looks += 1
        return self.looks >= self._checks


@pytest.fixture(scope="module")
def unwarmed(model_path):
    with runtime(model_path, None) as plain:
        return run(plain, chat("Hi, I'm Ann!"))


def test_the_first_call_after_warming_evaluates_only_what_follows(model_path, tmp_path, unwarmed):
    with runtime(model_path, tmp_path / "kv") as rt:
        evaluated = rt.warm(STATIC)
        assert evaluated > 32 and rt.prefix_saves == 1  # and saved for the next start
        turn = run(rt, chat("Hi, I'm Ann!"))
        assert turn.stats.evaluated_tokens == turn.stats.prompt_tokens - evaluated
        assert turn.text == unwarmed.text
        assert rt.warm(STATIC) == 0  # in memory already, the conversation after it kept
        assert run(rt, chat("Hi, I'm Ann!")).stats.evaluated_tokens == 1


def test_a_fresh_start_warms_from_disk(model_path, tmp_path, unwarmed):
    with runtime(model_path, tmp_path / "kv") as first:
        first.warm(STATIC)
    with runtime(model_path, tmp_path / "kv") as second:
        assert second.warm(STATIC) == 0 and second.prefix_loads == 1
        turn = run(second, chat("Hi, I'm Ann!"))
        assert turn.text == unwarmed.text and turn.stats.evaluated_tokens < turn.stats.prompt_tokens // 2


def test_a_cancelled_warm_up_stops_between_batches_and_its_work_is_kept(model_path, tmp_path, unwarmed):
    with runtime(model_path, tmp_path / "kv", batch_size=16) as small_batches:
        reference = run(small_batches, chat("Hi, I'm Ann!"))  # batches change the last bits: compare like with like
    with runtime(model_path, tmp_path / "kv2", batch_size=16) as rt:
        cancel = CancelAfter(3)
        with pytest.raises(GenerationCancelled):
            rt.warm(STATIC, cancel=cancel)
        assert len(rt.prefix_cache.tokens) == 2 * 16 and rt.prefix_saves == 0  # two batches, then it gave way
        turn = run(rt, chat("Hi, I'm Ann!"))
        assert turn.stats.evaluated_tokens == turn.stats.prompt_tokens - 2 * 16
        assert turn.text == reference.text
        assert rt.prefix_saves == 1  # the real call finished the prefix and saved it


def test_a_longer_prefix_warmed_after_the_static_one_is_kept_on_disk_beside_it(model_path, tmp_path):
    """The window warms the static prefix, then the memory section after it: a start with the same
    memory loads the longer state; after a memory edit the static state still loads."""
    memory = ChatMessage(
        "user", "### Memory\nhuman: Name: Ann. A nurse in Lyon.\npersona: I am Sam, a friendly companion."
    )
    with runtime(model_path, tmp_path / "kv") as first:
        first.warm(STATIC)
        section = first.warm([*STATIC, memory])
        assert section > 0 and first.prefix_saves == 2
    with runtime(model_path, tmp_path / "kv") as second:
        assert second.warm(STATIC) == 0 and second.warm([*STATIC, memory]) == 0 and second.prefix_loads == 2
        turn = run(second, [*STATIC, memory, ChatMessage("user", "Hi!")])
        assert turn.stats.evaluated_tokens < 16  # only the message and the assistant's header
    edited = ChatMessage("user", memory.content + "\nLikes hiking.")
    with runtime(model_path, tmp_path / "kv") as third:
        assert third.warm(STATIC) == 0 and third.prefix_loads == 1
        assert 0 < third.warm([*STATIC, edited]) <= section + 8


def test_a_short_beginning_is_not_warmed(model_path):
    with runtime(model_path, None) as rt:
        assert rt.warm([ChatMessage("system", "Be brief.")]) == 0  # cheaper to evaluate than to keep
        assert rt.prefix_cache.tokens == []


def test_the_apps_runtime_warms_in_its_child_process(memdesk_home):
    from memdesk.app.runtimes import make_runtime
    from memdesk.core.base.paths import Paths
    from memdesk.core.base.settings_table import Settings
    from memdesk.core.runtime.base import CallRequest
    from tests.runtime.conftest import TOOLS
    from tests.runtime.test_kv_cache import GREEDY, entries

    rt = make_runtime(Settings(context_size=512))  # returns while the child loads the model
    try:
        warmed = rt.warm(STATIC)
        assert warmed > 32
        turn = rt.generate_call(CallRequest(chat("Hi"), TOOLS[:1], GREEDY))
        assert turn.stats.evaluated_tokens == turn.stats.prompt_tokens - warmed
    finally:
        rt.close()
    assert len(entries(Paths.from_environment().kv_cache)) == 1
