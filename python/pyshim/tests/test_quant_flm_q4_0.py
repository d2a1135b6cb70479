"""FastFlowLM's signed Q4_0 bundle: our packer, and the upstream-style fixture module reading it back."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from phase0_testmodels.quant import flm_q4_0
from phase0_testmodels.quant.models import make_quant_model
from phase0_testmodels.quant.st import Checkpoint, File
from tests.quant_helpers import DATA, assemble_tree, imported


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_signed_codec_maps_the_peak_onto_minus_8() -> None:
    w = (0.02 * np.random.default_rng(0).standard_normal((32, 256))).astype(np.float32)
    s = flm_q4_0.quantize(w)
    assert int(np.min(s.q)) >= -8 and int(np.max(s.q)) <= 7
    assert (s.scale < 0).any() and (
        s.scale > 0
    ).any()  # d = peak / -8 takes the peak's opposite sign
    peak = np.abs(w.reshape(32, 8, 32)).argmax(axis=2)
    assert (
        np.take_along_axis(s.q.reshape(32, 8, 32), peak[..., None], axis=2) == -8
    ).all()
    e = flm_q4_0.entry(s)
    assert e.dtype == "I8" and e.shape == (1, 5120)
    assert not np.frombuffer(e.data, np.uint8)[512:1024].any()  # the mins slot
    np.testing.assert_array_equal(flm_q4_0.decode(e, 32, 256), s.dequant())


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("flm")
    ref = make_quant_model(root / "qwen2", "qwen2", intermediate_size=448)
    bundle = flm_q4_0.pack_flm_bundle(ref, root / "bundle")
    llms = assemble_tree(root / "T")
    shutil.copytree(DATA / "quant_flm", root / "T", dirs_exist_ok=True)
    return ref, bundle, llms


def test_fixture_module_reads_the_packed_bundle(
    packed: tuple[Path, Path, Path],
) -> None:
    ref, bundle, llms = packed
    ck, f = Checkpoint(ref), File(bundle)
    with imported(llms / "qwen25_3b_q4" / "qwen25_3b_q4_weights.py") as mod:
        w = mod.load_q4nx_weights(str(bundle.parent))
    up = flm_q4_0.decode(f.entry("model.layers.1.mlp.up_proj.weight"), 512, 256)
    assert not up[448:].any()  # the padded rows are exact zeros
    np.testing.assert_array_equal(
        w.layers[1].w_up.astype(np.float32),
        up[:448].T.astype(bfloat16).astype(np.float32),
    )
    assert w.lm_head.shape == (512, 256)  # shipped untied, under a tied config
    for k in range(2):
        L = w.layers[k]
        n_b, n_s = L.attn_norm.astype(np.float32), ck.f32(
            f"model.layers.{k}.input_layernorm.weight"
        )
        y = ck.f32(f"model.layers.{k}.self_attn.q_proj.weight").T
        raw = L.wq.astype(np.float32)
        # The smoothing makes the tensor differ by design; norm x projection is invariant.
        assert _cos(raw, y) < 0.97
        assert _cos(raw * (n_b / n_s)[:, None], y) > 0.99
