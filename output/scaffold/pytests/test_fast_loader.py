"""The generated loader's fast transpose gives the bytes of the straightforward one.

load_weights transposes projections with _transposed (two cache-friendly passes
over raw integers, issue 22) instead of np.ascontiguousarray(t.T). These tests
hold it to the straightforward transpose byte for byte, on shapes that are not
multiples of its column groups or row blocks, in every dtype it is given, and
on whole checkpoints of every family with real and odd dimensions.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest
from ml_dtypes import bfloat16
from safetensors import safe_open

from conftest import FAMILIES, Generated, load_generated, save_tiny_model

# (rows, cols) as HF stores projections (out, in): Qwen2.5-0.5B's 896 / 4864,
# Qwen2.5-1.5B's 1536, a vocabulary-sized 151,936-like odd row count, widths
# that are not whole column groups (8 bf16), row counts that are not whole row
# blocks (256), and the degenerate ones.
SHAPES = [
    (896, 4864),
    (4864, 896),
    (1536, 1536),
    (1003, 896),
    (896, 1003),
    (257, 17),
    (300, 1030),
    (7, 3),
    (1, 9),
    (9, 1),
    (0, 16),
    (16, 0),
]


def straightforward(matrix: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(matrix.T)


def assert_same_bytes(ours: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert ours.dtype == expected.dtype, what
    assert ours.shape == expected.shape, what
    assert ours.flags.c_contiguous, f"{what} must be C-contiguous for NPU DMA"
    assert ours.tobytes() == expected.tobytes(), what


def test_transposed_is_one_function_in_every_family(generated: Generated) -> None:
    """Every family's module renders the same _transposed and _Staging: the sweep below runs on one."""
    first = load_generated(FAMILIES[0]).weights
    for name in ("_transposed", "_Staging", "_read_transposed"):
        assert inspect.getsource(getattr(generated.weights, name)) == inspect.getsource(getattr(first, name)), name


@pytest.mark.parametrize("dtype", [bfloat16, np.float16, np.float32, np.float64, np.uint8])
def test_transposed_is_the_straightforward_transpose(dtype: Any) -> None:
    weights = load_generated(FAMILIES[0]).weights
    rng = np.random.default_rng(4)
    staging = weights._Staging()  # one buffer set for every shape, as a loader thread
    for rows, cols in SHAPES:
        matrix = rng.standard_normal((rows, cols)).astype(dtype)
        expected = straightforward(matrix)
        assert_same_bytes(weights._transposed(matrix), expected, f"{dtype} {rows}x{cols}")
        again = weights._transposed(matrix, staging)
        assert_same_bytes(again, expected, f"{dtype} {rows}x{cols}, staged")


def test_transposed_keeps_every_bit_pattern(generated: Generated) -> None:
    """NaN payloads, infinities, -0 and subnormals move as bits, never as numbers."""
    bits = np.arange(1 << 16, dtype=np.uint16).reshape(256, 256)
    matrix = bits.view(bfloat16)
    assert_same_bytes(generated.weights._transposed(matrix), straightforward(matrix), "all bf16 bit patterns")


def test_transposed_of_a_view(generated: Generated) -> None:
    matrix = np.arange(64 * 48, dtype=np.float32).astype(bfloat16).reshape(64, 48)[::2, 8:]
    assert not matrix.flags.c_contiguous
    assert_same_bytes(generated.weights._transposed(matrix), straightforward(matrix), "strided view")


# Odd but valid dimensions for each family: Qwen2.5-0.5B's 896 / 4864,
# Qwen2.5-1.5B's 1536, widths that are not whole column groups (qwen3: emb 100,
# q_dim 78, hidden 250), a vocabulary that is not a multiple of anything, and
# three layers for two or more loader threads.
ODD_DIMENSIONS: Dict[str, Dict[str, int]] = {
    "llama": {"emb_dim": 1536, "n_heads": 12, "head_dim": 128, "n_kv_heads": 4, "hidden_dim": 1000},
    "mistral": {"emb_dim": 200, "n_heads": 5, "head_dim": 40, "n_kv_heads": 1, "hidden_dim": 1000},
    "qwen2": {"emb_dim": 896, "n_heads": 14, "head_dim": 64, "n_kv_heads": 2, "hidden_dim": 4864},
    "qwen3": {"emb_dim": 100, "n_heads": 3, "head_dim": 26, "n_kv_heads": 1, "hidden_dim": 250},
}


@pytest.fixture(scope="module", params=FAMILIES)
def odd_checkpoint(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Generated, Dict[str, Any], Path]:
    gen = load_generated(request.param)
    spec = {**gen.spec, **ODD_DIMENSIONS[request.param], "n_layers": 3, "vocab_size": 1003}
    path = save_tiny_model(spec, tmp_path_factory.mktemp(f"{request.param}_odd"))
    return gen, spec, path


def test_load_weights_is_the_straightforward_loader(odd_checkpoint: tuple[Generated, Dict[str, Any], Path]) -> None:
    gen, spec, path = odd_checkpoint
    fields = ("n_layers", "emb_dim", "n_heads", "head_dim", "n_kv_heads", "hidden_dim", "vocab_size")
    config = gen.weights.LlamaConfig(**{k: spec[k] for k in fields})
    weights = gen.weights.load_weights(str(path), config=config)

    with safe_open(str(path / "model.safetensors"), framework="numpy") as f:
        stored = {name: f.get_tensor(name) for name in f.keys()}
    assert_same_bytes(weights.embed_table, stored[gen.weights.EMBED_TOKENS], "embed_table")
    assert len(weights.layers) == spec["n_layers"]
    for i, layer in enumerate(weights.layers):
        for field in dataclasses.fields(layer):
            _, transpose = gen.weights._HF_LAYER_MAP[gen.weights._HF_SUFFIX_OF_FIELD[field.name]]
            tensor = stored[gen.weights.hf_layer_tensor_name(i, field.name)]
            expected = straightforward(tensor) if transpose else tensor
            assert_same_bytes(getattr(layer, field.name), expected, f"layer {i} {field.name}")


def test_load_weights_float32_is_the_straightforward_loader(odd_checkpoint: tuple[Generated, Dict[str, Any], Path]) -> None:
    gen, spec, path = odd_checkpoint
    fields = ("n_layers", "emb_dim", "n_heads", "head_dim", "n_kv_heads", "hidden_dim", "vocab_size")
    config = gen.weights.LlamaConfig(**{k: spec[k] for k in fields})
    weights = gen.weights.load_weights(str(path), dtype=np.float32, config=config)
    with safe_open(str(path / "model.safetensors"), framework="numpy") as f:
        w_down = f.get_tensor("model.layers.2.mlp.down_proj.weight").astype(np.float32)
    assert_same_bytes(weights.layers[2].w_down, straightforward(w_down), "float32 w_down")
