"""Records returned by the bundled reference runner.

Same shape as upstream ``verify/runners/_records.py`` so code written against
either runner reads the same fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PrefillRecord:
    # One dict per layer. With lite_mode=False layers 0..n_layers-2 carry
    # "ffn_out" (seq, emb) float32; the last layer's raw output is not exposed
    # by transformers, so its dict is empty and final_hidden_normed stands in.
    layer_intermediates: list[dict[str, np.ndarray]]
    # Output of the model's final RMSNorm (seq, emb) float32; empty in lite mode.
    final_hidden_normed: np.ndarray
    # Logits at the last prompt position, float32 (vocab,).
    logits_at_pred: np.ndarray
    top1_token: int


@dataclass
class DecodeStepRecord:
    lm_head_logits: np.ndarray
    top1_token: int
