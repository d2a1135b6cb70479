"""A real-shaped Llama-3.2-1B checkpoint with random bf16 weights, cached outside the clone.

Built once (transformers ``from_config`` on the meta device, ``to_empty``,
N(0, 0.02), ``tie_weights``, ``save_pretrained`` in bf16, ~2.5 GB) into
``<cache>/shaped/llama-3.2-1b-<key>``, where the key hashes everything that
decides the bytes: the config, the seed, the sigma and the torch and
transformers versions. A folder is published by an atomic rename, so a
half-written one is never reused.

    python -m phase0_benchmodels.shaped [--cache ~/.cache/phase0] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Sequence

INIT_STD = 0.02
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


def cache_key(config: dict[str, Any], seed: int) -> str:
    import torch
    import transformers

    stamp = {
        "config": config,
        "seed": seed,
        "std": INIT_STD,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    return hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()[:12]


def shaped_llama_1b(cache: Path | str = DEFAULT_CACHE, *, seed: int = 0) -> Path:
    """The cached real-shaped Llama-3.2-1B folder, built on first use."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    out = Path(cache) / "shaped" / f"llama-3.2-1b-{cache_key(LLAMA_32_1B, seed)}"
    if (out / "config.json").is_file():
        return out
    raw = dict(LLAMA_32_1B)
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)  # type: ignore[no-untyped-call]
    model.to_empty(device="cpu")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.normal_(0.0, INIT_STD, generator=generator)
    model.tie_weights()
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    del model
    os.replace(tmp, out) if not out.exists() else shutil.rmtree(tmp)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phase0_benchmodels.shaped", description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(argv)
    print(shaped_llama_1b(ns.cache, seed=ns.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
