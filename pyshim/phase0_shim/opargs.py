"""The arguments every worker op receives: one JSON object from Go."""

from __future__ import annotations

import json
from typing import Any


def parse(args_json: str, required: tuple[str, ...]) -> dict[str, Any]:
    """Decode an op's JSON arguments; every name in ``required`` must be given and non-empty."""
    args = json.loads(args_json)
    if not isinstance(args, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(args).__name__}")
    missing = [k for k in required if args.get(k) in (None, "")]
    if missing:
        raise ValueError(f"missing argument(s): {', '.join(missing)}")
    return args
