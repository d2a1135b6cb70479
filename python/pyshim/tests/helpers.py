"""Helpers shared by the test modules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from types import SimpleNamespace

from phase0_shim.config import runner_config

PROMPT = "The capital of France is"


def config_of(model_dir: Path) -> SimpleNamespace:
    """Config as Go would extract it (transformers-5 config.json layout)."""
    raw = json.loads((model_dir / "config.json").read_text())
    heads = raw["num_attention_heads"]
    return runner_config(
        {
            "n_layers": raw["num_hidden_layers"],
            "emb_dim": raw["hidden_size"],
            "n_heads": heads,
            "n_kv_heads": raw["num_key_value_heads"],
            "head_dim": raw.get("head_dim") or raw["hidden_size"] // heads,
            "hidden_dim": raw["intermediate_size"],
            "vocab_size": raw["vocab_size"],
            "rope_base": raw["rope_parameters"]["rope_theta"],
            "rms_norm_eps": raw["rms_norm_eps"],
            "tie_word_embeddings": raw["tie_word_embeddings"],
        }
    )


def prompt_ids(model_dir: Path) -> np.ndarray:
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    return np.asarray(tok.encode(PROMPT), dtype=np.int64)


def plain_model(model_dir: Path) -> torch.nn.Module:
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.bfloat16, use_safetensors=True)
    return model.eval()


def go_config(model_dir: Path) -> dict[str, Any]:
    c = config_of(model_dir)
    return {
        "n_layers": c.n_layers,
        "emb_dim": c.emb_dim,
        "n_heads": c.n_heads,
        "n_kv_heads": c.n_kv_heads,
        "head_dim": c.head_dim,
        "hidden_dim": c.hidden_dim,
        "vocab_size": c.vocab_size,
        "rope_base": c.rope_base,
        "rms_norm_eps": c.rms_norm_eps,
        "tie_word_embeddings": c.tie_word_embeddings,
        "qkv_bias": False,
        "qk_norm": False,
        "rope_scaling": None,
    }


def baseline_args(model_dir: str | Path, **given: Any) -> dict[str, Any]:
    """ops.baseline's arguments as Go sends them: the required keys with Go's
    values for a plain run, then ``given`` on top."""
    args: dict[str, Any] = {"model_dir": str(model_dir), "model_id": str(model_dir), "config": None, "max_seq": 64, "decode_n": 0}
    args.update(given)
    return args
