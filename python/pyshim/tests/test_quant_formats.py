"""Q4_0 and AWQ packers, the fixture modules and upstream's loaders reading them, the hub layout, negatives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from phase0_testmodels.quant import awq, q4_0, q4nx
from phase0_testmodels.quant.bundle import Bundle, PackOptions, pack_bundle, reference_shapes
from phase0_testmodels.quant.hub import (
    FASTFLOWLM_LLAMA_1B,
    LLAMA_1B,
    LLAMA_1B_INSTRUCT,
    put_fastflowlm,
    put_llama_1b_scenario,
)
from phase0_testmodels.quant.models import make_quant_model
from phase0_testmodels.quant.negatives import NEGATIVES, WHOLE_BUNDLE, build_all
from phase0_testmodels.quant.st import Checkpoint
from phase0_testmodels.quant.stats import tensor_stats
from tests.quant_helpers import assemble_tree, imported, mlir_air, stubbed

PROJ = {
    "q": "self_attn.q_proj",
    "k": "self_attn.k_proj",
    "v": "self_attn.v_proj",
    "o": "self_attn.o_proj",
    "gate": "mlp.gate_proj",
    "up": "mlp.up_proj",
    "down": "mlp.down_proj",
}
FIELD = {"q": "wq", "k": "wk", "v": "wv", "o": "wo", "gate": "w_gate", "up": "w_up", "down": "w_down"}
needs_upstream = pytest.mark.skipif(
    mlir_air() is None, reason="PHASE0_MLIR_AIR (a fetched mlir-air programming_examples) is not set"
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("quant-models")
    return {
        "llama": make_quant_model(root / "llama", "llama"),
        "llama-seed1": make_quant_model(root / "llama-seed1", "llama", seed=1),
        "qwen2": make_quant_model(root / "qwen2", "qwen2"),
        "qwen3": make_quant_model(root / "qwen3", "qwen3"),
    }


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_tree(tmp_path_factory.mktemp("T"))


def _w(m: int, k: int, seed: int = 0) -> q4nx.F32:
    return (0.02 * np.random.default_rng(seed).standard_normal((m, k))).astype(np.float32)


def test_q4_0_is_symmetric_and_clips_the_positive_peak() -> None:
    w = _w(8, 64)
    qt = q4_0.quantize(w)
    assert qt.q.min() >= -8 and qt.q.max() <= 7
    np.testing.assert_allclose(qt.scale, np.abs(w.reshape(8, 2, 32)).max(2) / 8)
    stats = tensor_stats(w, qt.dequant(), step="symmetric")
    # Within half a step, except a positive peak: +8 clips to +7, one whole step.
    assert stats.max_half_steps <= 2.0 + 1e-5 and stats.frac_beyond_half < 0.05


def test_awq_nibble_order_and_round_trip() -> None:
    nib = np.arange(8, dtype=np.uint8)[None, :]
    # Column ORDER[i] sits at bit 4*i: columns 0 2 4 6 1 3 5 7.
    assert int(awq.pack(nib).view(np.uint32)[0, 0]) == 0x75316420
    np.testing.assert_array_equal(awq.unpack(awq.pack(nib)), nib)
    w = _w(64, 256)
    lin = awq.quantize(w)
    assert lin.qweight.shape == (256, 8) and lin.qzeros.shape == (2, 8) and lin.scales.shape == (2, 64)
    assert lin.scales.dtype == np.float16
    stats = tensor_stats(w, lin.dequant(scales_as_bf16=False).T, group=128)
    assert stats.max_half_steps < 1.05 and stats.cosine > 0.99


@pytest.mark.parametrize("codec", q4nx.CODECS)
def test_clean_bundle_stats_are_inside_the_format_bound(
    models: dict[str, Path], tmp_path: Path, codec: q4nx.Codec
) -> None:
    ckpt = Checkpoint(models["llama"])
    b = Bundle(pack_bundle(ckpt, tmp_path / "model.q4nx", PackOptions(codec=codec)))
    for name, (m, k) in reference_shapes(ckpt).items():
        ref = ckpt.f32(name if name in ckpt else "model.embed_tokens.weight")
        s = tensor_stats(ref, b.dequant(name, m, k))
        assert s.cosine > 0.99 and s.max_half_steps < 1.1 and abs(s.std_ratio - 1) < 0.02, (name, s)


def test_qwen3_fixture_module_loads_llama_weights(models: dict[str, Path], tree: Path, tmp_path: Path) -> None:
    ckpt = Checkpoint(models["qwen3"])
    ours = Bundle(pack_bundle(ckpt, tmp_path / "model.q4nx"))
    with imported(tree / "qwen3_8b_q4nx" / "qwen3_8b_q4nx_weights.py") as mod:
        w = mod.load_q4nx_weights(str(tmp_path))
        q4 = mod.Q4nxModel(str(tmp_path))
        for name, (m, k) in reference_shapes(ckpt).items():
            assert (m, k) == ckpt.array(name).shape
        layer = w.layers[1]
        for key, proj in PROJ.items():
            name = f"model.layers.1.{proj}.weight"
            want = ours.dequant(name, *ckpt.array(name).shape).T.astype(bfloat16)
            np.testing.assert_array_equal(getattr(layer, FIELD[key]), want)
        assert layer.q_norm.tobytes() == ckpt.array("model.layers.1.self_attn.q_norm.weight").tobytes()
        np.testing.assert_array_equal(w.lm_head, ours.dequant("lm_head.weight", 512, 256).astype(bfloat16))
        assert q4.layer_qk_norm(0)[1].shape == (64,)


def test_q4_0_fixture_module_is_our_round_trip(models: dict[str, Path], tree: Path) -> None:
    ckpt = Checkpoint(models["qwen2"])
    with imported(tree / "qwen25_3b_q4" / "qwen25_3b_q4_weights.py") as mod:
        w = mod.load_q4_weights(str(models["qwen2"]))
    for layer in range(2):
        for key, proj in PROJ.items():
            want = q4_0.round_trip(ckpt.f32(f"model.layers.{layer}.{proj}.weight")).T.astype(bfloat16)
            np.testing.assert_array_equal(getattr(w.layers[layer], FIELD[key]), want)
        assert w.layers[layer].bq.tobytes() == ckpt.array(f"model.layers.{layer}.self_attn.q_proj.bias").tobytes()


def test_awq_fixture_module_is_our_dequant(models: dict[str, Path], tree: Path, tmp_path: Path) -> None:
    out = awq.pack_checkpoint(models["llama"], tmp_path / "awq")
    assert json.loads((out / "config.json").read_text())["quantization_config"]["group_size"] == 128
    ckpt = Checkpoint(out)
    with imported(tree / "llama32_1b_int4" / "llama32_1b_int4_weights.py") as mod:
        w = mod.load_weights_awq(str(out))
    for key, proj in PROJ.items():
        want = awq.read_linear(ckpt, f"model.layers.1.{proj}.weight").dequant().astype(bfloat16)
        np.testing.assert_array_equal(getattr(w.layers[1], FIELD[key]), want)


def test_fastflowlm_repo_resolves_offline(models: dict[str, Path], tmp_path: Path) -> None:
    bundle = pack_bundle(models["llama"], tmp_path / "model.q4nx")
    snap = put_fastflowlm(tmp_path / "hub", bundle, models["llama"], LLAMA_1B_INSTRUCT)
    assert (snap / "model.q4nx").is_symlink() and "base_model: meta-llama/Llama-3.2-1B-Instruct" in (
        snap / "README.md"
    ).read_text()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    code = f"from huggingface_hub import hf_hub_download; print(hf_hub_download({FASTFLOWLM_LLAMA_1B!r}, 'model.q4nx'))"
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert Path(got.stdout.strip()) == snap / "model.q4nx"


def test_each_negative_breaks_its_tensors_and_nothing_else(models: dict[str, Path], tmp_path: Path) -> None:
    ckpt = Checkpoint(models["llama"])
    clean = Bundle(pack_bundle(ckpt, tmp_path / "clean.q4nx"))
    made = build_all(models["llama"], tmp_path / "neg", models["llama-seed1"])
    assert set(made) == set(NEGATIVES)
    shapes = reference_shapes(ckpt)
    for kind, path in made.items():
        neg = Bundle(path)
        broken = set(shapes) if NEGATIVES[kind].tensors == (WHOLE_BUNDLE,) else set(NEGATIVES[kind].tensors)
        for name, (m, k) in shapes.items():
            same = neg.file.entry(name).data == clean.file.entry(name).data
            assert same != (name in broken), (kind, name)
            if name in broken:
                s = tensor_stats(
                    ckpt.f32(name if name in ckpt else "model.embed_tokens.weight"), neg.dequant(name, m, k)
                )
                assert s.cosine < 0.9 or s.std_ratio > 1.5, (kind, name, s)


@needs_upstream
def test_upstream_q4_0_and_awq_loaders_read_ours(models: dict[str, Path], tmp_path: Path) -> None:
    up = mlir_air()
    assert up is not None
    ckpt = Checkpoint(models["qwen2"])
    with imported(up / "llms" / "qwen25_3b_q4" / "qwen25_3b_q4_weights.py") as mod:
        got = mod.Qwen25Q4Model(str(models["qwen2"])).layer_weights(1)
    for key, proj in PROJ.items():
        want = q4_0.round_trip(ckpt.f32(f"model.layers.1.{proj}.weight")).T.astype(bfloat16)
        np.testing.assert_array_equal(got[key], want)
    out = awq.pack_checkpoint(models["llama"], tmp_path / "awq")
    with stubbed("air"), imported(up / "llms" / "llama32_1b_int4" / "llama32_1b_int4_weights.py") as mod:
        import llama32_1b_weights as bf16  # the sibling upstream's module put on sys.path

        cfg = bf16.LlamaConfig(
            n_layers=2, emb_dim=256, n_heads=4, head_dim=64, n_kv_heads=2, hidden_dim=512, vocab_size=512
        )
        w = mod.load_weights_awq(str(out), cfg, k_chunk=256)
    awq_ckpt = Checkpoint(out)
    for key, proj in PROJ.items():
        want = awq.read_linear(awq_ckpt, f"model.layers.1.{proj}.weight").dequant().astype(bfloat16)
        np.testing.assert_array_equal(getattr(w.layers[1], FIELD[key]), want)


@needs_upstream
def test_upstream_qwen3_loader_reads_our_i8_bundle(models: dict[str, Path], tmp_path: Path) -> None:
    up = mlir_air()
    assert up is not None
    ckpt = Checkpoint(models["qwen3"])
    ours = Bundle(pack_bundle(ckpt, tmp_path / "model.q4nx"))
    with imported(up / "llms" / "qwen3_8b_q4nx" / "qwen3_8b_q4nx_weights.py") as mod:
        theirs = mod.Q4nxModel(str(tmp_path))
        for name, (m, k) in reference_shapes(ckpt).items():
            np.testing.assert_array_equal(theirs.dequant(name, m, k), ours.dequant(name, m, k), err_msg=name)


def test_pairing_scenario_bundle_is_closer_to_its_source(models: dict[str, Path], tmp_path: Path) -> None:
    bundle = pack_bundle(models["llama"], tmp_path / "model.q4nx")
    snaps = put_llama_1b_scenario(tmp_path / "hub", models["llama"], models["llama-seed1"], bundle)
    card = (snaps[FASTFLOWLM_LLAMA_1B] / "README.md").read_text()
    assert "base_model: meta-llama/Llama-3.2-1B-Instruct" in card
    name = "model.layers.1.mlp.down_proj.weight"
    deq = Bundle(snaps[FASTFLOWLM_LLAMA_1B] / "model.q4nx").dequant(name, 256, 512)
    instruct = tensor_stats(Checkpoint(snaps[LLAMA_1B_INSTRUCT]).f32(name), deq)
    base = tensor_stats(Checkpoint(snaps[LLAMA_1B]).f32(name), deq)
    assert instruct.cosine > 0.99 > 0.1 > abs(base.cosine)
