"""Fixed train/dev/test splits by a salted hash of an id: the same id always lands in the same
split, on any machine and in any order, so a model card's split can be reproduced exactly and no
held-back question leaks into training.  Each user (the reader's PubMedQA split, SproutRAG's
HotpotQA and QASPER splits) keeps its own salt: the splits are independent of one another."""

from __future__ import annotations

import hashlib
from typing import Sequence


def hash_split(key: str, salt: str, splits: Sequence[tuple[str, float]]) -> str:
    """The split name of ``key``: sha256 of ``salt:key`` mapped to [0, 1) and onto the cumulative
    fractions of ``splits`` (``[("train", .45), ("dev", .15), ("test", .40)]``); the last split
    takes any rounding remainder."""
    u = int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:12], 16) / float(16 ** 12)
    acc = 0.0
    for name, frac in splits:
        acc += frac
        if u < acc:
            return name
    return splits[-1][0]
