"""Clean real and real-shaped tensors through the worker's own gate 1 statistics.

Bench-only. ``quant_calibration`` measures with the packers' own statistics;
this runs the very sums quantized gate 1's worker computes
(``phase0_shim.quant.stats_io``, the loader's (in, out) layout against the
reference's [out, in], the format's bound) on each clean format round trip,
and prints per format the range of what Go judges (cosine, relative L2, std
ratio, share beyond the bound), for checking the limits in ``gate/quant/*.go``
against: a limit a clean tensor breaks is a bug. A grid shifted off the
checkpoint's own (SmolLM2's ``shift16``) is judged on its own groups, as a
loader's quantizer groups from column 0.

    python -m phase0_benchmodels.quant_worker_stats [--smollm2 DIR] [--shaped DIR] [--layers 0,7,15]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from phase0_benchmodels.quant_calibration import FORMAT, FORMATS, awq_group, layer_names, roundtrip
from phase0_shim.optypes import QuantBound, QuantStats
from phase0_shim.quant.stats import stats_io
from phase0_testmodels.quant.st import Checkpoint

# The bound each format's Go side sends (gate/quant/*.go Bound()): levels 15 for
# the affine formats, 8 for Q4_0's absmax/8; slack 1/128 of the group's absmax.
LEVELS = {"I8": 15, "Q4NX": 15, "Q4_0": 8, "AWQ": 15}


def metrics(s: QuantStats) -> tuple[float, float, float, float]:
    """(cosine, relative L2, std ratio, share beyond the bound), as quant.Of computes them."""
    n = s["n"]
    cos = s["sum_xy"] / math.sqrt(s["sum_xx"] * s["sum_yy"])
    rel = math.sqrt(s["sum_dd"] / s["sum_yy"])
    vx = s["sum_xx"] / n - (s["sum_x"] / n) ** 2
    vy = s["sum_yy"] / n - (s["sum_y"] / n) ** 2
    return cos, rel, math.sqrt(vx / vy), s["beyond_bound"] / n


def measure(label: str, ck: Checkpoint, layers: Sequence[int], *, blocks: bool, shift: int) -> None:
    for fmt in FORMATS:
        rows = []
        for layer in layers:
            for name in layer_names(layer).values():
                w = ck.f32(name)
                group = awq_group(w.shape[1]) if fmt == "AWQ" else FORMAT[fmt].group
                if w.shape[1] % group or (blocks and fmt in ("I8", "Q4NX") and (w.shape[0] % 32 or w.shape[1] % 256)):
                    continue
                deq = roundtrip(fmt, w, blocks=blocks, shift=shift)
                bound: QuantBound = {"group": group, "levels": LEVELS[fmt], "symmetric": fmt == "Q4_0", "slack": 1 / 128}
                x = np.ascontiguousarray(np.roll(deq, -shift, axis=1).T)
                rows.append(metrics(stats_io(x, np.roll(w, -shift, axis=1), bound)))
        if not rows:
            continue
        cols = list(zip(*rows))
        ranges = " ".join(
            f"{k} {min(c):.4f}-{max(c):.4f}" for k, c in zip(("cosine", "rel_l2", "std_ratio"), cols[:3])
        )
        print(f"{label:18s} {fmt:5s} {len(rows):3d} tensors: {ranges} beyond {min(cols[3]):.3%}-{max(cols[3]):.3%}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m phase0_benchmodels.quant_worker_stats", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smollm2", type=Path, default=Path.home() / ".cache/phase0/models/SmolLM2-135M-Instruct")
    parser.add_argument("--shaped", type=Path, help="a real-shaped Llama-3.2-1B folder (python -m phase0_benchmodels.shaped)")
    parser.add_argument("--layers", default="0,7,15", help="layers of the shaped model to measure")
    ns = parser.parse_args(argv)
    if ns.shaped:
        measure("llama1b-shaped", Checkpoint(ns.shaped), [int(x) for x in ns.layers.split(",")], blocks=True, shift=0)
    if ns.smollm2.is_dir():
        smol = Checkpoint(ns.smollm2)
        every = list(range(0, int(smol.config()["num_hidden_layers"]), 3))
        measure("smollm2 shift16", smol, every, blocks=False, shift=16)
        measure("smollm2 aligned", smol, every, blocks=False, shift=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
