"""phase0_shim.stheader reads a safetensors header with Go's bounds: real files, well-formed and malformed."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phase0_shim.quant.reading import Reference
from phase0_shim.stheader import MAX_HEADER_SIZE, HeaderError, read_header


def _write(path: Path, header: Any, data: bytes = b"", *, length: int | None = None, raw: bytes | None = None) -> Path:
    """A safetensors file whose header is ``header`` (JSON, or ``raw`` bytes
    as they are), its 8-byte length ``length`` when given (else the true one)."""
    blob = raw if raw is not None else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob) if length is None else length) + blob + data)
    return path


def _tensor(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def test_a_file_written_by_safetensors_reads_as_the_library_reads_it(tmp_path: Path) -> None:
    from safetensors import safe_open
    from safetensors.numpy import save_file

    path = tmp_path / "model.safetensors"
    save_file({"b": np.ones((3, 5), np.float32), "a": np.zeros(7, np.float16), "s": np.array(2, np.int64)}, str(path), metadata={"format": "pt"})
    h = read_header(path)
    assert h.metadata == {"format": "pt"}
    with safe_open(str(path), "np") as f:
        assert sorted(h.tensors) == sorted(f.keys())
        for name in f.keys():
            e = h.tensors[name]
            got = np.frombuffer(path.read_bytes()[h.data_start + e.begin : h.data_start + e.end], dtype=f.get_tensor(name).dtype).reshape(e.shape)
            np.testing.assert_array_equal(got, f.get_tensor(name))
    assert h.tensors["s"].shape == () and h.tensors["s"].end - h.tensors["s"].begin == 8


def test_the_header_length_is_capped_before_the_file_is_read(tmp_path: Path) -> None:
    # Beyond the cap: refused by the cap (as Go checks it first), whatever the file's size.
    path = _write(tmp_path / "big.safetensors", {}, length=MAX_HEADER_SIZE + 1)
    with pytest.raises(HeaderError, match=rf"^{path}: header length 100000001 exceeds the 100000000-byte cap$"):
        read_header(path)
    # Under the cap but beyond the file: a truncated download.
    path = _write(tmp_path / "short.safetensors", {}, length=4096)
    with pytest.raises(HeaderError, match=rf"^{path}: header length 4096 runs past the end of the 10-byte file$"):
        read_header(path)
    path = tmp_path / "tiny.safetensors"
    path.write_bytes(b"\x01\x00")
    with pytest.raises(HeaderError, match=rf"^{path}: file is 2 bytes, too short for the 8-byte header length$"):
        read_header(path)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"a": "\xff\xfe"}', r"header is not valid UTF-8 \(byte 15\)"),
        (b'{"a": {"dtype": "F32",', r"header is not valid JSON: Expecting property name enclosed in double quotes at header byte 22"),
        (b"[1, 2]", r"header starts with b'\[', want '\{'"),
        (b'{"x": NaN}', r"header holds NaN, which is not JSON"),
        (b"{}", None),
    ],
)
def test_a_header_that_is_not_utf8_json_names_the_file(tmp_path: Path, raw: bytes, message: str | None) -> None:
    path = _write(tmp_path / "bad.safetensors", None, raw=raw)
    if message is None:
        assert read_header(path).tensors == {}
        return
    with pytest.raises(HeaderError, match=rf"^{path}: {message}$"):
        read_header(path)


@pytest.mark.parametrize(
    ("tensors", "data", "message"),
    [
        # Two tensors claiming the same bytes.
        ({"a": _tensor("F32", [2], 0, 8), "b": _tensor("F32", [2], 4, 12)}, 12, r"tensor 'b': data \[4, 12\] overlaps tensor 'a' ending at 8"),
        # Offsets past the end of the file: what a truncated download looks like.
        (
            {"a": _tensor("F32", [2], 0, 8), "b": _tensor("F32", [4], 8, 24)},
            12,
            r"tensor 'b': data \[8, 24\] runs past the end: tensor data ends at 24 but the file has only 12 data bytes \(truncated\)",
        ),
        (
            {"a": _tensor("F32", [2], 0, 8), "b": _tensor("F32", [2], 12, 20)},
            20,
            r"tensor 'b': gap: data begins at 12 but the previous tensor ends at 8",
        ),
        ({"a": _tensor("F32", [2], 0, 8)}, 10, r"2 trailing bytes after the tensor data \(data ends at 8 of 10\)"),
        # A span that is not what dtype × shape needs.
        ({"a": _tensor("BF16", [3, 4], 0, 20)}, 20, r"tensor 'a': shape \[3, 4\] of BF16 needs 24 bytes but data_offsets \[0, 20\] span 20"),
        ({"a": _tensor("F32", [2], 8, 0)}, 8, r"tensor 'a': data_offsets \[8, 0\]: begin is after end"),
        ({"a": _tensor("F4", [2], 0, 1)}, 1, r'tensor \'a\': unknown dtype "F4"'),
        ({"a": _tensor("F32", [-1], 0, 4)}, 4, r"tensor 'a': shape is \[-1\], want an array of non-negative integers"),
        ({"a": _tensor("F32", [True], 0, 4)}, 4, r"tensor 'a': shape is \[true\], want an array of non-negative integers"),
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}, 4, r"tensor 'a': data_offsets has 3 values, want \[begin, end\]"),
        ({"a": {"dtype": "F32", "shape": [1]}}, 4, r"tensor 'a': missing field data_offsets"),
        ({"a": {**_tensor("F32", [1], 0, 4), "offset": 0}}, 4, r"tensor 'a': unknown field 'offset' \(want dtype, shape, data_offsets\)"),
        ({"__metadata__": {"format": 1}}, 0, r'__metadata__ is \{"format": 1\}, want an object of strings'),
    ],
)
def test_offsets_inside_the_file_and_what_dtype_and_shape_need(tmp_path: Path, tensors: dict[str, Any], data: int, message: str) -> None:
    path = _write(tmp_path / "model.safetensors", tensors, bytes(data))
    with pytest.raises(HeaderError, match=rf"^{path}: {message}$"):
        read_header(path)


def test_a_repeated_key_is_refused(tmp_path: Path) -> None:
    raw = b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}'
    path = _write(tmp_path / "model.safetensors", None, bytes(8), raw=raw)
    with pytest.raises(HeaderError, match=rf"^{path}: key 'a' appears twice in the header$"):
        read_header(path)


def test_an_extra_dtype_is_sized_by_its_reader(tmp_path: Path) -> None:
    """A FastFlowLM bundle's Q4NX entries: the caller says what a shape takes."""
    q4nx = {"Q4NX": lambda shape: shape[0] * shape[1] // 32 * 20 if len(shape) == 2 and shape[1] % 256 == 0 else None}
    path = _write(tmp_path / "model.q4nx", {"w": _tensor("Q4NX", [32, 256], 0, 5120)}, bytes(5120))
    assert read_header(path, q4nx).tensors["w"].dtype == "Q4NX"
    with pytest.raises(HeaderError, match=r"unknown dtype \"Q4NX\""):
        read_header(path)
    path = _write(tmp_path / "odd.q4nx", {"w": _tensor("Q4NX", [32, 100], 0, 5120)}, bytes(5120))
    with pytest.raises(HeaderError, match=rf"^{path}: tensor 'w': shape \[32, 100\] cannot hold Q4NX data$"):
        read_header(path, q4nx)


def test_the_reference_reader_refuses_a_lying_shard_naming_it(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    good = tmp_path / "model-00001-of-00002.safetensors"
    save_file({"model.norm.weight": np.ones(4, np.float32)}, str(good))
    bad = _write(tmp_path / "model-00002-of-00002.safetensors", {"lm_head.weight": _tensor("F32", [4, 4], 0, 64)}, bytes(32))
    index = {"weight_map": {"model.norm.weight": good.name, "lm_head.weight": bad.name}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(HeaderError, match=rf"^{bad}: tensor 'lm_head.weight': data \[0, 64\] runs past the end"):
        Reference(tmp_path)
    bad.unlink()
    save_file({"lm_head.weight": np.full((4, 4), 2, np.float32)}, str(bad))
    ref = Reference(tmp_path)
    assert ref.shape("lm_head.weight") == [4, 4] and float(ref.get("lm_head.weight").sum()) == 32.0
