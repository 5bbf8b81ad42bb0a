"""bench.latency's floor: each step's own measured speeds, so a load change during the run moves
the floor with it (a least-squares fit over the run mixed a quiet start with a busy end)."""

from __future__ import annotations

from types import SimpleNamespace

from bench.latency import step_speeds
from desktop.core.runtime.base import GenerationStats


def step(**stats):
    return SimpleNamespace(stats=GenerationStats(**stats))


def test_a_step_timed_by_the_runtime_gives_its_own_speeds():
    timed = step(prompt_tokens=2000, evaluated_tokens=100, generated_tokens=50, seconds=3.0, evaluation_seconds=1.0)
    assert step_speeds(timed, (9.0, 9.0)) == (0.01, 0.04)


def test_an_untimed_step_falls_back_to_the_fitted_speeds():
    untimed = step(prompt_tokens=2000, evaluated_tokens=100, generated_tokens=50, seconds=3.0)
    assert step_speeds(untimed, (0.02, 0.05)) == (0.02, 0.05)
