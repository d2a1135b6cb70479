"""The worker's quantized gate 1 statistics: the fast paths give the plain computation's facts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from phase0_shim.optypes import QuantBound, QuantStats
from phase0_shim.quant.stats import bf16_bits, count_differing, stats_oi, stats_io


@pytest.mark.parametrize(
    ("out", "inp", "group", "levels", "symmetric"),
    [(512, 2048, 32, 15, False), (256, 512, 32, 8, True), (384, 1024, 128, 15, False), (96, 200, 32, 15, False), (2500, 96, 32, 15, False)],
)
def test_stats_in_the_loaders_layout_are_the_transposed_ones(
    out: int, inp: int, group: int, levels: int, symmetric: bool
) -> None:
    rng = np.random.default_rng(out + inp)
    y = (0.02 * rng.standard_normal((out, inp))).astype(bfloat16)  # the reference [out, in]
    noisy = y.astype(np.float32) + 0.0006 * rng.standard_normal((out, inp)).astype(np.float32)
    noisy[::7, ::5] += 0.05  # errors beyond any 4-bit bound in some groups
    x = np.ascontiguousarray(noisy.T.astype(bfloat16))  # the loader's [in, out]
    bound: QuantBound = {"group": group, "levels": levels, "symmetric": symmetric, "slack": 1 / 128}
    want = stats_oi(x.T, y, bound)
    assert (want["beyond_bound"] > 0) == (inp % group == 0)
    for got in (stats_io(x, y, bound), stats_io(x.astype(np.float32), y, bound), stats_io(np.ascontiguousarray(x.T).T, y, bound)):
        assert got["n"] == want["n"] and got["beyond_bound"] == want["beyond_bound"]
        for key in ("sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy", "sum_dd", "max_abs_diff"):
            assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-9), key  # type: ignore[literal-required]


def test_differing_counts_what_bf16_rounding_changes() -> None:
    rng = np.random.default_rng(3)
    y = rng.standard_normal((700, 300)).astype(bfloat16)
    x = y.astype(np.float32)
    assert count_differing(x, y) == 0 and count_differing(y, y) == 0
    x[3, 4] += 1.0
    x[5, 6] = np.nextafter(x[5, 6], np.float32(np.inf))  # rounds back to y's bits
    x[9, 9] = -x[9, 9]
    want = int((bf16_bits(x) != bf16_bits(y)).sum())
    assert want == 2 and count_differing(x, y) == want


def test_a_swapped_block_pair_is_judged_by_how_far_and_where(tmp_path: Path) -> None:
    """One swapped 32x256 block pair: few elements beyond the bound, each far
    beyond it (worst_excess), confined to two blocks that each hold another
    block's values (blocks out of order); a clean pack has none of this."""
    import torch
    from safetensors.torch import save_file

    from phase0_shim.quant.reading import Reference
    from phase0_shim.quant.stats import projection_facts
    from phase0_testmodels.quant import q4nx

    rng = np.random.default_rng(11)
    name = "model.layers.0.mlp.down_proj.weight"
    y = (0.02 * rng.standard_normal((256, 1024))).astype(bfloat16)  # [out, in]: 8 x 4 blocks
    save_file({name: torch.from_numpy(y.view(np.int16)).view(torch.bfloat16)}, str(tmp_path / "model.safetensors"))
    ref = Reference(tmp_path)
    bound: QuantBound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1 / 128, "block_rows": 32, "block_cols": 256}
    clean = q4nx.quantize(y.astype(np.float32)).dequant()
    facts = projection_facts(0, "w_down", np.ascontiguousarray(clean.T).astype(bfloat16), ref, name, None, bound)
    assert facts["stats"]["beyond_bound"] == 0 and facts["stats"]["worst_excess"] == 0 and "blocks" not in facts
    swapped = clean.copy()
    a, b = (slice(32, 64), slice(256, 512)), (slice(160, 192), slice(768, 1024))
    swapped[a], swapped[b] = clean[b], clean[a]
    facts = projection_facts(0, "w_down", np.ascontiguousarray(swapped.T).astype(bfloat16), ref, name, None, bound)
    assert facts["stats"]["beyond_bound"] > 0 and facts["stats"]["worst_excess"] > 4
    assert facts["blocks"] == {"rows": 32, "cols": 256, "total": 32, "beyond": 2, "checked": 2, "moved": 2}


