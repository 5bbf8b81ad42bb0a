"""The shipped "nothing on that" judge on held-out BEAM chats.

tests/data/ranker/beam_held_out_judge.npz holds, for every question of BEAM chats 11-20 (never
trained on), the judge's input as the app computes it (support.py's score and the best hits'
features, no text) and whether memory can answer it (BEAM's abstention questions cannot).
Written by ``python -m bench.train_ranker --write memdesk/resources/ranker.json --judge-fixture``
(docs/ranker.md). support.py's score alone does not tell those abstentions apart (AUROC about
0.3); the judge must, without saying "nothing" for more than a tenth of the answerable questions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memdesk.core.retrieval import learned
from memdesk.core.retrieval.nothing_judge import JUDGE_FEATURES
from memdesk.core.retrieval.support import auroc

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ranker" / "beam_held_out_judge.npz"


def test_the_shipped_judge_tells_held_out_abstentions_from_answerable_questions():
    data = np.load(FIXTURE)
    assert tuple(data["features"].tolist()) == JUDGE_FEATURES
    scorer = learned.shipped()
    assert scorer is not None and scorer.judge is not None
    x, unanswerable = data["x"], data["unanswerable"].astype(bool)
    assert unanswerable.sum() >= 15 and (~unanswerable).sum() >= 150
    support = np.asarray([scorer.judge.support(row) for row in x])  # below 0: "nothing on that"
    judged = auroc(list(support[~unanswerable]), list(support[unanswerable]))
    alone = auroc(list(x[~unanswerable, 0]), list(x[unanswerable, 0]))
    assert judged is not None and alone is not None
    assert judged >= 0.80 and judged > alone + 0.2, (judged, alone)
    assert (support[~unanswerable] < 0).mean() <= 0.10
