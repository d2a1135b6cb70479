"""Functions the bridge tests call through the embedded interpreter."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys


def echo(arg_json: str) -> str:
    """Return the argument, parsed and re-encoded, so Go sees a real round trip."""
    return json.dumps({"echo": json.loads(arg_json)})


def interpreter(arg_json: str) -> str:
    """Describe the running interpreter, and whether module `probe` can be imported."""
    probe = json.loads(arg_json).get("probe", "")
    return json.dumps(
        {
            "version": list(sys.version_info[:3]),
            "probe_found": bool(probe) and importlib.util.find_spec(probe) is not None,
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "executable": sys.executable,
            "isolated": sys.flags.isolated,
            "utf8_mode": sys.flags.utf8_mode,
            "encodings": [sys.getfilesystemencoding(), sys.stdout.encoding, sys.stderr.encoding],
            "path": sys.path,
        }
    )


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
    """Return a vocabulary-sized float32 vector, like HfRunner's logits_at_pred.

    The vector is cached so the benchmark measures the bridge, not NumPy.
    """
    n = int(json.loads(arg_json)["n"])
    return json.dumps({"top1": n - 1}), _ramp(n)


def float64_array(arg_json: str) -> tuple[str, object]:
    import numpy as np

    return "{}", np.zeros(3, dtype=np.float64)


def strided_array(arg_json: str) -> tuple[str, object]:
    import numpy as np

    return "{}", np.arange(8, dtype=np.float32)[::2]


def not_a_buffer(arg_json: str) -> tuple[str, object]:
    return "{}", [1.0, 2.0]


def wrong_type(arg_json: str) -> int:
    return 42


def raise_value_error(arg_json: str) -> str:
    def inner(value: int) -> None:
        raise ValueError(f"bad value {value}")

    inner(7)
    return "{}"


class ShimError(Exception):
    """An exception type defined outside builtins."""


def raise_custom(arg_json: str) -> str:
    raise ShimError("custom failure")


def system_exit(arg_json: str) -> str:
    sys.exit(4)


def torch_info(arg_json: str) -> str:
    import torch

    t = torch.arange(4, dtype=torch.float32)
    return json.dumps({"version": torch.__version__, "sum": float(t.sum()), "file": torch.__file__})


not_callable = 3
