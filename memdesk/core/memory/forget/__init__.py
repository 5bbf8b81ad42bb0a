"""Forget a person or topic everywhere in an agent's memory (issue 19 §3), and retention."""

from memdesk.core.memory.forget.backups import SNAPSHOT_REASON, SnapshotStore
from memdesk.core.memory.forget.finder import KINDS, LABELS, Finder, Found
from memdesk.core.memory.forget.remove import PLACEHOLDER, Removed, remove, scrub
from memdesk.core.memory.forget.service import ForgetPreview, ForgetResult, Forgetting, KindPreview

__all__ = [
    "KINDS",
    "LABELS",
    "PLACEHOLDER",
    "SNAPSHOT_REASON",
    "Finder",
    "ForgetPreview",
    "ForgetResult",
    "Forgetting",
    "Found",
    "KindPreview",
    "Removed",
    "SnapshotStore",
    "remove",
    "scrub",
]
