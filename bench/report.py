"""How every benchmark prints its result: one JSON object with --json, else a readable summary."""

from __future__ import annotations

import json


def emit(result: dict, as_json: bool, *, details: str = "runs") -> None:
    """Print ``result``; the human form leaves out the per-run list named ``details``."""
    if as_json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        if key != details:
            print(f"{key}: {value}")
