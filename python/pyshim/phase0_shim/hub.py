"""Fetch a model from the Hugging Face Hub into the HF cache: safetensors only.

Go resolves cached models natively (package ``hfcache``) and calls
:func:`download` only when a model is missing. Everything network-related is
huggingface_hub's own doing, so HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE and the
cache variables behave exactly as they do for ``hf download``.

Only what phase0 needs is fetched: the config, the tokenizer and the
safetensors weights the model loads (the shards its index names, or
``model.safetensors``). Pickled weights (``*.bin``, ``*.pt``, ``*.pth``,
``*.pkl``) are never selected, and a repository without safetensors is
refused before anything is downloaded.
"""

from __future__ import annotations

import glob
import json
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NamedTuple

from phase0_shim.opargs import op
from phase0_shim.optypes import DownloadArgs, DownloadReport

ErrorCode = Literal[
    "offline_not_cached",
    "gated_401",
    "not_found_404",
    "bad_revision",
    "no_safetensors",
    "disk_space",
]

CONFIG_FILES = ("config.json", "generation_config.json")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
)
SAFETENSORS_INDEX = "model.safetensors.index.json"
SAFETENSORS_SINGLE = "model.safetensors"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
DISK_MARGIN = 0.05

LOGIN_HINT = "run `hf auth login` or set HF_TOKEN"


class DiskUsage(NamedTuple):
    total: int
    used: int
    free: int


DiskUsageFn = Callable[[str], DiskUsage]


@dataclass(frozen=True)
class DownloadRequest:
    repo_id: str
    revision: str | None = None
    cache_dir: str | None = None

    @classmethod
    def from_args(cls, args: DownloadArgs) -> DownloadRequest:
        repo_id = args["repo_id"]
        if not isinstance(repo_id, str) or not repo_id:
            raise ValueError(f"repo_id must be a non-empty string, got {repo_id!r}")
        return cls(repo_id=repo_id, revision=args["revision"] or None, cache_dir=args["cache_dir"] or None)


@dataclass(frozen=True)
class DownloadResult:
    status: Literal["ok", "error"]
    code: ErrorCode | None = None
    message: str = ""
    snapshot_dir: str | None = None
    revision: str | None = None
    bytes: int = 0
    files: list[str] = field(default_factory=list)

    def report(self) -> DownloadReport:
        return {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "snapshot_dir": self.snapshot_dir,
            "revision": self.revision,
            "bytes": self.bytes,
            "files": list(self.files),
        }


