"""The newer tree's qwen3_4b_q4nx: the 8B reader subclassed at a q dim
decoupled from the hidden size (o_proj DQ -> D) with a tied head and no
lm_head in the bundle. Our fixture module (and upstream's, under
PHASE0_MLIR_AIR when that tree has the folder) reads our packed bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from phase0_testmodels.quant.bundle import Bundle, PackOptions, pack_bundle
from phase0_testmodels.quant.models import make_quant_model
from phase0_testmodels.quant.st import Checkpoint
from tests.quant_helpers import DATA, assemble_tree, imported, mlir_air

PROJ = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
FIELD = {"q": "wq", "k": "wk", "v": "wv", "o": "wo", "gate": "w_gate", "up": "w_up", "down": "w_down"}


@pytest.fixture(scope="module")
def qwen3_4b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_quant_model(tmp_path_factory.mktemp("qwen3_4b"), "qwen3", seed=2, head_dim=128, tie_word_embeddings=True)


def _bundle(ref: Path, out: Path) -> Bundle:
    return Bundle(pack_bundle(ref, out / "model.q4nx", PackOptions(tied_lm_head_copy=False)))


def test_fixture_module_reads_a_tied_decoupled_q_bundle(qwen3_4b: Path, tmp_path: Path) -> None:
    llms = assemble_tree(tmp_path / "T")
    shutil.copytree(DATA / "quant_newer" / "llms", llms, dirs_exist_ok=True)
    ckpt = Checkpoint(qwen3_4b)
    assert ckpt.array("model.layers.0.self_attn.o_proj.weight").shape == (256, 512)  # D x DQ
    ours = _bundle(qwen3_4b, tmp_path)
    assert "lm_head.weight" not in ours.file.names()
    with imported(llms / "qwen3_4b_q4nx" / "qwen3_4b_q4nx_weights.py") as mod:
        assert mod.DQ != mod.D
        w = mod.load_q4nx_weights(str(tmp_path))
        for layer in range(2):
            for key, proj in PROJ.items():
                name = f"model.layers.{layer}.{proj}.weight"
                want = ours.dequant(name, *ckpt.array(name).shape).T.astype(bfloat16)
                np.testing.assert_array_equal(getattr(w.layers[layer], FIELD[key]), want, err_msg=name)
        np.testing.assert_array_equal(w.lm_head, ckpt.array("model.embed_tokens.weight"))
        assert mod.qwen3_4b_q4nx_config().tie_word_embeddings


@pytest.mark.skipif(
    mlir_air() is None or not (mlir_air() / "llms" / "qwen3_4b_q4nx").is_dir(),  # type: ignore[operator]
    reason="PHASE0_MLIR_AIR (a fetched mlir-air programming_examples with qwen3_4b_q4nx) is not set",
)
def test_upstream_module_reads_our_bundle(qwen3_4b: Path, tmp_path: Path) -> None:
    """Upstream's reader at our tiny dims (its _PROJ retargeted, as its own
    subclass retargets the 8B's) dequantizes our bundle as ours does; its
    head is the embedding."""
    tree = mlir_air()
    assert tree is not None
    ckpt = Checkpoint(qwen3_4b)
    ours = _bundle(qwen3_4b, tmp_path)
    with imported(tree / "llms" / "qwen3_4b_q4nx" / "qwen3_4b_q4nx_weights.py") as mod:
        dims = {key: (proj, *ckpt.array(f"model.layers.0.{proj}.weight").shape) for key, proj in PROJ.items()}
        mod.Q4nxModel._PROJ = dims
        theirs = mod.Q4nxModel(str(tmp_path))
        w = theirs.layer_weights(1)
        for key, (proj, m, k) in dims.items():
            np.testing.assert_array_equal(np.asarray(w[key], np.float32), ours.dequant(f"model.layers.1.{proj}.weight", m, k).T.astype(bfloat16).astype(np.float32), err_msg=key)
        embed, _, head = theirs.embed_norm_lmhead()
        assert head is embed
