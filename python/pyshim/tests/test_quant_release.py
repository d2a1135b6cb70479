"""Quantized gate 1 drops a loader's mapped bundle pages from the worker."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from phase0_shim.quant.reading import release_mapped


def _rss_kb(path: Path) -> int:
    """This process's resident kB of its mappings of path (/proc/self/smaps)."""
    target, total, inside = os.path.realpath(path), 0, False
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                inside = len(fields) >= 6 and fields[5] == target
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_release_mapped_drops_a_read_only_mapping_and_keeps_its_values(tmp_path: Path) -> None:
    data = np.arange(8 << 20, dtype=np.uint8)  # 8 MiB
    path = tmp_path / "model.q4nx"
    data.tofile(path)
    link = tmp_path / "blobs"
    link.mkdir()
    (tmp_path / "snap").mkdir()
    os.replace(path, link / "abc")
    (tmp_path / "snap" / "model.q4nx").symlink_to(link / "abc")  # as in an HF cache
    mm = np.memmap(tmp_path / "snap" / "model.q4nx", dtype=np.uint8, mode="r")
    assert int(mm.sum(dtype=np.int64)) == int(data.sum(dtype=np.int64))  # every page touched
    before = _rss_kb(link / "abc")
    assert before >= 7 << 10
    writable = np.memmap(tmp_path / "scratch", dtype=np.uint8, mode="w+", shape=(1 << 20,))
    writable[:] = 7
    advised = release_mapped(tmp_path / "snap")
    assert advised >= 8 << 20
    assert _rss_kb(link / "abc") < before // 4
    assert np.array_equal(np.asarray(mm[:4096]), data[:4096]) and int(mm[-1]) == int(data[-1])
    # A writable mapping of a file in the folder (scratch, its only file) is never dropped.
    assert release_mapped(tmp_path) == 0 and int(writable.sum(dtype=np.int64)) == 7 << 20


def test_a_reference_tensor_read_a_chunk_at_a_time_holds_one_chunk(tmp_path: Path) -> None:
    """kept_facts drops each chunk of the reference's rows once it has read
    it (Reference.release_rows): the tensor's pages leave the process while
    the check runs, and every value still reads right."""
    import ml_dtypes
    from safetensors.numpy import save_file

    from phase0_shim.quant.reading import Reference
    from phase0_shim.quant.stats import kept_facts

    rng = np.random.default_rng(0)
    y = rng.standard_normal((8192, 1024)).astype(ml_dtypes.bfloat16)  # 16 MiB, 2 chunks of 4096 rows
    save_file({"lead": np.ones(3, dtype=np.float32), "embed": y}, str(tmp_path / "model.safetensors"))
    ref = Reference(tmp_path)
    released: list[tuple[int, int]] = []
    release_rows = ref.release_rows

    def spy(name: str, start: int, end: int) -> None:
        released.append((start, end))
        release_rows(name, start, end)
        assert _rss_kb(tmp_path / "model.safetensors") < 9 << 10  # never the whole 16 MiB

    ref.release_rows = spy  # type: ignore[method-assign]
    fact = kept_facts(-1, "embed_table", y.astype(np.float32), ref, "embed")
    assert fact["differing"] == 0 and "problem" not in fact
    # Two passes (the NaN/Inf count, the bit comparison), each chunk dropped after it.
    assert released == [(0, 4096), (4096, 8192)] * 2
    assert _rss_kb(tmp_path / "model.safetensors") < 1 << 10
    assert np.array_equal(ref.get("embed").view(np.uint16), y.view(np.uint16))
    assert ref.get("lead").tolist() == [1.0, 1.0, 1.0]  # the page it shares with the first rows


def test_release_rows_of_a_split_part_stays_within_it(tmp_path: Path) -> None:
    """A family's split part (Phi's k in qkv_proj) releases its own rows of the fused tensor."""
    from phase0_shim.quant.families import FamilyReference
    from phase0_shim.quant.reading import Reference

    calls: list[tuple[str, int, int]] = []

    class Recording(Reference):
        def __init__(self) -> None:  # noqa: no file: only the shapes the split reads
            pass

        def has(self, name: str) -> bool:
            return name.endswith(("qkv_proj.weight", "o_proj.weight"))

        def shape(self, name: str) -> list[int]:
            return [24 + 2 * 8, 16] if name.endswith("qkv_proj.weight") else [16, 24]

        def release_rows(self, name: str, start: int, end: int) -> None:
            calls.append((name, start, end))

    fam = FamilyReference(Recording(), "phi3")
    fam.release_rows("model.layers.0.self_attn.k_proj.weight", 0, 100)
    fam.release_rows("model.layers.0.self_attn.v_proj.weight", 2, 4)
    assert calls == [("model.layers.0.self_attn.qkv_proj.weight", 24, 32), ("model.layers.0.self_attn.qkv_proj.weight", 34, 36)]
