"""A NaN or Inf in a tensor the quantized loader returns (or in the
reference) is that tensor's problem, named; it never reaches the statistics,
whose JSON answer would fail (``allow_nan=False``) and blame the whole op."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

from phase0_shim.optypes import QuantBound
from phase0_shim.quant.reading import Reference
from phase0_shim.quant.stats import kept_facts, projection_facts


def _reference(tmp_path: Path, norm: np.ndarray, proj: np.ndarray) -> Reference:
    save_file({"norm": norm.astype(ml_dtypes.bfloat16), "proj": proj.astype(ml_dtypes.bfloat16)}, str(tmp_path / "model.safetensors"))
    return Reference(tmp_path)


def test_nonfinite_is_the_tensors_problem(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    norm = rng.standard_normal(64).astype(np.float32)
    proj = rng.standard_normal((32, 64)).astype(np.float32)
    ref = _reference(tmp_path, norm, proj)
    bound: QuantBound = {"group": 32, "levels": 7, "symmetric": True, "slack": 0.0}

    bad_norm = norm.astype(ml_dtypes.bfloat16)
    bad_norm[3] = np.nan
    fact = kept_facts(0, "attn_norm", bad_norm, ref, "norm")
    assert fact["problem"] == "the loader's tensor holds 1 NaN or Inf values of 64"
    json.dumps(fact, allow_nan=False)

    bad_proj = proj.T.copy()
    bad_proj[0, :2] = np.inf
    fact = projection_facts(0, "wq", bad_proj, ref, "proj", None, bound)
    assert fact["problem"] == "the loader's tensor holds 2 NaN or Inf values of 2048"
    json.dumps(fact, allow_nan=False)

    clean = projection_facts(0, "wq", proj.T.copy(), ref, "proj", None, bound)
    assert "problem" not in clean and clean["stats"]["n"] == 2048


def test_a_transposed_view_is_counted_without_a_copy() -> None:
    """A head the loader returns [out, in] is judged as a projection through
    its transposed view: the NaN/Inf count is the same as the array's."""
    from phase0_shim.quant.stats import _nonfinite

    a = np.zeros((64, 32), dtype=np.float32)
    a[3, 5], a[60, 31] = np.nan, np.inf
    assert _nonfinite(a.T) == _nonfinite(a) == 2
