"""The one token-counting rule shared by every tool, the agent's trace and the evaluation harness.

Rule: ``ceil(len(text) / 4)`` characters per token, on the exact text a caller receives (the
compact JSON a tool returns).  It is the usual approximation for English with BPE tokenizers
(OpenAI's guidance is about four characters per token); running a real tokenizer on every tool
result would cost more than the retrieval itself and would tie the figures to one model.
Images count as 85 + 170 per 512x512 tile (OpenAI's published rule for high-detail images).
"""

from __future__ import annotations

import math


def count_tokens(text: str) -> int:
    """Approximate tokens in ``text``: ``ceil(len(text) / 4)``."""
    return (len(text) + 3) // 4


def count_image_tokens(width: int, height: int) -> int:
    """Approximate tokens of an image sent to a vision model: 85 + 170 per 512-pixel tile."""
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)
