"""Decode speed: unconstrained vs llama-cpp-python's stock grammar path vs our grammar-first sampler.

    python -m bench.decode --json

All three use the bundled default model, the same prompt (a MemGPT-style system prompt with the
tool schemas, then one user message) and the same sampling settings. The prompt is evaluated once
before timing, so the figures are decoding speed. The stock grammar path masks the whole
vocabulary every step and is slow, so it generates only a few tokens.

The result names the llama.cpp build it ran (``build``: kind, CMake flags and llama.cpp's own CPU
feature list), so portable and native figures are never confused.
"""

from __future__ import annotations

import json
import sys
import time

from bench.common import bench_parser
from bench.report import emit
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.bundled import default_model_path
from memdesk.core.runtime.base import CallRequest, ChatMessage, SamplingParams, TextRequest, ToolSpec, sampling
from memdesk.core.runtime.grammar import build_call_grammar
from memdesk.core.runtime.llamacpp.native import build_info, default_threads
from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
from memdesk.core.runtime.llamacpp.settings import LlamaSettings

_HEARTBEAT = {"type": "boolean", "description": "Request an immediate heartbeat after the function runs."}
TOOLS = [
    ToolSpec(
        "send_message",
        "Send a message to the user.",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    ),
    ToolSpec(
        "core_memory_append",
        "Append text to a block of core memory.",
        {
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": ["persona", "human"]},
                "content": {"type": "string"},
                "request_heartbeat": _HEARTBEAT,
            },
            "required": ["label", "content", "request_heartbeat"],
        },
    ),
    ToolSpec(
        "archival_memory_search",
        "Search archival memory.",
        {
            "type": "object",
            "properties": {"query": {"type": "string"}, "page": {"type": "integer"}, "request_heartbeat": _HEARTBEAT},
            "required": ["query", "request_heartbeat"],
        },
    ),
    ToolSpec(
        "conversation_search",
        "Search the conversation history.",
        {
            "type": "object",
            "properties": {"query": {"type": "string"}, "page": {"type": "integer"}, "request_heartbeat": _HEARTBEAT},
            "required": ["query", "request_heartbeat"],
        },
    ),
    ToolSpec(
        "pause_heartbeats",
        "Pause timed heartbeats.",
        {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
    ),
]
HEARTBEAT_TOOLS = frozenset({"core_memory_append", "archival_memory_search", "conversation_search"})
SYSTEM = "\n".join(
    [
        "You are Sam, a friendly companion with long-term memory.",
        'Answer every turn with exactly one JSON object: {"function": NAME, "params": {"inner_thoughts": "...",'
        " ...arguments}}.",
        "Keep inner thoughts under 50 words. Functions:",
        *(json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in TOOLS),
    ]
)
MESSAGES = [
    ChatMessage("system", SYSTEM),
    ChatMessage("user", "Hi Sam! I'm Ann, I just got back from a hiking trip in the Alps. How are you?"),
]


def valid_call(text: str) -> bool:
    try:
        call = json.loads(text)
    except ValueError:
        return False
    names = {t.name: t for t in TOOLS}
    if not isinstance(call, dict) or list(call) != ["function", "params"] or call["function"] not in names:
        return False
    params = call["params"]
    spec = names[call["function"]]
    required = [name for name in spec.parameters["required"] if name != "request_heartbeat"]
    return (
        list(params)[0] == "inner_thoughts"
        and all(name in params for name in required)
        and (("request_heartbeat" in params) == (spec.name in HEARTBEAT_TOOLS))
    )


