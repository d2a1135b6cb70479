"""What a folder's module raised, said so a reader can act on it: a
``KeyError`` on a tensor the bundle does not hold names the tensor, the
bundle and the file and function of the tree that asked for it (upstream's
newer phi4_mini_q4nx module reads its LongRoPE factors from the bundle, so
a bundle without ``rope.short.weight`` raises a bare ``KeyError`` deep in
the shared Q4NX reader; docs/quantized.md, "Missing tensors").
"""

from __future__ import annotations

import json
import linecache
import os
import sys
import traceback
from pathlib import Path

from phase0_shim.stheader import MAX_HEADER_SIZE


class MissingTensor(LookupError):
    """A tensor the folder's module asked the bundle for and the bundle does not hold."""


def _bundle_file(source: str) -> Path | None:
    """The bundle file a source names: the file itself or a folder's ``model.q4nx``."""
    if not source:
        return None
    p = Path(source)
    if p.is_dir():
        p = p / "model.q4nx"
    return p if p.is_file() else None


def _tensor_names(bundle: Path) -> set[str] | None:
    """The tensor names of a safetensors header (any dtype, Q4NX too), or
    None when the file has no readable header (gate 1 names that itself)."""
    try:
        with open(bundle, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if not 0 < n <= MAX_HEADER_SIZE:
                return None
            header = json.loads(f.read(n))
    except (OSError, ValueError):
        return None
    return {k for k in header if k != "__metadata__"} if isinstance(header, dict) else None


def _ours(filename: str) -> bool:
    """Whether a frame is phase0's own or the interpreter's, not the tree's."""
    f = os.path.realpath(filename)
    shim = os.path.realpath(Path(__file__).resolve().parents[1])
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return f.startswith(shim + os.sep) or any(f.startswith(p + os.sep) for p in prefixes) or filename.startswith("<")


def _who(exc: BaseException, key: str) -> str:
    """``file: function() (line N)`` of the tree's frame that asked for key:
    the deepest one whose line names it, else the deepest outside the file
    that raised (the generic reader), else the deepest of the tree."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _ours(f.filename)]
    if not frames:
        return ""
    named = [f for f in frames if key in (f.line or linecache.getline(f.filename, f.lineno or 0))]
    outside = [f for f in frames if f.filename != frames[-1].filename]
    f = (named or outside or frames)[-1]
    p = Path(f.filename)
    return f"{p.parent.name}/{p.name}: {f.name}() (line {f.lineno})"


def describe(exc: BaseException, source: str = "") -> str:
    """``Type: message``, and for a KeyError on a tensor the bundle at source
    does not hold: which tensor, which bundle and who asked for it."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MissingTensor):
        return text
    if not isinstance(exc, KeyError) or len(exc.args) != 1 or not isinstance(exc.args[0], str):
        return text
    key = exc.args[0]
    bundle = _bundle_file(source)
    if bundle is None:
        return text
    names = _tensor_names(bundle)
    if names is None or key in names:
        return text
    who = _who(exc, key)
    wanted = f", which {who} reads" if who else ""
    return f"the bundle {bundle.name} ({len(names)} tensors) has no tensor {key}{wanted} (KeyError: {key!r})"


def reraise_missing(exc: BaseException, source: str) -> None:
    """Raise a MissingTensor saying what describe says when exc is a KeyError
    on a tensor the bundle lacks; return otherwise (the caller re-raises)."""
    text = describe(exc, source)
    if isinstance(exc, KeyError) and not text.startswith("KeyError"):
        raise MissingTensor(text) from exc
