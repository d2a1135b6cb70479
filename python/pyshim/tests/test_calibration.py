"""Gate 2's calibration facts: the passage's token NLLs through the loaded model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from helpers import baseline_args
from phase0_shim import ops
from phase0_shim.calibration import PASSAGE, passage_facts
from phase0_testmodels import VOCAB_SIZE
from test_ops import go_config


def load(model_dir: Path) -> tuple[torch.nn.Module, object]:
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.bfloat16).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def perplexity(nll: list[float | None]) -> float:
    values = [x for x in nll if x is not None]
    assert len(values) == len(nll)
    return math.exp(sum(values) / len(values))


def test_passage_is_one_plain_english_sentence() -> None:
    words = PASSAGE.split()
    assert 12 <= len(words) <= 20
    assert PASSAGE.count(".") == 1
    assert PASSAGE.isascii() and PASSAGE.endswith(".")


def test_nll_is_teacher_forced_cross_entropy(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model, tok = load(tiny_model("qwen2"))
    facts = passage_facts(model, tok)
    ids = tok.encode(PASSAGE)  # type: ignore[attr-defined]
    assert facts["passage"] == PASSAGE
    assert facts["tokens"] == ids and ids[0] == tok.bos_token_id  # type: ignore[attr-defined]
    assert facts["logits_size"] == VOCAB_SIZE
    assert len(facts["nll"]) == len(ids) - 1
    with torch.no_grad():
        x = torch.tensor([ids])
        expected = torch.nn.functional.cross_entropy(
            model(x).logits[0, :-1].float(), x[0, 1:], reduction="none"
        ).tolist()
    assert facts["nll"] == expected


def test_trained_tiny_models_are_sane_and_random_ones_are_not(tiny_model, family: str) -> None:  # type: ignore[no-untyped-def]
    trained = perplexity(passage_facts(*load(tiny_model(family)))["nll"])
    random = perplexity(passage_facts(*load(tiny_model(family, trained=False)))["nll"])
    # Gate 2's default limit is V/10 (decided in Go); these are the facts it rests on.
    assert trained < VOCAB_SIZE / 10 < random


def test_nan_weights_give_null_nll(tiny_model) -> None:  # type: ignore[no-untyped-def]
    facts = passage_facts(*load(tiny_model("llama", nan_in="model.norm.weight")))
    assert json.loads(json.dumps(facts, allow_nan=False)) == facts
    assert facts["nll"] and all(x is None for x in facts["nll"])


def test_baseline_op_reports_the_passage(tiny_model, llms_dir: Path) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("qwen3")
    for llms in (None, str(llms_dir)):
        text, _ = ops.baseline(json.dumps(baseline_args(model_dir, llms_dir=llms, config=go_config(model_dir))))
        report = json.loads(text)
        cal = report["calibration"]
        assert cal["passage"] == PASSAGE
        assert len(cal["nll"]) == len(cal["tokens"]) - 1
        assert report["seconds_calibration"] > 0
        assert set(cal) == {"passage", "tokens", "nll", "logits_size"}  # facts only; Go decides