def stock_grammar_completion(
    settings: LlamaSettings, prompt: str, grammar: str, params: SamplingParams, max_tokens: int
) -> tuple[str, int, float]:
    """llama-cpp-python's own grammar path (``Llama`` + ``LlamaGrammar``): the baseline.

    Returns (text, generated tokens, decode seconds). The prompt is evaluated by a first one-token
    call, so the timed call measures grammar-constrained decoding only. (The benchmark, not the
    app, uses llama-cpp-python's high-level API, so it imports llama_cpp itself.)
    """
    import llama_cpp

    model = llama_cpp.Llama(
        model_path=str(settings.model_path),
        n_ctx=min(settings.context_size, 4096),
        n_threads=settings.threads or default_threads(),
        n_gpu_layers=settings.gpu_layers,
        verbose=False,
    )
    try:
        compiled = llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
        options = dict(
            temperature=params.temperature,
            top_k=params.top_k,
            top_p=params.top_p,
            min_p=params.min_p,
            repeat_penalty=params.repeat_penalty,
            seed=params.seed if params.seed is not None else 0,
        )
        model.create_completion(prompt, max_tokens=1, **options)
        started = time.perf_counter()
        result = model.create_completion(prompt, max_tokens=max_tokens, grammar=compiled, **options)
        seconds = time.perf_counter() - started
        return result["choices"][0]["text"], int(result["usage"]["completion_tokens"]), seconds
    finally:
        model.close()


def run(seeds: int, max_tokens: int, stock_tokens: int) -> dict[str, object]:
    settings = LlamaSettings.from_settings(Settings(context_size=2048), default_model_path())
    runtime = LlamaCppRuntime(settings)
    runtime.generate_text(TextRequest(MESSAGES, sampling(Settings(max_answer_tokens=1))))  # evaluate the prompt once
    free_tokens = free_seconds = ours_tokens = ours_seconds = 0.0
    runs = []
    counts = [0, 0, 0]
    for seed in range(seeds):
        params = sampling(Settings(seed=seed, max_answer_tokens=max_tokens))
        free = runtime.complete(MESSAGES, params)
        free_tokens += free.stats.generated_tokens
        free_seconds += free.stats.seconds
        ours = runtime.generate_call(CallRequest(MESSAGES, TOOLS, params, HEARTBEAT_TOOLS))
        ours_tokens += ours.stats.generated_tokens
        ours_seconds += ours.stats.seconds
        counts = [a + b for a, b in zip(counts, runtime.last_sampler_counts, strict=True)]
        runs.append(
            {
                "seed": seed,
                "unconstrained_valid": valid_call(free.text),
                "constrained_valid": valid_call(ours.text),
                "constrained_tokens": ours.stats.generated_tokens,
                "text": ours.text,
            }
        )
    prompt = runtime.render(MESSAGES)
    runtime.close()
    grammar = build_call_grammar(TOOLS, HEARTBEAT_TOOLS).text
    stock_text, stock_count, stock_seconds = stock_grammar_completion(
        settings, prompt, grammar, sampling(Settings(seed=0)), stock_tokens
    )
    unconstrained = free_tokens / free_seconds
    constrained = ours_tokens / ours_seconds
    build = build_info()
    return {
        "build": {"kind": build["kind"], "flags": build["flags"], "system_info": build["system_info"]},
        "model": settings.model_path.name if hasattr(settings.model_path, "name") else str(settings.model_path),
        "threads": default_threads(),
        "seeds": seeds,
        "unconstrained_tok_s": round(unconstrained, 2),
        "stock_grammar_tok_s": round(stock_count / stock_seconds, 2),
        "stock_grammar_tokens": stock_count,
        "stock_grammar_text": stock_text,
        "memdesk_constrained_tok_s": round(constrained, 2),
        "ratio": round(constrained / unconstrained, 3),
        "speedup_vs_stock": round(constrained / (stock_count / stock_seconds), 1),
        "all_constrained_valid": all(r["constrained_valid"] for r in runs),
        "unconstrained_valid_count": sum(r["unconstrained_valid"] for r in runs),
        "sampler": {"checks": counts[0], "shortlist_masks": counts[1], "full_vocabulary_masks": counts[2]},
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--stock-tokens", type=int, default=12)
    args = parser.parse_args(argv)
    result = run(args.seeds, args.max_tokens, args.stock_tokens)
    emit(result, args.json)
    return 0 if result["all_constrained_valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
