"""phase0_shim.hub.download against a local Hub that speaks huggingface_hub's protocol.

download() runs in a child interpreter, as it does under Go, so HF_ENDPOINT,
HF_TOKEN and HF_HUB_OFFLINE reach huggingface_hub the way they do in
production: through the environment, read when the library is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest
from safetensors.numpy import load_file, save

PYSHIM = Path(__file__).resolve().parents[1]
MAIN_SHA = "a" * 40
DEV_SHA = "b" * 40
GOOD_TOKEN = "hf_good_token"


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    repo_id: str
    files: dict[str, bytes]
    gated: bool = False
    token: str | None = None  # when set, requests must carry it
    refs: dict[str, str] = field(default_factory=lambda: {"main": MAIN_SHA, "dev": DEV_SHA})

    def commit(self, rev: str) -> str | None:
        if rev in self.refs:
            return self.refs[rev]
        return rev if rev in self.refs.values() else None


def _tensors(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"model.norm.weight": rng.standard_normal(4).astype(np.float32)}


def _repos() -> dict[str, FakeRepo]:
    shard1 = save({"model.embed_tokens.weight": np.arange(6, dtype=np.float32).reshape(3, 2)})
    shard2 = save(_tensors(2))
    index = {
        "metadata": {"total_size": 40},
        "weight_map": {
            "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
            "model.norm.weight": "model-00002-of-00002.safetensors",
        },
    }
    tokenizer = {
        "tokenizer.json": b'{"version": "1.0"}',
        "tokenizer_config.json": b'{"model_max_length": 16}',
    }
    repos = [
        FakeRepo(
            "org/tiny",
            {
                "config.json": b'{"model_type": "llama"}',
                "generation_config.json": b'{"do_sample": false}',
                "model.safetensors": save(_tensors(1)),
                "pytorch_model.bin": b"PK pickle bytes nobody may load",
                "README.md": b"# tiny\n",
                ".gitattributes": b"*.safetensors filter=lfs\n",
                **tokenizer,
            },
        ),
        FakeRepo(
            "org/sharded",
            {
                "config.json": b'{"model_type": "mistral"}',
                "model.safetensors.index.json": json.dumps(index).encode(),
                "model-00001-of-00002.safetensors": shard1,
                "model-00002-of-00002.safetensors": shard2,
                "consolidated.safetensors": save(_tensors(3)),
                "special_tokens_map.json": b"{}",
                **tokenizer,
            },
        ),
        FakeRepo("org/gated", {"config.json": b"{}", "model.safetensors": save(_tensors(4)), **tokenizer}, gated=True),
        FakeRepo(
            "org/private", {"config.json": b"{}", "model.safetensors": save(_tensors(5)), **tokenizer}, token=GOOD_TOKEN
        ),
        FakeRepo("org/pickled", {"config.json": b"{}", "pytorch_model.bin": b"pickle", **tokenizer}),
    ]
    return {r.repo_id: r for r in repos}


class FakeHub(ThreadingHTTPServer):
    """The Hub endpoints huggingface_hub uses for model_info and snapshot_download."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.repos = _repos()
        self.requests: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def fetched(self) -> set[str]:
        """File names requested with GET on /resolve/."""
        return {p.split("/resolve/", 1)[1].split("/", 1)[1] for m, p in self.requests if m == "GET" and "/resolve/" in p}


