#!/usr/bin/env bash
# check-xrt.sh: build, vet and test the `xrt`-tagged npu code against the real
# XRT 2.25 headers and libxrt of Debian unstable, inside a debootstrap chroot
# of sid cached outside the clone (scripts/sid-chroot.sh). This machine's
# release carries only XRT 2.13 (no NPU support), so the chroot is the one
# place the shim can be compiled and linked against the API the NPU needs.
#
#   npu/check-xrt.sh [--skip-if-unavailable]
#
# Exit 0: built, vetted, tested and the probe ran. Exit 1: the build, vet,
# tests or probe failed. Exit 2: the chroot could not be made (with
# --skip-if-unavailable this prints the reason and exits 0 instead, so
# `make test` can say plainly why the XRT check did not run).
set -euo pipefail

tag=check-xrt name=xrt
# g++ and pkg-config build the shim; the three libxrt packages are the NPU
# flavour of XRT (the plugin that talks to the amdxdna driver and xrt-smi);
# uuid-dev because xrt/xrt_uuid.h includes <uuid/uuid.h> and libxrt-dev
# does not depend on it.
pkgs="g++ pkg-config uuid-dev libxrt-dev libxrt-npu2 libxrt-utils-npu"
. "$(dirname "$0")/../scripts/sid-chroot.sh" "$@"
sid_chroot_ready

xrt_version=$(chroot "$sid_root" dpkg-query -W -f '${Version}' libxrt-dev 2>/dev/null || echo unknown)
echo "check-xrt: chroot $sid_root (libxrt-dev $xrt_version)"

sid_chroot_run '
echo "check-xrt: $(go version), $(g++ --version | head -1)"
echo check-xrt: go vet -tags xrt ./npu/...
go vet -tags xrt ./npu/...
echo check-xrt: go build -tags xrt ./npu/...
go build -tags xrt -o /tmp/npuprobe ./npu/cmd/npuprobe
go build -tags xrt ./npu/...
echo "check-xrt: linked against: $(ldd /tmp/npuprobe | grep -o "libxrt[^ ]*" | sort -u | tr "\n" " ")"
echo check-xrt: go test -tags xrt ./npu/...
go test -count=1 -tags xrt ./npu/...
go test -count=1 -tags xrt -run TestXRTLinked -v ./npu
echo check-xrt: npuprobe
/tmp/npuprobe
'
