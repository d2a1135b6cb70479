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


def test_the_count_is_made_a_chunk_of_rows_at_a_time() -> None:
    """Over many chunks the count is the whole tensor's, and each chunk of
    rows is told once, in order; a transposed view is told nothing (its
    rows are not the tensor's)."""
    from phase0_shim.quant.stats import _nonfinite

    a = np.zeros((10000, 1024), dtype=ml_dtypes.bfloat16)  # 4096 rows a chunk
    a[0, 0], a[4095, 1023], a[4096, 0], a[9999, 5] = np.nan, np.inf, -np.inf, np.nan
    told: list[tuple[int, int]] = []
    assert _nonfinite(a, lambda s, e: told.append((s, e))) == 4
    assert told == [(0, 4096), (4096, 8192), (8192, 10000)]
    told.clear()
    assert _nonfinite(np.asarray(a.T), None) == 4 and _nonfinite(a.T, lambda s, e: told.append((s, e))) == 4 and told == []
