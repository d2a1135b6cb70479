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


def reuse(arg_json: str) -> str:
    """What phase0_shim.heap.reusing does under the bridge's _phase0_reuse:
    blocks of one size freed and made again, a reused block under np.zeros,
    the cache's bound, and an array made inside freed after the block."""
    import numpy as np

    from phase0_shim import heap

    n = int(json.loads(arg_json)["n"])  # float32 elements, at least 4 MiB
    name = np._core.multiarray.get_handler_name
    facts: dict[str, object] = {"outside_before": name()}
    with heap.reusing(3 * n * 4) as r:
        facts["inside"] = name()
        facts["active"] = r.active
        for _ in range(5):
            a = np.full(n, 7.0, dtype=np.float32)
            del a
        z = np.zeros(n, dtype=np.float32)  # takes the block that held 7.0
        facts["zeros_sum"] = float(z.sum())
        survivor = np.ones(n, dtype=np.float32)
        del z
        small = [np.ones(n // 8, dtype=np.float32) for _ in range(4)]  # under 4 MiB: glibc's
        del small
        big = [np.ones(n, dtype=np.float32) for _ in range(5)]
        del big  # five freed, three fit
        facts["held_after_five"] = r.held()
        r.age()  # all five freed since begin: kept
        facts["held_after_age"] = r.held()
        r.next_layer(2, 4)  # ages: none freed since the last age, dropped
        facts["held_after_second_age"] = r.held()
        again = [np.ones(n, dtype=np.float32) for _ in range(2)]
        del again
        facts["held_before_stop"] = r.held()
        r.next_layer(3, 4)  # the last layer: stopped, emptied, nothing more kept
        after = np.ones(n, dtype=np.float32)
        del after
        facts["held_after_stop"] = sys.modules["_phase0_reuse"].held()
        facts["array_handler"] = name(survivor)
    facts.update(hits=r.hits, misses=r.misses, reused=r.reused_bytes, fresh=r.fresh_bytes, held_after=r.held())
    facts["outside_after"] = name()
    facts["survivor_sum"] = float(survivor.sum())
    del survivor  # freed through the handler, the cache off
    facts["after_free"] = name(np.ones(n, dtype=np.float32))
    return json.dumps(facts)


def arena(arg_json: str) -> str:
    """What the arena of the bridge's _phase0_reuse does: a freed block the
    cache lets go of kept, arrays carved out of it (on this thread and, with
    carving(), on another), np.zeros on a dirty piece, realloc moving a
    piece out, and pieces outliving the arena with their block."""
    import threading

    import numpy as np

    from phase0_shim import heap

    n = int(json.loads(arg_json)["n"])  # float32 elements of a piece, at least 4 MiB
    native = sys.modules["_phase0_reuse"]
    warm = np.ones(16 * n, dtype=np.float32)  # the resident peak raised, then left: room below it
    del warm
    facts: dict[str, object] = {}

    def inside(a: object, base: int) -> bool:
        at = int(np.asarray(a).ctypes.data)
        return base <= at < base + 6 * n * 4

    with heap.reusing(n * 4) as r:
        r.arena(6 * n * 4)
        block = np.full(6 * n, 5.0, dtype=np.float32)  # larger than the cache: let go of when freed
        base = int(block.ctypes.data)
        del block
        r.arena(0)  # nothing more kept; what is kept is still carved
        facts["state_kept"] = list(native.arena_state())
        kept = [np.full(n, float(i), dtype=np.float32) for i in range(2)]
        zeros = np.zeros(n, dtype=np.float32)  # a piece over the 5.0s
        facts["carved"] = [inside(a, base) for a in [*kept, zeros]]
        facts["zeros_sum"] = float(zeros.sum())
        facts["state_three"] = list(native.arena_state())
        moved = kept.pop()  # the 1.0s, carved second
        moved.resize(2 * n, refcheck=False)  # realloc: out of the arena, its values with it
        facts["moved_out"] = not inside(moved, base)
        facts["moved_sum"] = float(moved[:n].sum())
        facts["state_moved"] = list(native.arena_state())
        del zeros  # the last piece carved, through the cache: cached, not released
        other: list[bool] = []

        def carve_there() -> None:
            with r.carving():
                a = np.full(n // 2 * 3, 2.0, dtype=np.float32)  # 12 MiB: no cached block of its size
                other.append(inside(a, base) and float(a.sum()) == 2.0 * len(a))
                kept.append(a)

        t = threading.Thread(target=carve_there)
        t.start()
        t.join()
        facts["other_thread"] = other
        top = kept.pop()  # the last piece carved, over the cache's bound: released
        at = int(top.ctypes.data)
        del top
        facts["state_rolled_back"] = list(native.arena_state())
        kept.append(np.full(n // 2 * 3, 3.0, dtype=np.float32))
        facts["carved_again_there"] = int(kept[-1].ctypes.data) == at
    facts["carved_bytes"] = r.carved_bytes
    facts["state_closed"] = list(native.arena_state())
    facts["sums_after"] = [float(a.sum()) for a in kept]
    del kept
    facts["state_freed"] = list(native.arena_state())
    return json.dumps(facts)
