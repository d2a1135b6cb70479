"""Checkpoints with a real model's shapes and random bf16 weights, for benchmarks.

``make bench`` times phase0 at the sizes users deploy (issue 22) without
downloading a model: the architecture comes from a real config.json shipped
here (``data/<preset>.json``), the weights are N(0, 0.02) drawn in bf16, and
transformers' own ``save_pretrained`` writes the safetensors. The model is
built on the meta device and materialised once, so the only copy of the
weights in memory is the one being saved. Test-only: not shipped in the
binary; the Go side caches the result under ``~/.cache/phase0/models/``.

    python -m phase0_benchmodels --preset llama-3.2-3b --out DIR [--seed S]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

DATA = Path(__file__).resolve().parent / "data"
INIT_STD = 0.02


def presets() -> list[str]:
    """The config.json files shipped in data/, by name."""
    return sorted(p.stem for p in DATA.glob("*.json"))


def make_shaped_model(preset: str, out: Path | str, *, seed: int = 0) -> Path:
    """Write ``preset``'s architecture with random bf16 weights into ``out``; return ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    path = DATA / f"{preset}.json"
    if not path.is_file():
        raise ValueError(f"no preset {preset!r}; shipped: {', '.join(presets())}")
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.to_empty(device="cpu")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, INIT_STD, generator=generator)
    model.tie_weights()
    out = Path(out)
    model.save_pretrained(out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phase0_benchmodels", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", required=True, choices=presets())
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(argv)
    print(make_shaped_model(ns.preset, ns.out, seed=ns.seed))
    return 0