class DownloadRefused(Exception):
    """An expected, explainable reason not to download; becomes a structured error."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class RemoteFile:
    name: str
    size: int


@op("download", DownloadArgs, DownloadReport)
def download(args: DownloadArgs) -> DownloadReport:
    """Entry point for Go: the expected failures come back as status "error"
    with a code, never raised."""
    return fetch_model(DownloadRequest.from_args(args)).report()


def fetch_model(request: DownloadRequest, disk_usage: DiskUsageFn | None = None) -> DownloadResult:
    """Download the files phase0 needs for ``request`` into the HF cache."""
    from huggingface_hub import constants

    usage = disk_usage if disk_usage is not None else _shutil_disk_usage
    cache_dir = request.cache_dir or constants.HF_HUB_CACHE
    try:
        return _fetch(request, cache_dir, usage)
    except DownloadRefused as refused:
        return DownloadResult(status="error", code=refused.code, message=refused.message)
    except Exception as exc:  # noqa: BLE001 - only huggingface_hub's expected errors are mapped
        explained = _explain_hub_error(exc, request, cache_dir)
        if explained is None:
            raise
        return DownloadResult(status="error", code=explained.code, message=explained.message)


def _fetch(request: DownloadRequest, cache_dir: str, usage: DiskUsageFn) -> DownloadResult:
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    try:
        info = HfApi().model_info(request.repo_id, revision=request.revision, files_metadata=True)
    except HfHubHTTPError:
        raise
    except (OfflineModeIsEnabled, ConnectionError, TimeoutError) as exc:
        return _from_cache_only(request, cache_dir, exc)
    except Exception as exc:
        if not _is_transport_error(exc):
            raise
        return _from_cache_only(request, cache_dir, exc)

    remote = [RemoteFile(s.rfilename, s.size or 0) for s in info.siblings or []]
    chosen = choose_files(request, remote, lambda: _read_index(request, info.sha, cache_dir))
    to_fetch = [f for f in chosen if not _is_cached(request.repo_id, f.name, info.sha, cache_dir)]
    check_disk_space(cache_dir, sum(f.size for f in to_fetch), usage)

    snapshot_dir = snapshot_download(
        request.repo_id,
        revision=request.revision,
        cache_dir=cache_dir,
        allow_patterns=[glob.escape(f.name) for f in chosen],
    )
    return DownloadResult(
        status="ok",
        message=f"{request.repo_id}: {len(chosen)} files, {len(to_fetch)} downloaded",
        snapshot_dir=snapshot_dir,
        revision=Path(snapshot_dir).name,
        bytes=sum(f.size for f in chosen),
        files=sorted(f.name for f in chosen),
    )


def _from_cache_only(request: DownloadRequest, cache_dir: str, cause: Exception) -> DownloadResult:
    """The Hub is unreachable (or HF_HUB_OFFLINE=1): let huggingface_hub find a cached snapshot.

    It raises LocalEntryNotFoundError when there is none, which maps to
    ``offline_not_cached``.
    """
    from huggingface_hub import constants, snapshot_download

    patterns = [*CONFIG_FILES, *TOKENIZER_FILES, SAFETENSORS_INDEX, "*.safetensors"]
    snapshot_dir = snapshot_download(
        request.repo_id, revision=request.revision, cache_dir=cache_dir, allow_patterns=patterns
    )
    files = sorted(p.name for p in Path(snapshot_dir).iterdir() if p.is_file())
    size = sum((Path(snapshot_dir) / name).stat().st_size for name in files)
    why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else f"Hub not reachable ({type(cause).__name__})"
    return DownloadResult(
        status="ok",
        message=f"{request.repo_id}: {why}; using the cached snapshot",
        snapshot_dir=snapshot_dir,
        revision=Path(snapshot_dir).name,
        bytes=size,
        files=files,
    )


def _is_transport_error(exc: Exception) -> bool:
    # huggingface_hub 1.x talks through httpx, 2.x through httpx2; both
    # derive their network failures from a TransportError class.
    module = type(exc).__module__.split(".")[0]
    return module in ("httpx", "httpx2") and any(c.__name__ == "TransportError" for c in type(exc).__mro__)


def choose_files(
    request: DownloadRequest, remote: Iterable[RemoteFile], read_index: Callable[[], dict[str, Any]]
) -> list[RemoteFile]:
    """Select config, tokenizer and loadable safetensors weights; never pickles.

    With an index, the weights are exactly the shards it names (a repo may
    also carry a duplicate ``consolidated.safetensors`` that nobody loads).
    """
    by_name = {f.name: f for f in remote}
    wanted = [n for n in (*CONFIG_FILES, *TOKENIZER_FILES) if n in by_name]
    if SAFETENSORS_INDEX in by_name:
        shards = index_shards(read_index())
        absent = sorted(s for s in shards if s not in by_name)
        if absent:
            raise DownloadRefused(
                "no_safetensors",
                f"{request.repo_id}: {SAFETENSORS_INDEX} names shard(s) the repository does not have: "
                f"{', '.join(absent)}",
            )
        wanted += [SAFETENSORS_INDEX, *shards]
    elif SAFETENSORS_SINGLE in by_name:
        wanted.append(SAFETENSORS_SINGLE)
    else:
        raise DownloadRefused("no_safetensors", _no_safetensors_message(request, by_name))
    return [by_name[n] for n in wanted]


def _no_safetensors_message(request: DownloadRequest, by_name: dict[str, RemoteFile]) -> str:
    where = f"{request.repo_id}@{request.revision}" if request.revision else request.repo_id
    pickles = sorted(n for n in by_name if n.endswith(PICKLE_SUFFIXES))
    loose = sorted(n for n in by_name if n.endswith(".safetensors"))
    if loose:
        found = f"it has {', '.join(loose)} but neither {SAFETENSORS_SINGLE} nor {SAFETENSORS_INDEX}"
    elif pickles:
        found = (
            f"it only has pickled weights ({', '.join(pickles)}), which phase0 never loads "
            "because unpickling runs arbitrary code"
        )
    else:
        found = "it has no weight files at all"
    return (
        f"{where} has no safetensors weights: {found}. Use a revision or a repository "
        "that ships safetensors (many have a `refs/pr/N` safetensors conversion)."
    )


def index_shards(index: dict[str, Any]) -> list[str]:
    """Distinct shard names from a safetensors index; each must stay inside the repo."""
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise DownloadRefused("no_safetensors", f'{SAFETENSORS_INDEX} has an empty or absent "weight_map"')
    shards: set[str] = set()
    for tensor, shard in weight_map.items():
        path = PurePosixPath(shard) if isinstance(shard, str) else None
        if (
            path is None
            or path.is_absolute()
            or ".." in path.parts
            or "\\" in str(shard)
            or not str(shard).endswith(".safetensors")
        ):
            raise DownloadRefused(
                "no_safetensors",
                f"{SAFETENSORS_INDEX} maps {tensor!r} to {shard!r}, not a .safetensors file inside the repository",
            )
        shards.add(str(path))
    return sorted(shards)


def _read_index(request: DownloadRequest, sha: str | None, cache_dir: str) -> dict[str, Any]:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(request.repo_id, SAFETENSORS_INDEX, revision=sha or request.revision, cache_dir=cache_dir)
    with open(path, encoding="utf-8") as f:
        index = json.load(f)
    if not isinstance(index, dict):
        raise DownloadRefused("no_safetensors", f"{SAFETENSORS_INDEX} is not a JSON object")
    return index


def _is_cached(repo_id: str, name: str, sha: str | None, cache_dir: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache(repo_id, name, cache_dir=cache_dir, revision=sha)
    return isinstance(path, str) and Path(path).is_file()


def check_disk_space(cache_dir: str, needed: int, usage: DiskUsageFn) -> None:
    """Refuse when the cache's file system lacks ``needed`` bytes plus a 5% margin."""
    if needed <= 0:
        return
    probe = Path(cache_dir).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = usage(str(probe)).free
    required = int(needed * (1 + DISK_MARGIN))
    if free < required:
        raise DownloadRefused(
            "disk_space",
            f"not enough disk space in {cache_dir}: the download needs {_human(required)} "
            f"({_human(needed)} + {DISK_MARGIN:.0%} margin) and {probe} has {_human(free)} free. "
            "Free some space (`hf cache ls` lists what the cache holds) or point HF_HUB_CACHE elsewhere.",
        )


