"""Gate 1: the generated weights module loads every tensor with the right shape and dtype."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim.config import import_module_from_path



@dataclass
class WeightsGateResult:
    status: str  # "PASS" | "FAIL"
    layers: int  # layers found in the loaded weights
    tensors: int  # tensors checked
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "layers": self.layers, "tensors": self.tensors, "problems": self.problems}


def expected_layer_shapes(config: Any) -> dict[str, tuple[int, ...]]:
    """Field name → shape of one layer, in the y = x @ W layout upstream uses."""
    emb, hidden = config.emb_dim, config.hidden_dim
    q_out = config.n_heads * config.head_dim
    kv_out = config.n_kv_heads * config.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        "attn_norm": (emb,),
        "wq": (emb, q_out),
        "wk": (emb, kv_out),
        "wv": (emb, kv_out),
        "wo": (q_out, emb),
        "ffn_norm": (emb,),
        "w_gate": (emb, hidden),
        "w_up": (emb, hidden),
        "w_down": (hidden, emb),
    }
    if getattr(config, "qkv_bias", False):
        shapes.update(bq=(q_out,), bk=(kv_out,), bv=(kv_out,))
    if getattr(config, "qk_norm", False):
        shapes.update(q_norm=(config.head_dim,), k_norm=(config.head_dim,))
    return shapes


def _bf16() -> np.dtype[Any]:
    # Imported here: ml_dtypes takes about a second to import and only this gate needs it.
    from ml_dtypes import bfloat16

    dtype: np.dtype[Any] = np.dtype(bfloat16)
    return dtype


def _check(where: str, value: Any, shape: tuple[int, ...], problems: list[str]) -> bool:
    """Record what is wrong with one tensor; True when it was an array to count."""
    if value is None:
        problems.append(f"{where}: missing (expected {shape} bfloat16)")
        return False
    if not isinstance(value, np.ndarray):
        problems.append(f"{where}: is {type(value).__name__}, expected a NumPy array {shape} bfloat16")
        return False
    if tuple(value.shape) != shape:
        problems.append(f"{where}: shape {tuple(value.shape)}, expected {shape}")
    if value.dtype != _bf16():
        problems.append(f"{where}: dtype {value.dtype}, expected bfloat16")
    return True


def run_weights_gate(weights_module: Path | str, model_dir: Path | str) -> WeightsGateResult:
    problems: list[str] = []
    try:
        module = import_module_from_path(weights_module)
        config = module.LlamaConfig()
        weights = module.load_weights(str(model_dir), config=config)
    except Exception as exc:  # a broken generated file is a finding, not a crash
        return WeightsGateResult("FAIL", 0, 0, [f"load_weights failed: {type(exc).__name__}: {exc}"])

    tensors = 0
    vocab, emb = config.vocab_size, config.emb_dim
    for name, shape in (("embed_table", (vocab, emb)), ("final_norm", (emb,)), ("lm_head", (vocab, emb))):
        tensors += _check(name, getattr(weights, name, None), shape, problems)

    layers = list(getattr(weights, "layers", None) or [])
    if len(layers) != config.n_layers:
        problems.append(f"layers: {len(layers)} loaded, expected n_layers={config.n_layers}")
    shapes = expected_layer_shapes(config)
    unexpected = [n for n in ("bq", "bk", "bv", "q_norm", "k_norm") if n not in shapes]
    for i, layer in enumerate(layers):
        for name, layer_shape in shapes.items():
            tensors += _check(f"layer {i} {name}", getattr(layer, name, None), layer_shape, problems)
        for name in unexpected:
            if getattr(layer, name, None) is not None:
                flag = "qkv_bias" if name.startswith("b") else "qk_norm"
                problems.append(f"layer {i} {name}: loaded, but config.{flag} is False")
    return WeightsGateResult("PASS" if not problems else "FAIL", len(layers), tensors, problems)
