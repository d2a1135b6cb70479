"""Quantized gate 3 facts of a deployed family's module (op
``quant_family_facts``): its numeric constants as Python evaluates them
(``EMBED_SCALE = float(np.sqrt(D))`` included), which layers its
``is_global_layer`` makes global, and its RoPE tables against transformers'
rotary embedding for the same positions: Gemma 3's local and global table
per layer, Phi-3's LongRoPE table below and past the original context.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim.opargs import op
from phase0_shim.optypes import QuantFamilyArgs, QuantFamilyFacts, QuantRopeTable
from phase0_shim.quant.discovery import import_module
from phase0_shim.quant.missing import describe

# Positions the Gemma tables are compared at: both sides of the sliding
# window and of the linear factor, and far out.
GEMMA_POSITIONS = (0, 1, 2, 7, 15, 16, 17, 63, 100, 255, 1000, 1023, 1024, 4095, 8191)


def _constants(module: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in vars(module).items():
        if name.isupper() and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def _text_config(reference_dir: str) -> Any:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(reference_dir, local_files_only=True)
    return config.get_text_config()


def _gemma(module: Any, reference_dir: str, n_layers: int) -> list[QuantRopeTable]:
    import torch
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding

    config = _text_config(reference_dir)
    rot = Gemma3RotaryEmbedding(config)
    dh = int(config.head_dim)
    positions = [p for p in GEMMA_POSITIONS if p < max(int(config.max_position_embeddings), 8192)]
    pos = torch.tensor([positions])
    x = torch.zeros(1, dtype=torch.float32)
    hf: dict[str, np.ndarray] = {}
    for kind in sorted(set(config.layer_types)):
        cos, sin = rot(x, pos, layer_type=kind)
        hf[kind] = np.concatenate([cos[0, :, : dh // 2].numpy(), sin[0, :, : dh // 2].numpy()], axis=1)
    zeros = np.zeros(dh, dtype=np.float32)
    out: list[QuantRopeTable] = []
    for k in range(n_layers):
        table = np.stack([np.asarray(module.rope_w_layer(p, k, zeros, zeros), dtype=np.float32)[:dh] for p in positions])
        kind = config.layer_types[k]
        other = [o for o in hf if o != kind]
        out.append(
            {
                "label": f"layer {k} ({kind})",
                "positions": positions,
                "max_abs_diff": float(np.abs(table - hf[kind]).max()),
                "other_max_abs_diff": float(np.abs(table - hf[other[0]]).max()) if other else -1.0,
            }
        )
    return out


def _phi(module: Any, reference_dir: str, source: str) -> list[QuantRopeTable]:
    import torch
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

    config = _text_config(reference_dir)
    rot = Phi3RotaryEmbedding(config)
    orig = int(getattr(config, "original_max_position_embeddings", 0) or config.max_position_embeddings)
    out: list[QuantRopeTable] = []
    for label, seq_len in (("short factors, positions < original_max_position_embeddings", orig), ("long factors, positions past original_max_position_embeddings", 2 * orig)):
        with contextlib.redirect_stdout(sys.stderr):
            lut = np.asarray(module.generate_rope_lut(seq_len=seq_len, model_source=source), dtype=np.float32)
        half = lut.shape[1] // 2
        cos, sin = rot(torch.zeros(1, dtype=torch.float32), torch.arange(seq_len)[None, :])
        want = np.concatenate([cos[0, :, :half].numpy(), sin[0, :, :half].numpy()], axis=1)
        diff = float(np.abs(lut - want).max()) if lut.shape == want.shape else float("inf")
        out.append({"label": f"{label} (seq_len {seq_len})", "positions": [0, seq_len - 1], "max_abs_diff": diff, "other_max_abs_diff": -1.0})
    return out


def _factor_diffs(module: Any, config: Any, source: str) -> tuple[float, float]:
    """The module's (short, long) factor tables against config.json's: the
    largest relative difference, as is and after rounding config's to bf16."""
    import ml_dtypes

    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    with contextlib.redirect_stdout(sys.stderr):
        tables = module.load_rope_factors(source)
    worst = worst_bf16 = 0.0
    for got, key in zip(tables, ("short_factor", "long_factor")):
        want = np.asarray(rope[key], dtype=np.float64)
        got = np.asarray(got, dtype=np.float64).reshape(-1)
        if got.shape != want.shape:
            return float("inf"), float("inf")
        worst = max(worst, float(np.max(np.abs(got - want) / np.abs(want))))
        rounded = want.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
        worst_bf16 = max(worst_bf16, float(np.max(np.abs(got - rounded) / np.abs(want))))
    return worst, worst_bf16


@op("quant_family_facts", QuantFamilyArgs, QuantFamilyFacts, nonempty=("weights_module", "family", "reference_dir"))
def quant_family_facts(args: QuantFamilyArgs) -> QuantFamilyFacts:
    module, failure = import_module(Path(args["weights_module"]))
    if failure is not None:
        return {"constants": {}, "global_layers": None, "rope": [], "rope_error": "", "factor_rel_diff": -1.0, "factor_rel_diff_bf16": -1.0, "import_failure": failure}
    config = _text_config(args["reference_dir"])
    n_layers = int(config.num_hidden_layers)
    is_global = getattr(module, "is_global_layer", None)
    facts: QuantFamilyFacts = {
        "constants": _constants(module),
        "global_layers": [k for k in range(n_layers) if is_global(k)] if callable(is_global) else None,
        "rope": [],
        "rope_error": "",
        "factor_rel_diff": -1.0,
        "factor_rel_diff_bf16": -1.0,
        "import_failure": None,
    }
    try:
        if callable(getattr(module, "load_rope_factors", None)):
            facts["factor_rel_diff"], facts["factor_rel_diff_bf16"] = _factor_diffs(module, config, args["source"])
        if args["family"] == "gemma3" and callable(getattr(module, "rope_w_layer", None)):
            facts["rope"] = _gemma(module, args["reference_dir"], n_layers)
        elif args["family"] == "phi3" and callable(getattr(module, "generate_rope_lut", None)):
            facts["rope"] = _phi(module, args["reference_dir"], args["source"])
    except Exception as e:  # reported as a fact; Go decides
        facts["rope_error"] = describe(e, args["source"])
    return facts
