"""Real-shaped checkpoints with random bf16 weights, cached outside the clone.

One builder for every shape: Llama-3.2-1B (``LlamaForCausalLM``, tied head,
~2.5 GB), Gemma 3 4B (``Gemma3ForConditionalGeneration``, the SigLIP tower
and the projector beside the text model as the published checkpoint has
them, ~8.6 GB) and Phi-4-mini (``Phi3ForCausalLM``, fused projections, tied
200,064-row embedding, ~7.7 GB). The configs are the public config.json
files (Llama's inline, the others under ``data/real/``). Built once: the
architecture's class on the meta device, ``to_empty``, N(0, 0.02) drawn in
bf16, norms filled with what the family stores for "no scaling" (1, or 0 for
Gemma, whose RMSNorm computes x * (1 + w); a LayerNorm 1 with bias 0),
``tie_weights``, ``save_pretrained`` in bf16. The result lives in
``<cache>/shaped/<name>-<key>``, where the key hashes everything that decides
the bytes: the config, the seed, the sigma, the norm fill, the torch and
transformers versions (Llama's key is unchanged from before the other
shapes). A folder is published by an atomic rename, so a half-written one
is never reused.

Gemma's text weights land where the published checkpoint has them,
``language_model.model.`` (transformers 5 names its modules
``model.language_model.`` but saves under the published names, and
phase0 reads both).

    python -m phase0_benchmodels.shaped [--shape llama-3.2-1b|gemma-3-4b|phi-4-mini] [--cache DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

INIT_STD = 0.02
REAL = Path(__file__).resolve().parent / "data" / "real"
LLAMA_32_1B: dict[str, Any] = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "tie_word_embeddings": True,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
DEFAULT_CACHE = Path.home() / ".cache" / "phase0"


@dataclass(frozen=True)
class Shape:
    """One real model's shape: its config.json and what an RMSNorm weight is filled with."""

    config: dict[str, Any]
    norm_fill: float = 1.0

    def stamp_extra(self) -> dict[str, Any]:
        # Empty for the default, so Llama-3.2-1B's key (and cache) is what it was.
        return {} if self.norm_fill == 1.0 else {"norm_fill": self.norm_fill}


def _real(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((REAL / f"{name}.json").read_text(encoding="utf-8"))
    return config


def shapes() -> dict[str, Shape]:
    """The shapes this module builds, by name."""
    return {
        "llama-3.2-1b": Shape(LLAMA_32_1B),
        "gemma-3-4b": Shape(_real("gemma-3-4b-it"), norm_fill=0.0),
        "phi-4-mini": Shape(_real("phi-4-mini-instruct")),
    }


def cache_key(config: dict[str, Any], seed: int, extra: dict[str, Any] | None = None) -> str:
    import torch
    import transformers

    stamp = {
        "config": config,
        "seed": seed,
        "std": INIT_STD,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        **(extra or {}),
    }
    return hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()[:12]


def shaped(name: str, cache: Path | str = DEFAULT_CACHE, *, seed: int = 0) -> Path:
    """The cached real-shaped checkpoint ``name`` (see ``shapes()``), built on first use."""
    table = shapes()
    if name not in table:
        raise ValueError(f"no shape {name!r}; known: {', '.join(sorted(table))}")
    return build(name, table[name], cache, seed=seed)


def build(name: str, shape: Shape, cache: Path | str = DEFAULT_CACHE, *, seed: int = 0) -> Path:
    """``shape`` built (once) into ``<cache>/shaped/<name>-<key>``."""
    import torch
    import transformers
    from transformers import AutoConfig

    out = Path(cache) / "shaped" / f"{name}-{cache_key(shape.config, seed, shape.stamp_extra())}"
    if (out / "config.json").is_file():
        return out
    raw = dict(shape.config)
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    cls = getattr(transformers, shape.config["architectures"][0])
    with torch.device("meta"):
        model = cls._from_config(config, dtype=torch.bfloat16)
    model.to_empty(device="cpu")
    generator = torch.Generator().manual_seed(seed)
    layer_norms = {id(p) for m in model.modules() if isinstance(m, torch.nn.LayerNorm) for p in m.parameters()}
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if id(param) in layer_norms:
                param.fill_(1.0 if pname.endswith("weight") else 0.0)
            elif pname.endswith("norm.weight"):
                param.fill_(shape.norm_fill)
            elif pname.endswith(".bias"):
                param.zero_()
            else:
                param.normal_(0.0, INIT_STD, generator=generator)
    model.tie_weights()
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    del model
    os.replace(tmp, out) if not out.exists() else shutil.rmtree(tmp)
    return out


def shaped_llama_1b(cache: Path | str = DEFAULT_CACHE, *, seed: int = 0) -> Path:
    """The cached real-shaped Llama-3.2-1B folder, built on first use."""
    return shaped("llama-3.2-1b", cache, seed=seed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phase0_benchmodels.shaped", description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="llama-3.2-1b", choices=sorted(shapes()))
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(argv)
    print(shaped(ns.shape, ns.cache, seed=ns.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
