"""FastFlowLM-style Q4NX bundles of the real-shaped Gemma 3 4B and Phi-4-mini, clean and broken.

Packed by our own packers (``phase0_testmodels.quant.families``) from the
checkpoints of ``phase0_benchmodels.shaped``, once: a bundle lives in
``<checkpoint>-q4nx-<key>/<case>/model.q4nx`` beside its checkpoint, the key
hashing the packers' sources, and is published by an atomic rename. The
broken cases are the issue's held-out checks: a doubled scale in one Gemma
layer (``w_down`` of ``GEMMA_BROKEN_LAYER``) and gate/up swapped in one Phi
layer (``PHI_BROKEN_LAYER``).

    python -m phase0_benchmodels.shaped_bundles gemma-3-4b|phi-4-mini [--case clean] [--cache DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any, Sequence

from phase0_benchmodels.shaped import DEFAULT_CACHE, shaped

GEMMA_BROKEN_LAYER = 5  # a global layer ((5 + 1) % 6 == 0)
PHI_BROKEN_LAYER = 7


def _options(shape: str, case: str) -> Any:
    from phase0_testmodels.quant.bundle import PackOptions
    from phase0_testmodels.quant.families import GemmaOptions, PhiOptions

    down = f"model.layers.{GEMMA_BROKEN_LAYER}.mlp.down_proj.weight"

    def doubled(name: str, qt: Any) -> Any:
        return dataclasses.replace(qt, scale=qt.scale * 2) if name == down else qt

    cases: dict[str, dict[str, Any]] = {
        "gemma-3-4b": {"clean": GemmaOptions(), "doubled_scale": GemmaOptions(pack=PackOptions(grid_hook=doubled))},
        "phi-4-mini": {"clean": PhiOptions(), "gate_up_swapped": PhiOptions(gate_up_order={PHI_BROKEN_LAYER: ("up", "gate")})},
    }
    if shape not in cases or case not in cases[shape]:
        raise ValueError(f"no bundle {shape!r} / {case!r}; known: " + "; ".join(f"{s}: {', '.join(c)}" for s, c in cases.items()))
    return cases[shape][case]


def packers_key() -> str:
    import phase0_testmodels.quant as packers

    sources = sorted(Path(packers.__file__).parent.glob("*.py"))
    return hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]


def shaped_bundle(shape: str, case: str = "clean", cache: Path | str = DEFAULT_CACHE) -> Path:
    """The folder holding ``shape``'s ``case`` bundle as ``model.q4nx``, packed on first use."""
    from phase0_testmodels.quant.families import pack_gemma3_bundle, pack_phi3_bundle

    opts = _options(shape, case)
    ref = shaped(shape, cache)
    out = ref.parent / f"{ref.name}-q4nx-{packers_key()}" / case
    bundle = out / "model.q4nx"
    if bundle.is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    tmp = bundle.with_name(f"model.q4nx.tmp{os.getpid()}")
    pack = pack_gemma3_bundle if shape == "gemma-3-4b" else pack_phi3_bundle
    pack(ref, tmp, opts)
    os.replace(tmp, bundle)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phase0_benchmodels.shaped_bundles", description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=["gemma-3-4b", "phi-4-mini"])
    parser.add_argument("--case", default="clean")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ns = parser.parse_args(argv)
    print(shaped_bundle(ns.shape, ns.case, ns.cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
