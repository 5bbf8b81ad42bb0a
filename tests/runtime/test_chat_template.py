"""Chat templates: the model's own, or the override; rendered in a sandbox; never guessed."""

from __future__ import annotations

import pytest

from memdesk.core.base.errors import ModelError
from memdesk.core.runtime.base import ChatMessage
from memdesk.core.runtime.chat_template import ChatTemplate
from memdesk.core.runtime.gguf import read_gguf

MESSAGES = [
    ChatMessage("system", "Be brief."),
    ChatMessage("user", "Hi"),
    ChatMessage("assistant", '{"function": "send_message"}'),
    ChatMessage("user", "Bye"),
]

SMOLLM_GOLDEN = (
    "<|im_start|>system\nBe brief.<|im_end|>\n"
    "<|im_start|>user\nHi<|im_end|>\n"
    '<|im_start|>assistant\n{"function": "send_message"}<|im_end|>\n'
    "<|im_start|>user\nBye<|im_end|>\n"
    "<|im_start|>assistant\n"
)


@pytest.fixture(scope="module")
def smollm_template(model_path) -> str:
    template = read_gguf(model_path).chat_template
    assert template is not None
    return template


def test_the_bundled_models_template_renders_chatml(smollm_template):
    rendered = ChatTemplate.choose(None, smollm_template, model_name="smollm").render(MESSAGES)
    assert rendered == SMOLLM_GOLDEN


def test_matches_llama_cpp_pythons_reference_renderer(smollm_template):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    reference = Jinja2ChatFormatter(smollm_template, eos_token="<|im_end|>", bos_token="<|im_start|>")
    response = reference(messages=[{"role": m.role, "content": m.content} for m in MESSAGES])
    assert (
        ChatTemplate(smollm_template, bos_token="<|im_start|>", eos_token="<|im_end|>").render(MESSAGES)
        == response.prompt
    )


def test_without_generation_prompt(smollm_template):
    rendered = ChatTemplate(smollm_template).render(MESSAGES, add_generation_prompt=False)
    assert rendered == SMOLLM_GOLDEN.removesuffix("<|im_start|>assistant\n")


def test_override_wins_over_the_models_template(smollm_template):
    override = (
        "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant] {% endif %}"
    )
    template = ChatTemplate.choose(override, smollm_template, model_name="smollm")
    assert template.origin == "override"
    assert template.render(MESSAGES[:2]) == "[system] Be brief.\n[user] Hi\n[assistant] "


def test_no_template_is_an_error_not_a_guess():
    with pytest.raises(ModelError, match="no chat template"):
        ChatTemplate.choose(None, None, model_name="mystery")
    with pytest.raises(ModelError):
        ChatTemplate.choose("  ", "", model_name="mystery")


def test_the_sandbox_blocks_python_internals():
    escape = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    with pytest.raises(ModelError, match="failed to render"):
        ChatTemplate(escape).render(MESSAGES)
    mutate = "{% set x = [] %}{{ x.append(1) }}"
    with pytest.raises(ModelError):
        ChatTemplate(mutate).render(MESSAGES)


def test_template_errors_are_model_errors():
    with pytest.raises(ModelError, match="does not parse"):
        ChatTemplate("{% for %}")
    raising = "{{ raise_exception('roles must alternate') }}"
    with pytest.raises(ModelError, match="roles must alternate"):
        ChatTemplate(raising).render(MESSAGES)
