"""Ops the worker tests run in a child process."""

from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
import time


def echo(arg_json: str) -> str:
    return json.dumps({"echo": json.loads(arg_json)})


def bit_pattern(arg_json: str) -> tuple[str, object]:
    """Return n float32 values whose bits are i * 2654435761 mod 2**32 (NaN payloads included)."""
    import numpy as np

    n = int(json.loads(arg_json)["n"])
    bits = np.arange(n, dtype=np.uint32) * np.uint32(2654435761)
    return json.dumps({"n": n}), bits.view(np.float32)


@functools.cache
def _ramp(n: int) -> object:
    import numpy as np

    return np.linspace(-10.0, 10.0, n, dtype=np.float32)


def logits(arg_json: str) -> tuple[str, object]:
    """A vocabulary-sized float32 vector, cached so benchmarks measure the transport."""
    n = int(json.loads(arg_json)["n"])
    return json.dumps({"top1": n - 1}), _ramp(n)


def raise_value_error(arg_json: str) -> str:
    def inner(value: int) -> None:
        raise ValueError(f"bad value {value}")

    inner(7)
    return "{}"


def not_json(arg_json: str) -> str:
    return "this is not json"


def noisy(arg_json: str) -> str:
    """Write far more than the kept tail to stdout and stderr, through Python and raw fds."""
    lines = int(json.loads(arg_json)["lines"])
    for i in range(lines):
        print(f"stdout line {i} \x00\x01\xff garbage", flush=True)
        print(f"stderr line {i}", file=sys.stderr, flush=True)
    os.write(1, b"\x05\x00\x00\x00raw frame-like bytes on fd 1\n")
    os.write(2, b"noisy: END MARKER\n")
    return json.dumps({"lines": lines})


def _announce(what: str) -> None:
    print(f"p0test: about to {what}", file=sys.stderr, flush=True)


def abort(arg_json: str) -> str:
    _announce("abort")
    os.abort()


def segfault(arg_json: str) -> str:
    _announce("segfault")
    ctypes.string_at(0)
    return "{}"


def exit3(arg_json: str) -> str:
    _announce("exit with status 3")
    os._exit(3)


def exit0(arg_json: str) -> str:
    _announce("exit with status 0")
    os._exit(0)


def sigkill_self(arg_json: str) -> str:
    """Look like the kernel's OOM killer: SIGKILL from outside the parent."""
    _announce("SIGKILL itself")
    os.kill(os.getpid(), signal.SIGKILL)
    return "{}"


def spawn_and_sleep(arg_json: str) -> str:
    """Start a grandchild, record its pid, then hang past any short timeout."""
    pid_file = json.loads(arg_json)["pid_file"]
    child = subprocess.Popen(["sleep", "600"])
    tmp = pid_file + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(str(child.pid))
    os.replace(tmp, pid_file)
    _announce("sleep")
    time.sleep(600)
    return "{}"


def torch_sum(arg_json: str) -> tuple[str, object]:
    """Import torch in the child and hand a tensor back through NumPy."""
    import torch

    t = torch.arange(int(json.loads(arg_json)["n"]), dtype=torch.float32)
    return json.dumps({"torch": torch.__version__, "sum": float(t.sum())}), t.numpy()
