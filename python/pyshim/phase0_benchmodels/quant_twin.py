"""Quantized gate 2's twin on the quantized gate's fixtures: the facts of each bundle.

Bench-only. For each bundle under ``FIXTURES/bundles`` (quant_gate_fixtures.py:
the clean Q4NX bundle of ``ref`` in both header codecs and one negative per
failure class), load ``ref`` (transformers, bf16), run quantized gate 2's facts
(phase0_shim.quant.end_to_end.e2e_facts: bf16, the twin, the bundle, in one
model) through the tree's ``llama32_1b_q4nx`` loader, and write them as JSON,
one file per case, for Go to judge (gate/quant/testdata/twin/).

    python -m phase0_benchmodels.quant_twin FIXTURES TREE_LLMS OUT [--cases clean,nibbles]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from phase0_shim.calibration import PASSAGE
from phase0_shim.optypes import QuantBound
from phase0_shim.quant.end_to_end import e2e_facts
from phase0_shim.tokens import load_tokenizer

Q4NX_RULE: QuantBound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
PROMPT = "The capital of France is"


def main() -> None:
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