class _Handler(BaseHTTPRequestHandler):
    server: FakeHub

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._route(head=False)

    def do_HEAD(self) -> None:
        self._route(head=True)

    def _route(self, head: bool) -> None:
        path = urlsplit(self.path).path
        self.server.requests.append(("HEAD" if head else "GET", path))
        seg = [unquote(s) for s in path.strip("/").split("/")]
        if len(seg) >= 4 and seg[:2] == ["api", "models"]:
            self._api(seg[2:], "blobs=" in self.path)
        elif len(seg) >= 5 and seg[2] == "resolve":
            self._resolve(f"{seg[0]}/{seg[1]}", seg[3], "/".join(seg[4:]), head)
        else:
            self._error(404, "", "Not found")

    def _error(self, status: int, code: str, message: str, commit: str | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _repo(self, repo_id: str) -> FakeRepo | None:
        repo = self.server.repos.get(repo_id)
        if repo is None:
            # The real Hub answers 401 to anonymous requests for missing repos.
            self._error(401, "RepoNotFound", "Repository not found")
            return None
        if repo.token is not None and self.headers.get("Authorization") != f"Bearer {repo.token}":
            self._error(401, "", "Invalid credentials in Authorization header")
            return None
        return repo

    def _api(self, seg: list[str], blobs: bool) -> None:
        repo = self._repo(f"{seg[0]}/{seg[1]}")
        if repo is None:
            return
        kind, rev = (seg[2], seg[3]) if len(seg) >= 4 else ("revision", "main")
        sha = repo.commit(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return
        files = sorted(repo.files.items())
        if kind == "revision":
            siblings: list[dict[str, Any]] = []
            for name, data in files:
                s: dict[str, Any] = {"rfilename": name}
                if blobs:
                    s.update(size=len(data), blobId=_git_blob_sha1(data))
                    if name.endswith(".safetensors"):
                        s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
                siblings.append(s)
            payload: Any = {
                "_id": "0",
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "sha": sha,
                "private": repo.token is not None,
                "gated": "manual" if repo.gated else False,
                "disabled": False,
                "tags": [],
                "siblings": siblings,
            }
        else:
            payload = []
            for name, data in files:
                entry: dict[str, Any] = {"type": "file", "path": name, "size": len(data), "oid": _git_blob_sha1(data)}
                if name.endswith(".safetensors"):
                    entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
                payload.append(entry)
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _resolve(self, repo_id: str, rev: str, name: str, head: bool) -> None:
        repo = self._repo(repo_id)
        if repo is None:
            return
        sha = repo.commit(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return
        if repo.gated:
            self._error(401, "GatedRepo", f"Access to model {repo_id} is restricted. Please log in.", sha)
            return
        data = repo.files.get(name)
        if data is None:
            self._error(404, "EntryNotFound", f"{name} does not exist", sha)
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", sha)
        self.send_header("ETag", f'"{_git_blob_sha1(data)}"')
        if name.endswith(".safetensors"):
            # On the real Hub these ride on the redirect to the LFS storage.
            self.send_header("X-Linked-Etag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Linked-Size", str(len(data)))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    server = FakeHub()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


_CHILD = """
import json, shutil, sys
from collections import namedtuple
free = json.loads(sys.argv[2])
if free is not None:
    Usage = namedtuple("usage", "total used free")
    shutil.disk_usage = lambda path: Usage(free * 10, free * 9, free)
from phase0_shim.hub import download
print(download(sys.argv[1]))
"""


def run_download(
    hub: FakeHub,
    cache: Path,
    repo_id: str,
    revision: str | None = None,
    *,
    offline: bool = False,
    token: str | None = None,
    free_bytes: int | None = None,
    pass_cache_dir: bool = True,
) -> dict[str, Any]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cache.parent / "home"),
        "PYTHONPATH": str(PYSHIM),
        "HF_ENDPOINT": hub.url,
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    if token:
        env["HF_TOKEN"] = token
    args = {"repo_id": repo_id, "revision": revision, "cache_dir": str(cache) if pass_cache_dir else None}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(args), json.dumps(free_bytes)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _snapshot_names(snapshot_dir: str) -> list[str]:
    return sorted(p.name for p in Path(snapshot_dir).iterdir())


def test_success_fetches_only_config_tokenizer_and_safetensors(hub: FakeHub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    result = run_download(hub, cache, "org/tiny", pass_cache_dir=False)

    repo = hub.repos["org/tiny"]
    want = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    assert result["status"] == "ok", result
    assert result["code"] is None
    assert result["revision"] == MAIN_SHA
    assert result["snapshot_dir"] == str(cache / "models--org--tiny" / "snapshots" / MAIN_SHA)
    assert result["files"] == want
    assert result["bytes"] == sum(len(repo.files[n]) for n in want)
    assert _snapshot_names(result["snapshot_dir"]) == want
    assert (cache / "models--org--tiny" / "refs" / "main").read_text() == MAIN_SHA
    for name in want:
        assert (Path(result["snapshot_dir"]) / name).read_bytes() == repo.files[name]
    np.testing.assert_array_equal(load_file(Path(result["snapshot_dir"]) / "model.safetensors")["model.norm.weight"],
                                  _tensors(1)["model.norm.weight"])
    assert "pytorch_model.bin" not in hub.fetched()


def test_sharded_fetches_the_index_shards_only(hub: FakeHub, tmp_path: Path) -> None:
    result = run_download(hub, tmp_path / "hub", "org/sharded", "dev")

    assert result["status"] == "ok", result
    assert result["revision"] == DEV_SHA
    assert _snapshot_names(result["snapshot_dir"]) == [
        "config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert "consolidated.safetensors" not in hub.fetched()


def test_second_call_reuses_the_cache(hub: FakeHub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    first = run_download(hub, cache, "org/tiny")
    hub.requests.clear()
    second = run_download(hub, cache, "org/tiny")

    assert second["status"] == "ok"
    assert second["snapshot_dir"] == first["snapshot_dir"]
    assert "downloaded" in second["message"] and ", 0 downloaded" in second["message"]
    assert hub.fetched() == set()


def test_gated_repo_is_401_with_login_hint(hub: FakeHub, tmp_path: Path) -> None:
    result = run_download(hub, tmp_path / "hub", "org/gated")

    assert result["status"] == "error"
    assert result["code"] == "gated_401"
    assert "hf auth login" in result["message"] and "HF_TOKEN" in result["message"]
    assert result["snapshot_dir"] is None


def test_invalid_token_is_401_and_a_good_token_works(hub: FakeHub, tmp_path: Path) -> None:
    refused = run_download(hub, tmp_path / "hub", "org/private", token="hf_wrong")
    accepted = run_download(hub, tmp_path / "hub", "org/private", token=GOOD_TOKEN)

    assert refused["code"] == "gated_401", refused
    assert "hf auth login" in refused["message"]
    assert accepted["status"] == "ok", accepted


def test_missing_repo_is_404(hub: FakeHub, tmp_path: Path) -> None:
    result = run_download(hub, tmp_path / "hub", "org/nope")

    assert result["status"] == "error"
    assert result["code"] == "not_found_404"
    assert "org/nope" in result["message"] and "private" in result["message"]


def test_unknown_revision_is_bad_revision(hub: FakeHub, tmp_path: Path) -> None:
    result = run_download(hub, tmp_path / "hub", "org/tiny", "v9")

    assert result["status"] == "error"
    assert result["code"] == "bad_revision"
    assert "'v9'" in result["message"]


def test_offline_not_cached(hub: FakeHub, tmp_path: Path) -> None:
    result = run_download(hub, tmp_path / "hub", "org/tiny", offline=True)

    assert result["status"] == "error"
    assert result["code"] == "offline_not_cached"
    assert "HF_HUB_OFFLINE" in result["message"]
    assert hub.requests == []


def test_offline_uses_a_cached_snapshot(hub: FakeHub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    online = run_download(hub, cache, "org/tiny")
    hub.requests.clear()
    offline = run_download(hub, cache, "org/tiny", offline=True)

    assert offline["status"] == "ok", offline
    assert offline["snapshot_dir"] == online["snapshot_dir"]
    assert offline["revision"] == MAIN_SHA
    assert offline["files"] == online["files"]
    assert hub.requests == []


def test_disk_space_refused_before_downloading(hub: FakeHub, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    weights = len(hub.repos["org/tiny"].files["model.safetensors"])
    result = run_download(hub, cache, "org/tiny", free_bytes=weights)

    assert result["status"] == "error"
    assert result["code"] == "disk_space"
    assert "margin" in result["message"] and str(cache) in result["message"]
    assert hub.fetched() == set()
    assert not (cache / "models--org--tiny" / "blobs").exists()


def test_pickle_only_repo_refused(hub: FakeHub, tmp_path: Path) -> None:
    result = run_download(hub, tmp_path / "hub", "org/pickled")

    assert result["status"] == "error"
    assert result["code"] == "no_safetensors"
    assert "pytorch_model.bin" in result["message"] and "unpickling" in result["message"]
    assert hub.fetched() == set()