def _shutil_disk_usage(path: str) -> DiskUsage:
    # Looked up at call time so a test can substitute shutil.disk_usage.
    total, used, free = shutil.disk_usage(path)
    return DiskUsage(total, used, free)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000:
            return f"{size:.1f} {unit}" if unit != "B" else f"{n} B"
        size /= 1000
    return f"{size:.1f} TB"


def _explain_hub_error(exc: Exception, request: DownloadRequest, cache_dir: str) -> DownloadRefused | None:
    """Map huggingface_hub's expected failures to a code and a next step."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo = request.repo_id
    rev = request.revision or "main"
    if isinstance(exc, GatedRepoError):
        return DownloadRefused(
            "gated_401",
            f"{repo} is gated: request access at {constants.ENDPOINT}/{repo}, then {LOGIN_HINT} "
            "with a token of an account that was granted access.",
        )
    if isinstance(exc, RevisionNotFoundError):
        return DownloadRefused(
            "bad_revision",
            f"{repo} has no revision {rev!r}: give an existing branch, tag or commit sha "
            f"(see {constants.ENDPOINT}/{repo}/tree/main).",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return DownloadRefused(
            "not_found_404",
            f"{repo} was not found on {constants.ENDPOINT}: check the id; if the repository is private, {LOGIN_HINT}.",
        )
    if isinstance(exc, LocalEntryNotFoundError):
        why = (
            "HF_HUB_OFFLINE is set"
            if constants.HF_HUB_OFFLINE
            else f"the Hub at {constants.ENDPOINT} could not be reached"
        )
        return DownloadRefused(
            "offline_not_cached",
            f"{repo}@{rev} is not in the cache {cache_dir} and {why}: "
            "download it on a connected machine (or unset HF_HUB_OFFLINE), "
            "or set HF_HUB_CACHE to a cache that has it.",
        )
    if isinstance(exc, HfHubHTTPError) and exc.response is not None and exc.response.status_code == 401:
        return DownloadRefused(
            "gated_401",
            f"{constants.ENDPOINT} refused the credentials for {repo} (HTTP 401): {LOGIN_HINT} with a valid token.",
        )
    return None
