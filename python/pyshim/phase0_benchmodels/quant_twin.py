"""Quantized gate 2's twin on the quantized gate's fixtures: the facts of each bundle.

Bench-only. For each bundle under ``FIXTURES/bundles`` (quant_gate_fixtures.py:
the clean Q4NX bundle of ``ref`` in both header codecs and one negative per
failure class), load ``ref`` (transformers, bf16), run quantized gate 2's facts
(phase0_shim.quant.end_to_end.e2e_facts: bf16, the bundle, the twin, in one
model) through the tree's ``llama32_1b_q4nx`` loader, and write them as JSON,
one file per case, for Go to judge (gate/quant/testdata/twin/).

    python -m phase0_benchmodels.quant_twin FIXTURES TREE_LLMS OUT [--cases clean,nibbles]

``--trained MODEL_DIR`` instead runs the formats' clean packs and one-layer
corruptions of a trained checkpoint (the tests' tiny trained Llama, or
SmolLM2-135M), each format against its own twin:

    python -m phase0_benchmodels.quant_twin --trained MODEL_DIR OUT [--layer 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from phase0_shim.calibration import PASSAGE
from phase0_shim.optypes import QuantBound
from phase0_shim.quant.end_to_end import e2e_facts
from phase0_shim.tokens import load_tokenizer

Q4NX_RULE: QuantBound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
PROMPT = "The capital of France is"


RULES: dict[str, QuantBound] = {
    "Q4NX": Q4NX_RULE,
    "Q4_0": {"group": 32, "levels": 8, "symmetric": True, "slack": 1.0 / 128},
    "AWQ": {"group": 128, "levels": 15, "symmetric": False, "slack": 1.0 / 128},
}
CORRUPTIONS = ("clean", "nibbles", "doubled_scale", "swapped", "transposed")

# The loader of a "bundle" written by _pack: each projection (and the head)
# already dequantized, HF layout, float32; the module hands them on in the
# (in, out) layout as upstream's loaders do.
MODULE = """
import types
import numpy as np
from safetensors.numpy import load_file

PROJ = {"wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
        "wo": "self_attn.o_proj", "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj",
        "w_down": "mlp.down_proj"}


def load_bench_weights(source):
    sd = load_file(source + "/bundle.safetensors")
    n = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("model.layers."))
    layers = [types.SimpleNamespace(**{f: np.ascontiguousarray(sd[f"model.layers.{k}.{hf}.weight"].T) for f, hf in PROJ.items()})
              for k in range(n)]
    return types.SimpleNamespace(lm_head=sd["lm_head.weight"], layers=layers)
