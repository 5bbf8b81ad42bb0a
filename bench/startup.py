"""Start-up time of the window: process start → window shown → Send enabled → model ready,
against a bare ``import PySide6.QtWidgets`` measured in the same run. Prints one JSON object with
--json; the machine's load average is beside the figures (other work slows them)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from memdesk.ui.startup.first_window import TIMING_PREFIX


def _bare_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import PySide6.QtWidgets"], check=True)
    return time.perf_counter() - started


def _app(home: str) -> dict[str, float]:
    env = {**os.environ, "MEMDESK_HOME": home, "HF_HUB_OFFLINE": "1"}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    started = time.perf_counter()
    process = subprocess.Popen(
        # The window as memdesk starts it, closed by the scripted driver once its model is loaded.
        [sys.executable, "-m", "testing.scripted_window", "--quit-when-ready", "--timing"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    marks: dict[str, float] = {}
    for line in process.stdout:
        if line.startswith(TIMING_PREFIX):
            _prefix, name, _inside = line.split()
            marks[name] = time.perf_counter() - started  # measured from process start, not from run()
    process.wait(timeout=600)
    return marks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as home:
        baseline = _bare_import()
        cold = _app(home)  # first start creates the store
        warm = _app(home)
    result = {
        "bare_pyside6_import_s": round(baseline, 3),
        "first_start_window_shown_s": round(cold.get("window_shown", -1), 3),
        "first_start_send_enabled_s": round(cold.get("send_enabled", -1), 3),
        "first_start_model_ready_s": round(cold.get("model_ready", -1), 3),
        "window_shown_s": round(warm.get("window_shown", -1), 3),
        "send_enabled_s": round(warm.get("send_enabled", -1), 3),
        "send_enabled_after_window_shown_s": round(warm.get("send_enabled", -1) - warm.get("window_shown", 0), 3),
        "model_ready_s": round(warm.get("model_ready", -1), 3),
        # Load slows the bare import and the app alike: the ratio holds better than the seconds.
        "window_shown_over_bare_import": round(warm.get("window_shown", -1) / baseline, 2),
        "model_ready_after_window_shown_s": round(warm.get("model_ready", -1) - warm.get("window_shown", 0), 3),
        "send_enabled_target_s": 0.5,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
