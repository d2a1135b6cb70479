"""Builds the Gemma 3 and Phi-3 quantized fixtures for the Go tests (gate/quant/, run/orchestrator/).

``python quant_family_fixtures.py OUT`` writes, under OUT:

- ``gemma3``: a tiny Gemma3ForConditionalGeneration written by transformers
  (text 256 wide, 6 layers, layer 5 global; a SigLIP tower beside it), the
  reference of ``gemma3_4b_q4nx``;
- ``phi3``: a tiny Phi3ForCausalLM (fused qkv_proj / gate_up_proj, partial
  rotary 0.75, LongRoPE), the reference of ``phi4_mini_q4nx``;
- ``bundles/gemma3/<case>/model.q4nx``: the clean bundle (norms 1 + w, the
  embedding x sqrt(hidden)) and one per convention mistake and failure class;
- ``bundles/phi3/<case>/model.q4nx``: the clean bundle (fused rows split in
  [q, k, v] / [gate, up] order), bundles split in another order and one
  whose k does not add up to its share of the fused rows.

Packing uses phase0_testmodels.quant.families (our own packers, from the
folders' descriptions).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from phase0_testmodels.quant.bundle import PackOptions
from phase0_testmodels.quant.families import GemmaOptions, PhiOptions, make_gemma3_model, make_phi3_model, pack_gemma3_bundle, pack_phi3_bundle
from phase0_testmodels.quant.st import Checkpoint

DOWN4 = "model.layers.4.mlp.down_proj.weight"


def gemma_cases() -> dict[str, GemmaOptions]:
    def doubled(name: str, qt):  # type: ignore[no-untyped-def]
        return dataclasses.replace(qt, scale=qt.scale * 2) if name == DOWN4 else qt

    return {
        "clean": GemmaOptions(),
        "norm_as_w": GemmaOptions(norm_times={"model.layers.2.pre_feedforward_layernorm.weight": 0}),
        "norm_twice": GemmaOptions(norm_times={"model.layers.3.post_feedforward_layernorm.weight": 2}),
        "embed_unscaled": GemmaOptions(embed_times=0),
        "embed_twice": GemmaOptions(embed_times=2),
        "doubled_scale": GemmaOptions(pack=PackOptions(grid_hook=doubled)),
        "no_ffn_norms": GemmaOptions(drop=("model.layers.0.pre_feedforward_layernorm.weight", "model.layers.0.post_feedforward_layernorm.weight")),
        "no_qk_norms": GemmaOptions(drop=("model.layers.1.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight")),
    }


def phi_cases() -> dict[str, PhiOptions]:
    return {
        "clean": PhiOptions(),
        "gate_up_swapped": PhiOptions(gate_up_order={1: ("up", "gate")}),
        "kv_swapped": PhiOptions(qkv_order={0: ("q", "v", "k")}),
        "k_short": PhiOptions(rows={"model.layers.1.self_attn.k_proj.weight": 96}),
    }


def main(out: Path) -> None:
    gemma = Checkpoint(make_gemma3_model(out / "gemma3", seed=0))
    phi = Checkpoint(make_phi3_model(out / "phi3", seed=0))
    for name, gopts in gemma_cases().items():
        d = out / "bundles" / "gemma3" / name
        d.mkdir(parents=True, exist_ok=True)
        pack_gemma3_bundle(gemma, d / "model.q4nx", gopts)
    for name, popts in phi_cases().items():
        d = out / "bundles" / "phi3" / name
        d.mkdir(parents=True, exist_ok=True)
        pack_phi3_bundle(phi, d / "model.q4nx", popts)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