def test_a_codec_mismatch_matches_once_each_groups_offset_is_removed(tmp_path: Path) -> None:
    """Q4NX-codec data (scale*(q - zp)) decoded as I8 (scale*q + min): the
    values are the reference's up to one offset per 32-element group, which
    the group_offset confusion shows (cosine near 1) while the plain cosine
    is near 0; a clean pack matches either way."""
    import torch
    from safetensors.torch import save_file

    from phase0_shim.quant.reading import Reference
    from phase0_shim.quant.stats import projection_facts
    from phase0_testmodels.quant import q4nx

    rng = np.random.default_rng(5)
    name = "model.layers.0.self_attn.v_proj.weight"
    y = (0.02 * rng.standard_normal((256, 512))).astype(bfloat16)
    save_file({name: torch.from_numpy(y.view(np.int16)).view(torch.bfloat16)}, str(tmp_path / "model.safetensors"))
    ref = Reference(tmp_path)
    bound: QuantBound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1 / 128}
    qt = q4nx.quantize(y.astype(np.float32), "Q4NX")

    def cos(s: QuantStats) -> float:
        return float(s["sum_xy"] / np.sqrt(s["sum_xx"] * s["sum_yy"]))

    # The loader's bf16 holds the misread values near the zero point (~7.5),
    # whose rounding (2**-5) costs the centered match some of its cosine.
    for codec, plain, centered in (("Q4NX", 0.99, 0.99), ("I8", None, 0.8)):
        x = q4nx.Quantized(codec, qt.q, qt.scale, qt.offset).dequant()  # type: ignore[arg-type]
        facts = projection_facts(0, "wv", np.ascontiguousarray(x.T).astype(bfloat16), ref, name, None, bound)
        assert cos(facts["confusions"]["group_offset"]) > centered
        if plain is not None:
            assert cos(facts["stats"]) > plain
        else:
            assert abs(cos(facts["stats"])) < 0.2


@pytest.mark.parametrize("group", [32, 24, 5])
def test_group_reduce_is_numpys_reduction(group: int) -> None:
    """A group's max and min by halving (odd widths finish with numpy's
    reduction) are numpy's own, bit for bit."""
    from phase0_shim.quant.stats import _group_reduce

    a = np.random.default_rng(group).standard_normal((7, 4, group)).astype(np.float32)
    assert np.array_equal(_group_reduce(a, np.maximum), a.max(axis=2))
    assert np.array_equal(_group_reduce(a, np.minimum), a.min(axis=2))


def test_zeroed_groups_are_counted_by_output_row(tmp_path: Path) -> None:
    """A row-block whose scale and min are zeroed dequantizes to zeros: the
    facts say how many groups and whole output rows the loader returned as
    zeros, and which rows (from the tensor in either layout); a clean pack,
    and a reference group that is zero itself, give none."""
    import torch
    from safetensors.torch import save_file

    from phase0_shim.quant.reading import Reference
    from phase0_shim.quant.stats import projection_facts
    from phase0_testmodels.quant import q4nx

    rng = np.random.default_rng(13)
    name = "model.layers.0.mlp.up_proj.weight"
    y = (0.02 * rng.standard_normal((256, 512))).astype(bfloat16)  # [out, in]
    y[200, :32] = 0  # a group the reference holds as zeros
    save_file({name: torch.from_numpy(y.view(np.int16)).view(torch.bfloat16)}, str(tmp_path / "model.safetensors"))
    ref = Reference(tmp_path)
    bound: QuantBound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1 / 128}
    qt = q4nx.quantize(y.astype(np.float32))
    clean = qt.dequant()
    assert "zeroed" not in projection_facts(0, "w_up", np.ascontiguousarray(clean.T).astype(bfloat16), ref, name, None, bound)
    scale, offset = qt.scale.copy(), qt.offset.copy()
    scale[32:64], offset[32:64] = 0, 0
    scale[100, 3], offset[100, 3] = 0, 0  # one more group, not a whole row
    x = q4nx.Quantized("I8", qt.q, scale, offset).dequant()
    for layout in (np.ascontiguousarray(x.T), np.ascontiguousarray(x).T):  # [in, out], and an [out, in] array's view
        facts = projection_facts(0, "w_up", layout.astype(bfloat16), ref, name, None, bound)
        assert facts["zeroed"] == {"groups": 32 * 16 + 1, "rows": 32, "first_row": 32, "last_row": 100}
