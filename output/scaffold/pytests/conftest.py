"""Fixtures for testing the golden generated files against transformers.

Each family's tiny spec (scaffold/testdata/<family>/spec.json) was rendered by
the Go tests into scaffold/testdata/golden/<family>/. Here a transformers model
with exactly that config is built, given random weights, saved as bf16
safetensors, and the generated Python is checked against it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Dict

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    LlamaConfig,
    MistralConfig,
    PretrainedConfig,
    Qwen2Config,
    Qwen3Config,
)

TESTDATA = Path(__file__).resolve().parent.parent / "testdata"
FAMILIES = ("llama", "mistral", "qwen2", "qwen3")


@dataclass(frozen=True)
class Generated:
    """One family's spec and its generated modules."""

    family: str
    spec: Dict[str, Any]
    weights: ModuleType
    helpers: ModuleType


def _import(path: Path, name: str) -> ModuleType:
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None, path
    module = importlib.util.module_from_spec(module_spec)
    # dataclasses resolves annotations through sys.modules, as for a normal import.
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def load_generated(family: str) -> Generated:
    spec = json.loads((TESTDATA / family / "spec.json").read_text())
    golden = TESTDATA / "golden" / family
    name = spec["name"]
    return Generated(
        family=family,
        spec=spec,
        weights=_import(golden / f"{name}_weights.py", f"golden_{family}_weights"),
        helpers=_import(golden / f"{name}_cpu_helpers.py", f"golden_{family}_cpu_helpers"),
    )


def hf_rope_parameters(rope_base: float, rope_scaling: Dict[str, Any] | None) -> Dict[str, Any]:
    """transformers 5 rope_parameters for our rope_base + rope_scaling."""
    if rope_scaling is None:
        return {"rope_type": "default", "rope_theta": rope_base}
    params = {k: v for k, v in rope_scaling.items() if k not in ("type", "rope_type")}
    return {"rope_type": rope_scaling.get("rope_type", rope_scaling.get("type")), "rope_theta": rope_base, **params}


def hf_config(spec: Dict[str, Any]) -> PretrainedConfig:
    """The transformers config whose model matches spec exactly."""
    scaling = spec.get("rope_scaling")
    if scaling is not None:
        scaling = {("rope_type" if k == "type" else k): v for k, v in scaling.items()}
    common = dict(
        vocab_size=spec["vocab_size"],
        hidden_size=spec["emb_dim"],
        intermediate_size=spec["hidden_dim"],
        num_hidden_layers=spec["n_layers"],
        num_attention_heads=spec["n_heads"],
        num_key_value_heads=spec["n_kv_heads"],
        rms_norm_eps=spec["rms_norm_eps"],
        tie_word_embeddings=spec["tie_word_embeddings"],
        max_position_embeddings=4096,
        rope_parameters=hf_rope_parameters(spec["rope_base"], scaling),
    )
    family = spec["family"]
    if family == "llama":
        return LlamaConfig(head_dim=spec["head_dim"], attention_bias=spec["qkv_bias"], **common)
    if family == "mistral":
        return MistralConfig(head_dim=spec["head_dim"], sliding_window=None, **common)
    if family == "qwen2":
        assert spec["qkv_bias"], "Qwen2 always has QKV bias"
        assert spec["emb_dim"] == spec["n_heads"] * spec["head_dim"], "Qwen2 derives head_dim"
        return Qwen2Config(use_sliding_window=False, **common)
    if family == "qwen3":
        return Qwen3Config(head_dim=spec["head_dim"], attention_bias=spec["qkv_bias"], **common)
    raise ValueError(f"unknown family {family}")


def save_tiny_model(spec: Dict[str, Any], path: Path, max_shard_size: str | None = None) -> Path:
    """Build the spec's model with random weights and save it as bf16 safetensors."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config(spec))
    with torch.no_grad():
        # Norm weights start at 1 and biases at 0; randomise everything so a
        # swapped or untransposed tensor cannot go unnoticed.
        for param in model.parameters():
            param.normal_(0.0, 0.5)
    model = model.to(torch.bfloat16)
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.save_pretrained(path, **kwargs)
    return path


@pytest.fixture(scope="session", autouse=True)
def _single_thread() -> None:
    # The test machine is shared; the tensors here are tiny anyway.
    torch.set_num_threads(1)


@pytest.fixture(scope="session", params=FAMILIES)
def generated(request: pytest.FixtureRequest) -> Generated:
    return load_generated(request.param)


def _families_with(flag: str) -> tuple[str, ...]:
    return tuple(f for f in FAMILIES if json.loads((TESTDATA / f / "spec.json").read_text())[flag])


# Helpers exist only for some specs; these fixtures run their tests only there,
# instead of skipping them everywhere else.
@pytest.fixture(scope="session", params=_families_with("attention_fallback"))
def with_attention(request: pytest.FixtureRequest) -> Generated:
    return load_generated(request.param)


@pytest.fixture(scope="session", params=_families_with("qk_norm"))
def with_qk_norm(request: pytest.FixtureRequest) -> Generated:
    return load_generated(request.param)


@pytest.fixture(scope="session")
def checkpoint(generated: Generated, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(generated.spec, tmp_path_factory.mktemp(f"{generated.family}_ckpt"))
