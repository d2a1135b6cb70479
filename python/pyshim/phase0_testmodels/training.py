"""Brief CPU training that turns a tiny random checkpoint into a sane language model.

Gate 2 fails a model whose perplexity on phase0's English calibration passage
exceeds a tenth of its vocabulary; a random initialisation sits near or above
the vocabulary size. Tiny test models that must pass gate 2 are therefore
trained for a few seconds on the bundled English texts (the tokenizer corpus
plus ``data/training_text.txt``: plain sentences in the calibration passage's
everyday register, never the passage itself).

Training is deterministic (fixed seeds, one thread) and its result is cached
in ``$PHASE0_CACHE`` (default ``~/.cache/phase0``) under ``trained-tiny/``,
keyed by a hash of this package's code and data, the model config, the seed
and the torch/transformers versions, so a test run or CI job reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent
TRAINING_TEXT = PACKAGE_DIR / "data" / "training_text.txt"

STEPS = 150
BATCH = 16
WINDOW = 64
LEARNING_RATE = 3e-3
WEIGHT_DECAY = 0.1


def cache_root() -> Path:
    env = os.environ.get("PHASE0_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "phase0"


def generator_digest() -> str:
    """Hash of every file that shapes a test model: the package's code and data."""
    h = hashlib.sha256()
    for path in sorted(p for p in PACKAGE_DIR.rglob("*") if p.is_file() and p.suffix in (".py", ".txt")):
        h.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def training_ids(tokenizer: Any) -> list[int]:
    """The training stream: every non-empty line of both texts, each ending in EOS."""
    from phase0_testmodels import CORPUS

    ids: list[int] = []
    for text in (CORPUS, TRAINING_TEXT):
        for line in text.read_text(encoding="utf-8").splitlines():
            if line.strip():
                ids.extend(int(t) for t in tokenizer.encode(line))
                ids.append(int(tokenizer.eos_token_id))
    return ids


@contextmanager
def _one_thread() -> Iterator[None]:
    # Float sums depend on how many threads split them; one thread makes the
    # trained bytes the same on every machine.
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(model: Any, tokenizer: Any, seed: int) -> None:
    """Train ``model`` (float32, in place) on the bundled English texts."""
    import torch

    data = torch.tensor(training_ids(tokenizer), dtype=torch.long)
    if data.numel() <= WINDOW + 1:
        raise RuntimeError(f"training text has {data.numel()} tokens, fewer than a {WINDOW}-token window")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    model.train()
    with _one_thread():
        for _ in range(STEPS):
            starts = torch.randint(0, data.numel() - WINDOW, (BATCH,), generator=generator)
            batch = torch.stack([data[s : s + WINDOW] for s in starts.tolist()])
            loss = model(batch, labels=batch).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()


def trained_weights_path(config: Any, seed: int) -> Path:
    """Where the trained float32 weights of this config and seed are cached."""
    import torch
    import transformers

    h = hashlib.sha256()
    h.update(generator_digest().encode())
    h.update(json.dumps(config.to_dict(), sort_keys=True, default=str).encode())
    h.update(f"seed={seed} torch={torch.__version__} transformers={transformers.__version__}".encode())
    return cache_root() / "trained-tiny" / f"{h.hexdigest()[:16]}.safetensors"


def load_or_train(model: Any, tokenizer: Any, seed: int) -> Path:
    """Give ``model`` its trained weights, from the cache or by training (then cached)."""
    from safetensors.torch import load_model, save_model

    path = trained_weights_path(model.config, seed)
    if path.is_file():
        load_model(model, str(path))
        model.eval()
        return path
    train(model, tokenizer, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    os.close(fd)
    try:
        save_model(model, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
