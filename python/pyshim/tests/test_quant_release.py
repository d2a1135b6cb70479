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
