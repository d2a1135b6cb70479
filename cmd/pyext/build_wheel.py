"""Pack phase0's abi3 wheel from already-built files (``make python-package`` runs it).

    python build_wheel.py --native _native.abi3.so --cli phase0 --version 0.1.0 --out dist

Standard library only: a wheel is a zip with a dist-info folder. The tag is
cp310-abi3-<platform>: one build for every CPython from 3.10 on.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import sysconfig
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "python" / "phase0"


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def build(native: Path, cli: Path, version: str, out: Path) -> Path:
    tag = f"cp310-abi3-{platform_tag()}"
    dist_info = f"phase0-{version}.dist-info"
    files: list[tuple[str, bytes, int]] = []
    for p in sorted(PACKAGE.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            files.append((f"phase0/{p.relative_to(PACKAGE).as_posix()}", p.read_bytes(), 0o644))
    files.append(("phase0/_native.abi3.so", native.read_bytes(), 0o755))
    files.append(("phase0/bin/phase0", cli.read_bytes(), 0o755))
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: phase0\n"
        f"Version: {version}\n"
        "Summary: Phase 0 of bringing a HuggingFace decoder-only LLM up on AMD NPU2 (mlir-air), callable from Python\n"
        "Requires-Python: >=3.10\n"
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: phase0 build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    files.append((f"{dist_info}/METADATA", metadata.encode(), 0o644))
    files.append((f"{dist_info}/WHEEL", wheel.encode(), 0o644))
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data, _ in files)
    record += f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    out.mkdir(parents=True, exist_ok=True)
    target = out / f"phase0-{version}-{tag}.whl"
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    tmp.replace(target)  # never a half-written wheel under the real name
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", type=Path, required=True)
    ap.add_argument("--cli", type=Path, required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    print(build(a.native, a.cli, a.version, a.out))


if __name__ == "__main__":
    main()
