"""Q4NX packer: our own round trip, the format's bounds, and loaders reading our bundles back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from phase0_testmodels.quant import q4nx
from phase0_testmodels.quant.bundle import Bundle, PackOptions, pack_bundle, reference_shapes
from phase0_testmodels.quant.models import make_quant_model
from phase0_testmodels.quant.st import Checkpoint
from tests.quant_helpers import assemble_tree, imported, mlir_air


def _weights(m: int = 64, k: int = 512, seed: int = 0) -> q4nx.F32:
    return (0.02 * np.random.default_rng(seed).standard_normal((m, k))).astype(bfloat16).astype(np.float32)


@pytest.mark.parametrize("codec", q4nx.CODECS)
def test_round_trip_is_the_grid_and_within_half_a_step(codec: q4nx.Codec) -> None:
    w = _weights()
    qt = q4nx.quantize(w, codec)
    back = q4nx.unpack_blocks(q4nx.pack_blocks(qt), *w.shape, codec)
    np.testing.assert_array_equal(back.q, qt.q)
    np.testing.assert_array_equal(back.scale, qt.scale)
    np.testing.assert_array_equal(back.offset, qt.offset)
    step = np.repeat((w.reshape(64, -1, 32).max(2) - w.reshape(64, -1, 32).min(2)) / 15, 32, axis=1)
    # Half a step plus what bf16 rounding of the scale (x15) and offset can add.
    assert (np.abs(back.dequant() - w) <= 0.5 * step * 1.1 + 1e-6).all()


def test_block_layout_follows_the_format_facts() -> None:
    w = _weights(32, 256)
    qt = q4nx.quantize(w)
    block = q4nx.pack_blocks(qt)
    assert block.shape == (1, q4nx.BLOCK_BYTES) == (1, 5120)
    scales = block[0, :512].view(bfloat16).astype(np.float32).reshape(8, 32)
    np.testing.assert_array_equal(scales, qt.scale.T)  # [group][row]
    qs = block[0, 1024:].reshape(2, 256, 8)
    g, col, k = 1, 7, 3
    assert qs[g, col, k] == (qt.q[g * 16 + 2 * k + 1, col] << 4) | qt.q[g * 16 + 2 * k, col]


def test_wrong_nibble_order_swaps_even_and_odd_rows() -> None:
    w = _weights(32, 256)
    qt = q4nx.quantize(w)
    swapped = q4nx.unpack_blocks(q4nx.pack_blocks(qt, nibbles="odd-low"), 32, 256, "I8")
    np.testing.assert_array_equal(swapped.q[0::2], qt.q[1::2])
    np.testing.assert_array_equal(swapped.q[1::2], qt.q[0::2])


def test_the_two_codecs_differ_in_header_and_dequant() -> None:
    w = _weights(32, 256)
    i8, zp = q4nx.quantize(w, "I8"), q4nx.quantize(w, "Q4NX")
    e_i8 = q4nx.entry(q4nx.pack_blocks(i8), 32, 256, "I8")
    e_zp = q4nx.entry(q4nx.pack_blocks(zp), 32, 256, "Q4NX")
    assert (e_i8.dtype, e_i8.shape, e_zp.dtype, e_zp.shape) == ("I8", (1, 5120), "Q4NX", (32, 256))
    # The min slot: a negative scaled min for I8, a positive unscaled zero point for Q4NX.
    assert (i8.offset < 0).mean() > 0.9 and (zp.offset > 0).all() and zp.offset.max() <= 15
    # Read with the other codec's formula, the bytes decode to something else.
    wrong = q4nx.Quantized("Q4NX", i8.q, i8.scale, i8.offset).dequant()
    assert np.abs(wrong - w).max() > 10 * np.abs(i8.dequant() - w).max()
    with pytest.raises(ValueError, match="logical shape"):
        q4nx.dequant_entry(e_i8)


def test_shapes_that_do_not_fit_blocks_are_refused() -> None:
    with pytest.raises(ValueError, match="multiple of 32 and columns of 256"):
        q4nx.pack_blocks(q4nx.quantize(_weights(32, 288)))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_quant_model(tmp_path_factory.mktemp("quant-llama"), "llama")


@pytest.mark.parametrize("codec", q4nx.CODECS)
def test_bundle_keeps_plain_tensors_byte_identical(tiny: Path, tmp_path: Path, codec: q4nx.Codec) -> None:
    ckpt = Checkpoint(tiny)
    bundle = Bundle(pack_bundle(ckpt, tmp_path / "model.q4nx", PackOptions(codec=codec)))
    plain = [n for n in ckpt.names() if n.endswith("norm.weight") or n.endswith("embed_tokens.weight")]
    for name in plain:
        assert bundle.file.entry(name).data == ckpt.array(name).tobytes()
    assert bundle.codec("lm_head.weight") == codec  # the tied head's quantized copy
    assert "lm_head.weight" not in ckpt


@pytest.mark.parametrize("codec", q4nx.CODECS)
def test_fixture_module_reads_our_bundle_as_our_dequant(tiny: Path, tmp_path: Path, codec: q4nx.Codec) -> None:
    llms = assemble_tree(tmp_path / "T")
    ckpt = Checkpoint(tiny)
    path = pack_bundle(ckpt, tmp_path / "model.q4nx", PackOptions(codec=codec))
    ours = Bundle(path)
    with imported(llms / "llama32_1b_q4nx" / "llama32_1b_q4nx_weights.py") as mod:
        model = mod.Q4nxModel(str(tmp_path))
        for layer in range(2):
            got = model.layer_weights(layer)
            for key, (proj, m, k) in mod.Q4nxModel._PROJ.items():
                want = ours.dequant(f"model.layers.{layer}.{proj}.weight", m, k).T.astype(bfloat16)
                np.testing.assert_array_equal(got[key], want, err_msg=f"layer {layer} {key}")
        embed, norm, head = model.embed_norm_lmhead()
        np.testing.assert_array_equal(embed, ckpt.f32("model.embed_tokens.weight"))


@pytest.mark.skipif(mlir_air() is None, reason="PHASE0_MLIR_AIR (a fetched mlir-air programming_examples) is not set")
@pytest.mark.parametrize("codec", q4nx.CODECS)
def test_upstream_loader_reads_our_bundle_as_our_dequant(tiny: Path, tmp_path: Path, codec: q4nx.Codec) -> None:
    tree = mlir_air()
    assert tree is not None
    ckpt = Checkpoint(tiny)
    ours = Bundle(pack_bundle(ckpt, tmp_path / "model.q4nx", PackOptions(codec=codec)))
    with imported(tree / "llms" / "llama32_1b_q4nx" / "llama32_1b_q4nx_weights.py") as mod:
        theirs = mod.Q4nxModel(str(tmp_path / "model.q4nx"))
        for name, (m, k) in reference_shapes(ckpt).items():
            np.testing.assert_array_equal(theirs.dequant(name, m, k), ours.dequant(name, m, k), err_msg=name)
        dims = {
            "q": (256, 256),
            "k": (128, 256),
            "v": (128, 256),
            "o": (256, 256),
            "up": (512, 256),
            "gate": (512, 256),
            "down": (256, 512),
        }
        got = theirs.layer_weights(1, dims)
        np.testing.assert_array_equal(
            got["down"], ours.dequant("model.layers.1.mlp.down_proj.weight", 256, 512).T.astype(bfloat16)
        )


def test_stats_name_the_classes_by_their_numbers() -> None:
    from phase0_testmodels.quant.stats import tensor_stats

    w = _weights(64, 512)
    clean = tensor_stats(w, q4nx.quantize(w).dequant())
    doubled = q4nx.quantize(w)
    doubled = q4nx.Quantized("I8", doubled.q, doubled.scale * 2, doubled.offset)
    twice = tensor_stats(w, doubled.dequant())
    assert clean.cosine > 0.99 and clean.max_half_steps < 1.1 and clean.frac_beyond_half < 0.01
    assert 1.8 < twice.std_ratio < 2.2 and twice.max_half_steps > 10
    random = tensor_stats(w, _weights(64, 512, seed=1))
    assert abs(random.cosine) < 0.1 and 0.9 < random.std_ratio < 1.1
