"""Gemma 3 and Phi-3 packers: our fixture modules (and upstream's, under
PHASE0_MLIR_AIR) read every packed bundle back, under each family's conventions."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from phase0_shim.quant.families import FamilyReference
from phase0_shim.quant.reading import Reference
from phase0_testmodels.quant.bundle import Bundle
from phase0_testmodels.quant.families import (
    GemmaOptions,
    PhiOptions,
    make_gemma3_model,
    make_phi3_model,
    pack_gemma3_bundle,
    pack_phi3_bundle,
    phi3_parts,
)
from phase0_testmodels.quant.st import Checkpoint
from tests.quant_helpers import assemble_tree, imported, mlir_air

PREFIX = "language_model.model."


@pytest.fixture(scope="module")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_gemma3_model(tmp_path_factory.mktemp("gemma3"))


@pytest.fixture(scope="module")
def phi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_phi3_model(tmp_path_factory.mktemp("phi3"))


def _bf(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float32).astype(bfloat16).astype(np.float32)


def test_gemma_reference_is_the_published_layout(gemma: Path) -> None:
    """transformers writes the multimodal class as the hub's checkpoints have it:
    the text model under language_model.model., the vision tower beside it, the head tied."""
    ckpt = Checkpoint(gemma)
    assert f"{PREFIX}layers.5.post_feedforward_layernorm.weight" in ckpt
    assert any(n.startswith("vision_tower.") for n in ckpt.names())
    assert "lm_head.weight" not in ckpt
    ref = FamilyReference(Reference(gemma), "gemma3")
    assert ref.prefix == PREFIX
    assert ref.describe("model.norm.weight") == f"{PREFIX}norm.weight"


def test_fixture_gemma_module_reads_our_bundle_under_the_conventions(gemma: Path, tmp_path: Path) -> None:
    llms = assemble_tree(tmp_path / "T")
    ckpt = Checkpoint(gemma)
    pack_gemma3_bundle(ckpt, tmp_path / "model.q4nx")
    ours = Bundle(tmp_path / "model.q4nx")
    with imported(llms / "gemma3_4b_q4nx" / "gemma3_4b_q4nx_weights.py") as mod:
        model = mod.Q4nxModel(str(tmp_path))
        for layer in range(mod.NUM_LAYERS):
            rms = model.layer_rms(layer)
            names = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")
            for got, n in zip(rms, names, strict=True):
                np.testing.assert_array_equal(got, _bf(1.0 + ckpt.f32(f"{PREFIX}layers.{layer}.{n}.weight")), err_msg=f"layer {layer} {n}")
            qn, _ = model.layer_qk_norm(layer)
            np.testing.assert_array_equal(qn, _bf(1.0 + ckpt.f32(f"{PREFIX}layers.{layer}.self_attn.q_norm.weight")))
            got_w = model.layer_weights(layer)
            for key, (proj, m, k) in mod.Q4nxModel._PROJ.items():
                want = ours.dequant(f"model.layers.{layer}.{proj}.weight", m, k).T.astype(bfloat16)
                np.testing.assert_array_equal(got_w[key], want, err_msg=f"layer {layer} {key}")
        embed, norm, head = model.embed_norm_lmhead()
        raw = ckpt.f32(f"{PREFIX}embed_tokens.weight")
        np.testing.assert_array_equal(embed, _bf(raw * math.sqrt(raw.shape[1])))
        np.testing.assert_array_equal(norm, _bf(1.0 + ckpt.f32(f"{PREFIX}norm.weight")))
        cos = float((head * raw).sum() / np.sqrt((head * head).sum() * (raw * raw).sum()))
        assert cos > 0.99, "the head is the raw (unscaled) tied matrix"
        assert [layer for layer in range(mod.NUM_LAYERS) if mod.is_global_layer(layer)] == [5]


def test_gemma_mistakes_are_what_they_say(gemma: Path, tmp_path: Path) -> None:
    ckpt = Checkpoint(gemma)
    name = "model.layers.2.pre_feedforward_layernorm.weight"
    b = Bundle(pack_gemma3_bundle(ckpt, tmp_path / "b.q4nx", GemmaOptions(norm_times={name: 0}, embed_times=2)))
    np.testing.assert_array_equal(b.plain(name), ckpt.f32(PREFIX + name[len("model.") :]))
    raw = ckpt.f32(f"{PREFIX}embed_tokens.weight")
    np.testing.assert_array_equal(b.plain("model.embed_tokens.weight"), _bf(raw * raw.shape[1]))


def test_fixture_phi_module_reads_our_split_bundle(phi: Path, tmp_path: Path) -> None:
    llms = assemble_tree(tmp_path / "T")
    ckpt = Checkpoint(phi)
    pack_phi3_bundle(ckpt, tmp_path / "model.q4nx")
    ours = Bundle(tmp_path / "model.q4nx")
    with imported(llms / "phi4_mini_q4nx" / "phi4_mini_q4nx_weights.py") as mod:
        w = mod.load_q4nx_weights(str(tmp_path))
        ref = FamilyReference(Reference(phi), "phi3")
        for layer in range(2):
            parts = phi3_parts(ckpt, layer)
            fields = {"q": "wq", "k": "wk", "v": "wv", "gate": "w_gate", "up": "w_up"}
            for key, field in fields.items():
                got = np.asarray(getattr(w.layers[layer], field), np.float32)
                assert got.shape == parts[key].T.shape
                cos = float((got * parts[key].T).sum() / np.sqrt((got * got).sum() * (parts[key] ** 2).sum()))
                assert cos > 0.99, f"layer {layer} {key}: cosine {cos}"
                hf = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj"}[key]
                np.testing.assert_array_equal(ref.get(f"model.layers.{layer}.{hf}.weight"), ckpt.array(
                    f"model.layers.{layer}.{'self_attn.qkv_proj' if key in 'qkv' else 'mlp.gate_up_proj'}.weight")[
                    {"q": slice(0, 256), "k": slice(256, 384), "v": slice(384, 512), "gate": slice(0, 512), "up": slice(512, 1024)}[key]])
        np.testing.assert_array_equal(w.embed_table, ckpt.array("model.embed_tokens.weight"))
        assert w.lm_head is w.embed_table
        short, long_ = mod.load_rope_factors(str(tmp_path))
        assert short.tolist() == [1.0] * 24 and long_[-1] == pytest.approx(47.75, abs=0.25)
        lut = np.asarray(mod.generate_rope_lut(seq_len=65, model_source=str(tmp_path)), np.float32)
        assert lut.shape == (65, 48)
    # Another split order moves the rows, nothing else.
    swapped = Bundle(pack_phi3_bundle(ckpt, tmp_path / "s.q4nx", PhiOptions(gate_up_order={1: ("up", "gate")})))
    np.testing.assert_array_equal(
        swapped.dequant("model.layers.1.mlp.gate_proj.weight", 512, 256), ours.dequant("model.layers.1.mlp.up_proj.weight", 512, 256)
    )


@pytest.mark.skipif(mlir_air() is None, reason="PHASE0_MLIR_AIR (a fetched mlir-air programming_examples) is not set")
def test_upstream_modules_read_our_bundles(gemma: Path, phi: Path, tmp_path: Path) -> None:
    """Upstream's loaders read our bundles as ours do: Gemma's codec and four
    norms (its dims are the 4B's, so the tiny ones are given), Phi's
    load_q4nx_weights with a tiny config through llama32_1b_q4nx's reader."""
    tree = mlir_air()
    assert tree is not None
    g = Bundle(pack_gemma3_bundle(Checkpoint(gemma), tmp_path / "g.q4nx"))
    with imported(tree / "llms" / "gemma3_4b_q4nx" / "gemma3_4b_q4nx_weights.py") as mod:
        theirs = mod.Q4nxModel(str(g.path))
        np.testing.assert_array_equal(theirs.dequant("model.layers.0.mlp.down_proj.weight", 256, 512), g.dequant("model.layers.0.mlp.down_proj.weight", 256, 512))
        for got, n in zip(theirs.layer_rms(3), ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"), strict=True):
            np.testing.assert_array_equal(got, g.plain(f"model.layers.3.{n}.weight"))
        mod.VOCAB, mod.D = 512, 256
        embed, norm, head = theirs.embed_norm_lmhead()
        np.testing.assert_array_equal(embed, g.plain("model.embed_tokens.weight"))
        np.testing.assert_array_equal(head, g.dequant("lm_head.weight", 512, 256))
    p = Bundle(pack_phi3_bundle(Checkpoint(phi), tmp_path / "p.q4nx"))
    extra = (tree / "llms", tree / "llms" / "llama32_1b_q4nx", tree / "llms" / "llama32_3b")
    with imported(tree / "llms" / "phi4_mini_q4nx" / "phi4_mini_q4nx_weights.py", extra) as mod:
        cfg = mod.LlamaConfig(n_layers=2, emb_dim=256, n_heads=4, head_dim=64, n_kv_heads=2, hidden_dim=512, vocab_size=512, rope_base=10000.0)
        w = mod.load_q4nx_weights(str(p.path), cfg)
        np.testing.assert_array_equal(w.layers[1].w_up, p.dequant("model.layers.1.mlp.up_proj.weight", 512, 256).T.astype(bfloat16))


def test_phi_bundle_carries_the_longrope_tables_as_the_real_format_does(phi: Path, tmp_path: Path) -> None:
    """A FastFlowLM Phi-4-mini bundle carries rope.short.weight / rope.long.weight,
    bf16, one factor per rotated frequency (upstream's newer module reads them
    with Q4nxModel.bf16); ours writes them from config.json's LongRoPE factors."""
    ckpt = Checkpoint(phi)
    b = Bundle(pack_phi3_bundle(ckpt, tmp_path / "model.q4nx"))
    config = ckpt.config()
    rope = config.get("rope_scaling") or config["rope_parameters"]
    for name, key in (("rope.short.weight", "short_factor"), ("rope.long.weight", "long_factor")):
        entry = b.file.entry(name)
        assert entry.dtype == "BF16" and list(entry.shape) == [len(rope[key])], f"{name}: {entry.dtype} {entry.shape}"
        np.testing.assert_array_equal(b.plain(name), _bf(np.asarray(rope[key])))


def test_a_tensor_the_module_wants_and_the_bundle_lacks_is_named(phi: Path, tmp_path: Path) -> None:
    """A bundle without the LongRoPE tables: gate 3's facts say which tensor
    the module wanted, from which file and function, not a bare KeyError."""
    import json

    from phase0_shim.quant.family_rope import quant_family_facts

    llms = assemble_tree(tmp_path / "T")
    pack_phi3_bundle(Checkpoint(phi), tmp_path / "model.q4nx", PhiOptions(drop=("rope.short.weight", "rope.long.weight")))
    module = llms / "phi4_mini_q4nx" / "phi4_mini_q4nx_weights.py"
    args = {"weights_module": str(module), "family": "phi3", "reference_dir": str(phi), "source": str(tmp_path)}
    facts = json.loads(quant_family_facts(json.dumps(args)))
    error = facts["rope_error"]
    assert "has no tensor rope.short.weight" in error and "phi4_mini_q4nx/phi4_mini_q4nx_weights.py: load_rope_factors()" in error, error
    assert not error.startswith("KeyError"), error
    # With the tables the same module's facts raise nothing.
    pack_phi3_bundle(Checkpoint(phi), tmp_path / "model.q4nx")
    assert json.loads(quant_family_facts(json.dumps(args)))["rope_error"] == ""
