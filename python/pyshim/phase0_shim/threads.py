"""How many CPU threads torch may use while phase0 records the reference.

A recording is ~160 single-token decode steps. Each step runs a few hundred
OpenMP-parallel ops, and every one ends at a barrier that waits for all of
torch's threads. With one thread per core (torch's default) any other busy
process on the machine deschedules one of them and the barrier stalls for a
scheduler time slice. How much that costs depends on how long the ops are:

- a small model's ops take microseconds, so the stalls are the step: on a
  loaded 2-core machine a SmolLM2-135M step took 0.03-1.8 s instead of
  ~40 ms. Below LARGE_MODEL_PARAMETERS one CPU is left to everything else;
- a large model's matmuls stream tens of megabytes of weights each, so a
  stall is a small part of an op and the second core is worth more than the
  stalls cost: the Llama-3.2-3B shape decodes 1.4-1.9x faster on two threads
  than on one on the 2-core machine, quiet or lightly loaded (a process
  spinning on one core beside it turns that into 1.4-1.7x slower). From
  LARGE_MODEL_PARAMETERS on, torch's own count is used.

The count depends only on the machine (its CPUs and OMP_NUM_THREADS) and on
the model's parameter count, never on momentary load, so re-recording the
same model on the same machine reproduces the same bits.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# Models with at least this many parameters record on torch's own thread
# count; smaller ones leave a CPU free. Measured on the shared 2-core machine
# (docs/BENCHMARKS.md): at background load ~3, two threads decoded a
# Llama-3.2-1B-shaped model (1.5 B) 3x slower than one, and the Llama-3.2-3B
# shape (3.2 B) 1.4-1.9x faster.
LARGE_MODEL_PARAMETERS = 2_000_000_000


def recording_threads(torch_default: int, cpus: int, parameters: int) -> int:
    """Threads for recording a model of ``parameters`` parameters.

    Never more than torch's own count (which honours OMP_NUM_THREADS) nor than
    the process's CPUs; a small model leaves one of those CPUs free. At least one.
    """
    ceiling = min(torch_default, cpus)
    if parameters >= LARGE_MODEL_PARAMETERS:
        return max(1, ceiling)
    return max(1, min(ceiling, cpus - 1))


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
