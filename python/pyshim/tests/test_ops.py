"""ops.* end to end, the way Go calls them: JSON string in, JSON (and logits) out."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from transformers import AutoTokenizer

from conftest import FAMILY_DEFAULTS
from helpers import baseline_args, go_config
from phase0_shim import ops
from phase0_shim.tokens import is_placeholder
from phase0_testmodels import RESERVED, VOCAB_SIZE


def call_baseline(**args: Any) -> tuple[dict[str, Any], np.ndarray]:
    out = ops.baseline(json.dumps(baseline_args(**args)))
    assert isinstance(out, tuple) and len(out) == 2
    text, logits = out
    assert isinstance(text, str)
    return json.loads(text), logits


def test_baseline_bundled(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama")
    report, logits = call_baseline(
        model_dir=str(model_dir),
        model_id="example/Tiny-Llama",
        llms_dir=None,
        prompt_style=None,
        prompt=None,
        config=go_config(model_dir),
        weights_module=None,
        decode_n=4,
    )
    tok = AutoTokenizer.from_pretrained(str(model_dir))

    assert report["runner"] == "bundled"
    assert report["runner_path"].endswith("phase0_shim/hf_runner.py")
    assert report["prompt_style"] == "base"
    assert report["prompt"] == "The capital of France is"
    assert report["tokens"] == tok.encode("The capital of France is")
    assert report["vocab_size"] == VOCAB_SIZE
    assert report["tokenizer_size"] == len(tok) == VOCAB_SIZE
    assert report["special"] == {"bos": 1, "eos": [2], "pad": 3, "unk": 0}

    assert logits.dtype == np.float32 and logits.ndim == 1 and logits.flags.c_contiguous
    assert logits.shape == (VOCAB_SIZE,)
    assert np.isfinite(logits).all()
    assert report["top1_token"] == int(np.argmax(logits))

    top = report["top"]
    assert len(top) == 10
    assert [t["id"] for t in top] == np.argsort(-logits, kind="stable")[:10].tolist()
    assert top[0]["id"] == report["top1_token"]
    assert [t["logit"] for t in top] == sorted((t["logit"] for t in top), reverse=True)
    for t in top:
        assert t["text"] == tok.decode([t["id"]])
        assert t["special"] == (t["id"] in tok.all_special_ids)
        assert t["placeholder"] == (t["token"] in RESERVED)

    decode = report["decode"]
    assert len(decode["ids"]) == 4 and decode["ids"][0] == report["top1_token"]
    assert decode["text"] == tok.decode(decode["ids"])
    assert report["seconds_load"] > 0 and report["seconds_prefill"] > 0
    assert report["torch_version"] and report["transformers_version"].startswith("5.")


def test_baseline_verify_runner_and_instruct_prompt(tiny_model, llms_dir: Path) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("qwen3")
    bundled, bundled_logits = call_baseline(
        model_dir=str(model_dir), model_id="example/Tiny-Qwen3-Instruct", config=go_config(model_dir)
    )
    verify, verify_logits = call_baseline(
        model_dir=str(model_dir),
        model_id="example/Tiny-Qwen3-Instruct",
        llms_dir=str(llms_dir),
        config=go_config(model_dir),
    )
    assert verify["runner"] == "verify"
    assert verify["runner_path"] == str((llms_dir / "verify" / "runners" / "hf_runner.py").resolve())
    assert verify["prompt_style"] == bundled["prompt_style"] == "instruct"
    assert verify["prompt"] == "Name the colours of the rainbow."
    assert bundled["prompt"] == "What is the capital of France?"
    assert verify["decode"] is None

    # Same prompt through both runners: same numbers.
    same, same_logits = call_baseline(
        model_dir=str(model_dir), prompt=verify["prompt"], prompt_style="instruct", config=go_config(model_dir)
    )
    assert same["tokens"] == verify["tokens"]
    assert same_logits.tobytes() == verify_logits.tobytes()
    assert bundled_logits.shape == verify_logits.shape


def test_baseline_with_weights_module_config(tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("qwen2")
    module = weights_module(**FAMILY_DEFAULTS["qwen2"])
    report, logits = call_baseline(model_dir=str(model_dir), weights_module=str(module), prompt_style="base")
    assert report["vocab_size"] == VOCAB_SIZE
    assert logits.shape == (VOCAB_SIZE,)


def test_baseline_reports_nan_without_judging(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama", nan_in="model.layers.1.mlp.down_proj.weight")
    text, logits = ops.baseline(json.dumps(baseline_args(model_dir, config=go_config(model_dir))))
    report = json.loads(text)  # strict JSON: would fail on a bare NaN
    assert np.isnan(logits).any()
    assert "NaN" not in text
    assert all(t["logit"] is None for t in report["top"] if t["id"] in np.flatnonzero(np.isnan(logits)))


def test_baseline_rejects_prompt_longer_than_max_seq(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama")
    with pytest.raises(ValueError, match="max_seq 4"):
        ops.baseline(json.dumps(baseline_args(model_dir, config=go_config(model_dir), max_seq=4)))
    with pytest.raises(ValueError, match="missing argument"):
        ops.baseline(json.dumps({"config": {}}))


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("tokenizer.json", b""),
        ("tokenizer.json", b'{"version": '),
        ("tokenizer_config.json", b"{not json"),
        ("tokenizer.json", b'{"version": "\xff"}'),
    ],
)
def test_broken_tokenizer_file_is_named(tiny_model, tmp_path: Path, name: str, content: bytes) -> None:  # type: ignore[no-untyped-def]
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model("llama"), model_dir)
    (model_dir / name).write_bytes(content)
    for call in (
        lambda: ops.baseline(json.dumps(baseline_args(model_dir, config=go_config(model_dir)))),
    ):
        with pytest.raises(ValueError, match=re.escape(str(model_dir / name)) + " is not valid JSON"):
            call()


def test_args_and_results_are_strict(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama")
    with pytest.raises(ValueError, match="baseline: unknown argument key\\(s\\) 'max_sequence'"):
        ops.baseline(json.dumps(baseline_args(model_dir, max_sequence=64)))
    with pytest.raises(ValueError, match="environment: unknown argument key\\(s\\) 'verbose'"):
        ops.environment(json.dumps({"verbose": True}))
    with pytest.raises(ValueError, match="loader_facts: argument\\(s\\) 'weights_module' must not be empty"):
        ops.loader_facts(json.dumps({"weights_module": "", "model_dir": str(model_dir)}))


def test_environment() -> None:
    env = json.loads(ops.environment("{}"))
    assert env["transformers"].startswith("5.")
    assert env["torch"] and env["safetensors"] and env["version"].count(".") == 2
    assert env["executable"].endswith("python") or "python" in env["executable"]


@pytest.mark.parametrize(
    ("token", "placeholder"),
    [
        ("<|reserved_special_token_0|>", True),
        ("<|reserved_special_token_247|>", True),
        ("<unused12>", True),
        ("[unused3]", True),
        ("<extra_id_5>", True),
        ("<|extra_3|>", True),
        ("<|reserved_2|>", True),
        ("<|endoftext|>", False),
        ("<|eot_id|>", False),
        ("<s>", False),
        ("unused", False),
        ("Ġunused1", False),
        ("<unused>", False),
        (None, False),
    ],
)
def test_is_placeholder(token: str | None, placeholder: bool) -> None:
    assert is_placeholder(token) is placeholder
