"""Record types, laid out like upstream verify/runners/_records.py (test stand-in)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PrefillRecord:
    layer_intermediates: list[dict[str, np.ndarray]]
    final_hidden_normed: np.ndarray
    logits_at_pred: np.ndarray
    top1_token: int


@dataclass
class DecodeStepRecord:
    lm_head_logits: np.ndarray
    top1_token: int
