"""The doctor's checks of the model: its file, llama.cpp's build against this CPU, and a short
decode. llama.cpp runs in a child process (it can crash on a CPU its build does not fit); the cpu
and decode checks read the same child's run, made once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import MemDeskError
from memdesk.core.base.settings_table import Settings
from memdesk.core.net.plain_http import plain_http_warning
from memdesk.core.runtime.base import sampling
from memdesk.diagnostics import cpu
from memdesk.diagnostics.child import ChildResult, run_in_child
from memdesk.diagnostics.crash import explain_exit, rebuild_portable
from memdesk.diagnostics.report import Check, human_size

DECODE_TOKENS = 16


class ModelChecks:
    """The model checks for one run of the doctor. ``model_path`` resolves the model file the
    settings choose; ``decode_probe`` (module, function) decodes in the child."""

    def __init__(
        self, settings: Settings, model_path: Callable[[], Path], decode_probe: tuple[str, str], timeout: float
    ) -> None:
        self._settings = settings
        self._model_path = model_path
        self._decode_probe = decode_probe
        self._timeout = timeout
        self._model_ok = True
        self._decode: ChildResult | None = None

    def _run_decode(self) -> ChildResult:
        if self._decode is None:
            module, function = self._decode_probe
            self._decode = run_in_child(module, function, str(self._model_path()), DECODE_TOKENS, timeout=self._timeout)
        return self._decode

    def check_model(self) -> Check:
        from memdesk.core.runtime.gguf import read_gguf

        if self._settings.runtime != "llamacpp":
            url = self._settings.openai_base_url
            return Check(
                "model",
                True,
                f"served by {url} ({self._settings.openai_model or 'its default model'}): no local file",
                warning=plain_http_warning(url) or "",
            )
        try:
            path = self._model_path()
            info = read_gguf(path)
        except MemDeskError as error:
            self._model_ok = False
            return Check("model", False, error.message, error.hint or "pick another model in Settings")
        context = f", trained context {info.context_length}" if info.context_length else ""
        return Check(
            "model",
            True,
            f"{path.name}: GGUF v{info.version}, {info.architecture}, {human_size(path.stat().st_size)}{context}",
        )

    def check_cpu(self) -> Check:
        if self._settings.runtime != "llamacpp":
            return Check("cpu", True, "the model runs on a server; llama.cpp is not used")
        result = self._run_decode()
        build = _stage(result, "build")
        if build is None:
            cause, fix = _failure(result, "loading llama.cpp")
            return Check("cpu", False, f"llama.cpp could not be loaded: {cause}", fix)
        features = cpu.build_features(build.get("system_info", ""))
        flags = (build.get("flags") or "").strip()
        kind = build.get("kind", "unknown")
        made = f"{kind} build ({flags})" if flags else "a build not made by scripts/llama-wheel (pip compiles natively)"
        uses = f"uses {' '.join(features) or 'no optional CPU features'}"
        found = cpu.cpu_flags()
        if found is None:
            return Check(
                "cpu",
                True,
                f"llama.cpp {build.get('version', '')}, {made}, {uses};"
                " this system does not list CPU features (the decode check tests them)",
            )
        model, cpu_flags = found
        missing = cpu.missing_features(features, cpu_flags)
        if missing:
            return Check(
                "cpu",
                False,
                f"llama.cpp {made} {uses}, but this CPU ({model}) lacks {' '.join(missing)}",
                rebuild_portable(),
            )
        unused = cpu.unused_features(features, cpu_flags)
        spare = f"; unused here: {' '.join(unused)}" if unused and kind == "portable" else ""
        return Check("cpu", True, f"llama.cpp {build.get('version', '')}, {made} {uses}; {model} has them all{spare}")

    def check_decode(self) -> Check:
        if self._settings.runtime != "llamacpp":
            return self._server_decode()
        if not self._model_ok:
            return Check(
                "decode",
                False,
                "not run: the model file failed its check (see model)",
                "pick another model in Settings",
            )
        result = self._run_decode()
        decoded = _stage(result, "decoded")
        if decoded is None:
            stage = "decoding" if _stage(result, "loaded") else "loading the model"
            cause, fix = _failure(
                result, stage, native=(_stage(result, "build") or {}).get("kind", "").startswith("native")
            )
            return Check("decode", False, f"the model process failed while {stage}: {cause}", fix)
        loaded = _stage(result, "loaded") or {}
        tokens, seconds = decoded["tokens"], max(decoded["seconds"], 1e-6)
        return Check(
            "decode",
            True,
            f"{self._model_path().name}: {tokens} tokens in {seconds:.2f} s ({tokens / seconds:.0f} tokens/s,"
            f" prompt included), loaded in {loaded.get('seconds', 0):.2f} s, in a child process",
        )

    def _server_decode(self) -> Check:
        from memdesk.app.runtimes import make_runtime
        from memdesk.core.runtime.base import ChatMessage, TextRequest

        started = time.perf_counter()
        try:
            runtime = make_runtime(self._settings)
            try:
                text = runtime.generate_text(
                    TextRequest(
                        [ChatMessage("user", "Say hello.")],
                        sampling(Settings(temperature=0.0, max_answer_tokens=DECODE_TOKENS)),
                    )
                )
            finally:
                runtime.close()
        except MemDeskError as error:
            return Check(
                "decode",
                False,
                f"the server at {self._settings.openai_base_url} failed: {error.message}",
                error.hint or "check that the server runs",
            )
        return Check(
            "decode", True, f"the server answered {len(text)} characters in {time.perf_counter() - started:.2f} s"
        )


def _stage(result: ChildResult, name: str) -> dict[str, Any] | None:
    return next((item[1] for item in result.items if isinstance(item, tuple) and item[0] == name), None)


def _failure(result: ChildResult, stage: str, *, native: bool = False) -> tuple[str, str]:
    if result.error is not None:
        kind, message, hint = result.error
        return message, hint or "pick another model in Settings"
    if result.timed_out:
        return (
            "it did not finish in time (the machine may be very slow or out of memory)",
            "close other programs and run the check again",
        )
    cause, fix = explain_exit(result.exitcode, native_build=native)
    said = result.last_stderr_line()
    return (f"{cause} (it said: {said})" if said else cause), fix
