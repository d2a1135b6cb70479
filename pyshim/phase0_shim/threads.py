"""How many CPU threads torch may use while phase0 records the reference.

A recording is ~160 single-token decode steps. Each step runs a few hundred
tiny OpenMP-parallel ops, and every one ends at a barrier that waits for all
of torch's threads. With one thread per core (torch's default) any other busy
process on the machine deschedules one of them and every barrier stalls for a
scheduler time slice: on a loaded 2-core machine a SmolLM2-135M step took
0.03-1.8 s instead of ~40 ms. One CPU is therefore left to everything else.

The count depends only on the machine (and OMP_NUM_THREADS), never on its
momentary load, so re-recording on the same machine reproduces the same bits.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


def recording_threads(torch_default: int, cpus: int) -> int:
    """Threads for a recording: at most torch's own count (which honours
    OMP_NUM_THREADS), leaving one of the process's CPUs free; at least one."""
    return max(1, min(torch_default, cpus - 1))


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextmanager
def torch_threads(n: int) -> Iterator[int]:
    """Run the block with torch limited to ``n`` intra-op threads, then restore
    the previous count (the worker serves other requests afterwards)."""
    import torch

    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(previous)
