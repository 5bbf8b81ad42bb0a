"""The CPU's instruction-set features against the ones the llama.cpp build was compiled to use.

llama.cpp lists its features in ``llama_print_system_info`` ("AVX2 = 1 | ..."); the CPU's are in
/proc/cpuinfo on Linux. A feature the build uses but the CPU lacks means SIGILL on the first
decode. Other systems do not expose the flags as cheaply; there the decode check is the test.
"""

from __future__ import annotations

import re
from pathlib import Path

#: llama.cpp's feature names -> the flag /proc/cpuinfo shows for them (x86 "flags", Arm "Features").
CPUINFO_FLAG = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
    "NEON": "asimd",
    "ARM_FMA": "asimd",
    "FP16_VA": "asimdhp",
    "DOTPROD": "asimddp",
    "SVE": "sve",
    "MATMUL_INT8": "i8mm",
    "SME": "sme",
}

_ENABLED = re.compile(r"\b([A-Z][A-Z0-9_]*) = 1\b")


def build_features(system_info: str) -> list[str]:
    """The CPU features a build uses, from llama.cpp's system-info line (non-CPU entries dropped)."""
    return [name for name in _ENABLED.findall(system_info) if name in CPUINFO_FLAG]


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, frozenset[str]] | None:
    """(model name, flags) of this CPU, or None where /proc/cpuinfo does not exist."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    model, flags = "", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model or "unknown CPU", frozenset(flags)


def missing_features(features: list[str], flags: frozenset[str]) -> list[str]:
    return [name for name in features if CPUINFO_FLAG[name] not in flags]


def unused_features(features: list[str], flags: frozenset[str]) -> list[str]:
    """Features this CPU has that the build does not use (what a native build would add)."""
    used = {CPUINFO_FLAG[name] for name in features}
    return [name for name, flag in CPUINFO_FLAG.items() if flag in flags and flag not in used and name not in features]
