"""Builds the quantized gate's fixtures for the Go tests (gate/quant/, run/orchestrator/).

``python quant_gate_fixtures.py OUT`` writes, under OUT:

- ``ref``, ``other``: 256-wide tiny Llama checkpoints (seeds 0 and 1);
- ``qwen3``, ``qwen2``: 256-wide tiny Qwen3 (QK-norms, untied lm_head) and
  Qwen2 (q/k/v biases, tied) checkpoints, the references of the
  ``qwen3_8b_q4nx`` and ``qwen25_3b_q4`` folders;
- ``awq``: ``ref`` as an AutoAWQ g128 checkpoint (``qweight/qzeros/scales``,
  ``quantization_config``), what ``llama32_1b_int4`` names as its reference;
- ``bundles/qwen3/model.q4nx``: the clean bundle of ``qwen3`` (its untied
  lm_head quantized as blocks);
- ``qwen3_4b``: a 256-wide tiny Qwen3 with 128-wide heads (q dim 512 != hidden
  256, as Qwen3-4B's 4096 != 2560) and a tied head, the reference of the newer
  ``qwen3_4b_q4nx`` folder; ``bundles/qwen3_4b/model.q4nx`` its clean bundle
  (no lm_head, as FastFlowLM's tied bundles) and
  ``bundles/qwen3_4b_o_doubled/model.q4nx`` the same with layer 1's o_proj
  scale doubled;
- ``bundles/<case>/model.q4nx``: the clean bundle of ``ref`` and one negative
  per failure class quantized gate 1 must FAIL (a random-init tensor, a
  transposed one, gate/up swapped, the wrong nibble order, a doubled scale,
  another model's bundle, I8 and Q4NX codecs), and one per cause the
  statistics name (a scale x 1.1, one row-block's scale and min zeroed, every
  min shifted by 0.1 step, a projection missing from the bundle);
- ``tree/llms``: the upstream-style tree (quant_helpers.assemble_tree).

Packing uses phase0_testmodels.quant (our own packer, from the format facts).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quant_helpers import assemble_tree  # noqa: E402

from phase0_testmodels.quant import awq  # noqa: E402
from phase0_testmodels.quant.bundle import PackOptions, is_projection, pack_bundle  # noqa: E402
from phase0_testmodels.quant.models import make_quant_model  # noqa: E402
from phase0_testmodels.quant.st import Checkpoint, File, write  # noqa: E402

GATE = "model.layers.1.mlp.gate_proj.weight"
UP = "model.layers.1.mlp.up_proj.weight"
Q0 = "model.layers.0.self_attn.q_proj.weight"
DOWN0 = "model.layers.0.mlp.down_proj.weight"
RANDOM = "model.layers.1.self_attn.v_proj.weight"
O1 = "model.layers.1.self_attn.o_proj.weight"
UP0 = "model.layers.0.mlp.up_proj.weight"
DOWN1 = "model.layers.1.mlp.down_proj.weight"
ZEROED_ROWS = slice(32, 64)  # the second 32-row block of rows


def cases(ref: Checkpoint) -> dict[str, PackOptions]:
    rng = np.random.default_rng(7)

    def random_v(name: str, w: np.ndarray) -> np.ndarray:
        return (rng.standard_normal(w.shape) * float(w.std())).astype(np.float32) if name == RANDOM else w

    def transposed_q(name: str, w: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(w.T) if name == Q0 else w

    def swapped(name: str, w: np.ndarray) -> np.ndarray:
        return ref.f32(UP) if name == GATE else ref.f32(GATE) if name == UP else w

    def doubled(name: str, qt):  # type: ignore[no-untyped-def]
        return dataclasses.replace(qt, scale=qt.scale * 2) if name == DOWN0 else qt

    def scaled(name: str, qt):  # type: ignore[no-untyped-def]
        return dataclasses.replace(qt, scale=qt.scale * np.float32(1.1)) if name == O1 else qt

    def zeroed(name: str, qt):  # type: ignore[no-untyped-def]
        if name != UP0:
            return qt
        scale, offset = qt.scale.copy(), qt.offset.copy()
        scale[ZEROED_ROWS], offset[ZEROED_ROWS] = 0, 0
        return dataclasses.replace(qt, scale=scale, offset=offset)

    def shifted(name: str, qt):  # type: ignore[no-untyped-def]
        return dataclasses.replace(qt, offset=qt.offset + np.float32(0.1) * qt.scale) if is_projection(name) else qt

    return {
        "clean": PackOptions(),
        "scale_1_1": PackOptions(grid_hook=scaled),
        "zeroed_rows": PackOptions(grid_hook=zeroed),
        "shifted_mins": PackOptions(grid_hook=shifted),
        "clean_q4nx": PackOptions(codec="Q4NX"),
        "random": PackOptions(weight_hook=random_v),
        "transposed": PackOptions(weight_hook=transposed_q),
        "swapped": PackOptions(weight_hook=swapped),
        "nibbles": PackOptions(nibbles="odd-low"),
        "doubled_scale": PackOptions(grid_hook=doubled),
    }


def main(out: Path) -> None:
    ref = make_quant_model(out / "ref", seed=0)
    other = make_quant_model(out / "other", seed=1)
    ckpt = Checkpoint(ref)
    for name, opts in cases(ckpt).items():
        (out / "bundles" / name).mkdir(parents=True, exist_ok=True)
        pack_bundle(ckpt, out / "bundles" / name / "model.q4nx", opts)
    # A valid file without one projection (its header entry and its bytes).
    clean = File(out / "bundles" / "clean" / "model.q4nx")
    (out / "bundles" / "missing_tensor").mkdir(parents=True, exist_ok=True)
    write(out / "bundles" / "missing_tensor" / "model.q4nx", {n: clean.entry(n) for n in clean.names() if n != DOWN1}, clean.metadata)
    (out / "bundles" / "other_model").mkdir(parents=True, exist_ok=True)
    pack_bundle(other, out / "bundles" / "other_model" / "model.q4nx")
    qwen3 = make_quant_model(out / "qwen3", "qwen3")
    make_quant_model(out / "qwen2", "qwen2")
    awq.pack_checkpoint(out / "ref", out / "awq")
    (out / "bundles" / "qwen3").mkdir(parents=True, exist_ok=True)
    pack_bundle(qwen3, out / "bundles" / "qwen3" / "model.q4nx")
    qwen3_4b = make_quant_model(out / "qwen3_4b", "qwen3", seed=2, head_dim=128, tie_word_embeddings=True)

    def doubled_o1(name: str, qt):  # type: ignore[no-untyped-def]
        return dataclasses.replace(qt, scale=qt.scale * 2) if name == O1 else qt

    for case, opts in (("qwen3_4b", PackOptions()), ("qwen3_4b_o_doubled", PackOptions(grid_hook=doubled_o1))):
        (out / "bundles" / case).mkdir(parents=True, exist_ok=True)
        pack_bundle(qwen3_4b, out / "bundles" / case / "model.q4nx", dataclasses.replace(opts, tied_lm_head_copy=False))
    assemble_tree(out / "tree")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
