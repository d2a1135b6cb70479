"""Lay files out as an offline Hugging Face cache snapshot, and FastFlowLM's repo layout.

``huggingface_hub`` resolves ``hf_hub_download(repo, file)`` with
``HF_HUB_OFFLINE=1`` from ``<cache>/models--<org>--<name>/refs/main`` and
``snapshots/<rev>/<file>``; like the real cache, the snapshot entries are
relative symlinks to ``blobs/<sha256>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

FASTFLOWLM_LLAMA_1B = "FastFlowLM/Llama-3.2-1B-NPU2"
LLAMA_1B = "meta-llama/Llama-3.2-1B"
LLAMA_1B_INSTRUCT = "meta-llama/Llama-3.2-1B-Instruct"


def revision_of(files: Mapping[str, Path | bytes]) -> str:
    """A 40-hex revision derived from the files, so equal contents get equal revisions."""
    h = hashlib.sha1()
    for name in sorted(files):
        v = files[name]
        h.update(name.encode() + b"\0" + hashlib.sha256(v if isinstance(v, bytes) else v.read_bytes()).digest())
    return h.hexdigest()


def put_snapshot(
    cache: Path | str, repo_id: str, files: Mapping[str, Path | bytes], revision: str | None = None
) -> Path:
    """Put ``files`` (name -> source file or bytes) into ``cache`` as ``repo_id``'s main; return the snapshot dir."""
    cache = Path(cache)
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    rev = revision or revision_of(files)
    snap = repo / "snapshots" / rev
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for name, src in files.items():
        data_path = repo / "blobs" / ".incoming"
        if isinstance(src, bytes):
            data_path.write_bytes(src)
        else:
            shutil.copyfile(src, data_path)
        digest = hashlib.sha256()
        with open(data_path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        blob = repo / "blobs" / digest.hexdigest()
        os.replace(data_path, blob)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(rev)
    return snap


def put_folder(cache: Path | str, repo_id: str, folder: Path | str) -> Path:
    """An HF model folder (config, safetensors, tokenizer) as ``repo_id`` in ``cache``."""
    folder = Path(folder)
    files: dict[str, Path | bytes] = {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}
    return put_snapshot(cache, repo_id, files)


def model_card(base_model: str, title: str = "NPU2 build") -> bytes:
    """A FastFlowLM-style model card whose front matter names the weights' source."""
    return (
        f"---\nlicense: llama3.2\nbase_model: {base_model}\ntags:\n- npu\n- q4nx\n---\n\n"
        f"# {title}\n\nQ4NX 4-bit build of [{base_model}](https://huggingface.co/{base_model}) for NPU2.\n"
    ).encode()


def put_fastflowlm(
    cache: Path | str,
    bundle: Path | str,
    config_from: Path | str,
    base_model: str,
    repo_id: str = FASTFLOWLM_LLAMA_1B,
) -> Path:
    """A FastFlowLM repo (``model.q4nx``, ``config.json``, README.md card) in ``cache``; the snapshot dir."""
    return put_snapshot(
        cache,
        repo_id,
        {
            "model.q4nx": Path(bundle),
            "config.json": Path(config_from) / "config.json",
            "README.md": model_card(base_model, repo_id.split("/")[1]),
        },
    )


def put_llama_1b_scenario(
    cache: Path | str,
    instruct_src: Path | str,
    base_src: Path | str,
    bundle: Path | str,
    card_base_model: str = LLAMA_1B_INSTRUCT,
) -> dict[str, Path]:
    """The pairing scenario of issue 29 in one offline cache.

    ``instruct_src`` is cached as meta-llama/Llama-3.2-1B-Instruct, ``base_src``
    (another model of the same shape, e.g. another seed) as meta-llama/Llama-3.2-1B,
    and ``bundle`` (packed from ``instruct_src``) as FastFlowLM/Llama-3.2-1B-NPU2
    with a card declaring ``card_base_model``. With the llama32_1b_q4nx fixture's
    MODEL_CHOICES, the ``instruct`` key pairs correctly and the ``base`` key pairs
    the Instruct weights with the base reference. Returns the snapshot dirs by repo id.
    """
    return {
        LLAMA_1B_INSTRUCT: put_folder(cache, LLAMA_1B_INSTRUCT, instruct_src),
        LLAMA_1B: put_folder(cache, LLAMA_1B, base_src),
        FASTFLOWLM_LLAMA_1B: put_fastflowlm(cache, bundle, instruct_src, card_base_model),
    }
