"""What the benchmarks share (bench/common.py): their command line's start and their percentiles."""

from __future__ import annotations

import math
import random

import pytest

from bench import common, faults, latency, nothing_levers, recall, search


def test_a_percentile_is_the_nearest_ranked_value_itself():
    values = [float(v) for v in range(1, 21)]  # 1..20, shuffled below
    random.Random(1).shuffle(values)
    assert common.percentile(values, 0.5) == 11.0  # rank round(0.5 * 19) = 10 (of 0..19)
    assert common.percentile(values, 0.95) == 19.0 and common.percentile(values, 0.99) == 20.0
    assert common.percentile(values, 0.0) == 1.0 and common.percentile(values, 1.0) == 20.0
    assert common.percentile([7.0], 0.95) == 7.0
    assert math.isnan(common.percentile([], 0.95)) and common.percentile([], 0.99, empty=0.0) == 0.0


@pytest.mark.parametrize("module", [faults, latency, nothing_levers, recall, search])
def test_every_benchmark_names_itself_by_its_first_docstring_line_and_takes_json(module, monkeypatch):
    parsers = []
    real = common.bench_parser

    def seen(doc, **options):
        parsers.append(real(doc, **options))
        raise SystemExit(0)  # the parser is all this test wants

    monkeypatch.setattr(module, "bench_parser", seen)
    monkeypatch.setattr("sys.argv", ["bench", "--json"])
    with pytest.raises(SystemExit):
        module.main()
    assert parsers[0].description == module.__doc__.splitlines()[0]
    assert parsers[0].parse_args(["--json"]).json is True and parsers[0].parse_args([]).json is False


def test_synthetic_sentences_are_plain_words_and_the_same_for_the_same_seed():
    first = [common.sentence(random.Random(4)) for _ in range(3)]
    assert first == [common.sentence(random.Random(4)) for _ in range(3)]
    words = first[0].rstrip(".").lower().split()
    assert 8 <= len(words) <= 22 and set(words) <= set(common.WORDS)