"""


def _dequant(fmt: str, w: Any, corrupt: str) -> Any:
    """``w`` [out, in] through the format's packer and back, with ``corrupt``
    ("", "nibbles" or "doubled_scale") applied to its codes or scales."""
    import dataclasses

    import numpy as np

    from phase0_testmodels.quant import awq, q4_0, q4nx

    if fmt == "Q4NX":
        qt = q4nx.quantize(w)
        if corrupt == "nibbles":  # the two rows of each byte swapped
            qt = dataclasses.replace(qt, q=qt.q.reshape(-1, 2, qt.q.shape[1])[:, ::-1].reshape(qt.q.shape).copy())
        if corrupt == "doubled_scale":
            qt = dataclasses.replace(qt, scale=qt.scale * 2)
        return qt.dequant()
    if fmt == "Q4_0":
        q0 = q4_0.quantize(w)
        if corrupt == "nibbles":
            q0 = dataclasses.replace(q0, q=q0.q.reshape(-1, 2, q0.q.shape[1])[:, ::-1].reshape(q0.q.shape).copy())
        if corrupt == "doubled_scale":
            q0 = dataclasses.replace(q0, scale=q0.scale * 2)
        return q0.dequant()
    k = w.shape[1]
    group = awq.GROUP if k % awq.GROUP == 0 else 64 if k % 64 == 0 else 32
    lin = awq.quantize(w, group)
    if corrupt == "nibbles":  # packed in plain order, read in AutoAWQ's
        lin = dataclasses.replace(lin, qweight=awq.pack(awq.unpack(lin.qweight), order=np.arange(8)))
    if corrupt == "doubled_scale":
        lin = dataclasses.replace(lin, scales=lin.scales * 2)
    return lin.dequant().T


def _pack(ref: Path, out: Path, fmt: str, case: str, layer: int) -> None:
    """A bench bundle of ``ref`` in ``fmt`` with ``case`` applied to ``layer``."""
    import numpy as np
    from safetensors.numpy import save_file

    from phase0_testmodels.quant.st import Checkpoint

    ckpt = Checkpoint(ref)
    tensors: dict[str, Any] = {}
    names = [n for n in ckpt.names() if n.startswith("model.layers.") and n.endswith("_proj.weight")]
    at = f"model.layers.{layer}."
    for name in names:
        w = ckpt.f32(name)
        here = name.startswith(at)
        if here and case == "swapped" and name.endswith(("gate_proj.weight", "up_proj.weight")):
            other = "up_proj" if "gate_proj" in name else "gate_proj"
            w = ckpt.f32(name.replace(name.split(".")[-2], other))
        if here and case == "transposed" and name.endswith("q_proj.weight"):
            w = np.ascontiguousarray(w.T)
        corrupt = case if here and case in ("nibbles", "doubled_scale") and (case == "nibbles" or name.endswith("down_proj.weight")) else ""
        if corrupt == "nibbles" and not name.endswith("down_proj.weight"):
            corrupt = ""  # one projection of the layer: its down projection
        tensors[name] = np.ascontiguousarray(_dequant(fmt, w, corrupt), dtype=np.float32)
    head = "lm_head.weight" if "lm_head.weight" in ckpt else "model.embed_tokens.weight"
    tensors["lm_head.weight"] = np.ascontiguousarray(_dequant(fmt, ckpt.f32(head), "") if head == "lm_head.weight" else ckpt.f32(head), dtype=np.float32)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "bundle.safetensors"))


def trained(model_dir: Path, out: Path, layer: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(str(model_dir))
    prompt = [int(t) for t in tok.encode(PROMPT)]
    passage = [int(t) for t in tok.encode(PASSAGE)]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        module = Path(tmp) / "bench_weights.py"
        module.write_text(MODULE)
        for fmt, rule in RULES.items():
            for case in CORRUPTIONS:
                src = Path(tmp) / f"{fmt}-{case}"
                _pack(model_dir, src, fmt, case, layer)
                model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.bfloat16).eval()  # type: ignore[no-untyped-call]
                args = {"weights_module": str(module), "source": str(src), "reference_dir": str(model_dir), "n_layers": int(model.config.num_hidden_layers), "rule": rule}
                facts = e2e_facts(model, prompt, passage, args)  # type: ignore[arg-type]
                del model
                (out / f"{fmt}-{case}.json").write_text(json.dumps(facts, indent=1) + "\n")
                kl, klt = facts["kl_passage"], facts["kl_passage_twin"]
                print(f"{fmt:5s} {case:14s} KL {sum(kl) / len(kl):.4f} twin {sum(klt) / len(klt):.4f}", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--trained":
        tp = argparse.ArgumentParser()
        tp.add_argument("--trained", type=Path, required=True)
        tp.add_argument("out", type=Path)
        tp.add_argument("--layer", type=int, default=1)
        t = tp.parse_args()
        trained(t.trained, t.out, t.layer)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("fixtures", type=Path)
    ap.add_argument("llms", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--cases", default="")
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM

    ref = a.fixtures / "ref"
    module = a.llms / "llama32_1b_q4nx" / "llama32_1b_q4nx_weights.py"
    tok = load_tokenizer(str(ref))
    prompt = [int(t) for t in tok.encode(PROMPT)]
    passage = [int(t) for t in tok.encode(PASSAGE)]
    cases = a.cases.split(",") if a.cases else sorted(p.name for p in (a.fixtures / "bundles").iterdir() if p.name != "qwen3")
    a.out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        with tempfile.TemporaryDirectory() as src:
            shutil.copyfile(a.fixtures / "bundles" / case / "model.q4nx", Path(src) / "model.q4nx")
            shutil.copyfile(ref / "config.json", Path(src) / "config.json")
            model = AutoModelForCausalLM.from_pretrained(str(ref), dtype=torch.bfloat16).eval()  # type: ignore[no-untyped-call]
            facts = e2e_facts(
                model,
                prompt,
                passage,
                {"weights_module": str(module), "source": src, "reference_dir": str(ref), "n_layers": int(model.config.num_hidden_layers), "rule": Q4NX_RULE},
            )
        (a.out / f"{case}.json").write_text(json.dumps(facts, indent=1) + "\n")
        kl, klt = facts["kl_passage"], facts["kl_passage_twin"]
        print(f"{case:14s} KL {sum(kl) / len(kl):.4f} twin {sum(klt) / len(klt):.4f}  cos {['%.4f' % c for c in facts['hidden_cosine']]} twin {['%.4f' % c for c in facts['hidden_cosine_twin']]}")


if __name__ == "__main__":
    main()
