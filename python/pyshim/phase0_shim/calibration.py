"""Gate 2's calibration facts: how well the model predicts a fixed English passage.

Entropy and top-1 probability of one next-token distribution cannot tell a
trained model from a random one (a random model with large weights is very
confident). Teacher-forced perplexity on plain English can: trained models
sit far below the vocabulary size, random ones at or above it. This module
only measures; Go computes the perplexity and decides.
"""

from __future__ import annotations

import math
from typing import Any

from phase0_shim.optypes import PassageFacts

# The one calibration passage: one plain sentence in our own words, 18 tokens
# for SmolLM2's 49k-token BPE (about as many for other large vocabularies).
# Every passage token is a position of a full forward through the model, and
# at 3B on a CPU without native bf16 each costs about 0.4-2 s, so the passage
# is as short as keeps the rule's margins: the sweep (`make calibrate`) puts
# trained models 80-140x under the limit and random ones 9x or more above it.
# Changing it changes every recorded perplexity: re-run `make calibrate` and
# re-pin run/orchestrator/testdata/calibration.json (README, "What gate 2 checks").
PASSAGE = "The sun rose over the quiet town, and the children walked to school with their books."


def _finite_or_none(x: float) -> float | None:
    # JSON has no NaN or Infinity; Go reads null as "not finite".
    return x if math.isfinite(x) else None


def passage_facts(model: Any, tokenizer: Any, passage: str = PASSAGE) -> PassageFacts:
    """Teacher-force ``passage`` through ``model`` (as loaded, e.g. bf16).

    Returns {passage, tokens (ids as the tokenizer encodes the passage, default
    special tokens), nll (per predicted token, natural log; null where not
    finite), logits_size}. Token i's NLL is -log p(tokens[i+1] | tokens[..i]),
    so there is one NLL fewer than tokens.
    """
    import torch

    ids = [int(t) for t in tokenizer.encode(passage)]
    if len(ids) < 2:
        raise ValueError(f"the calibration passage encodes to {len(ids)} token(s); at least 2 are needed")
    input_ids = torch.tensor([ids], dtype=torch.long)
    with torch.inference_mode():
        # No cache: the runner's KV cache from prefill/decode stays untouched.
        out = model(input_ids, use_cache=False, return_dict=True)
        # log-softmax in float32 over the model's own (bf16) logits.
        logits = out.logits[0, :-1].to(torch.float32)
        logprobs = torch.log_softmax(logits, dim=-1)
        targets = input_ids[0, 1:].unsqueeze(1)
        nll = (-logprobs.gather(1, targets).squeeze(1)).tolist()
    return {
        "passage": passage,
        "tokens": ids,
        "nll": [_finite_or_none(float(x)) for x in nll],
        "logits_size": int(out.logits.shape[-1]),
    }
