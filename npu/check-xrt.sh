#!/usr/bin/env bash
# check-xrt.sh: build, vet and test the `xrt`-tagged npu code against the real
# XRT 2.25 headers and libxrt of Debian unstable, inside a debootstrap chroot
# of sid cached outside the clone. This machine's release carries only XRT
# 2.13 (no NPU support), so the chroot is the one place the shim can be
# compiled and linked against the API the NPU needs.
#
#   npu/check-xrt.sh [--skip-if-unavailable]
#
# Exit 0: built, vetted, tested and the probe ran. Exit 1: the build, vet,
# tests or probe failed. Exit 2: the chroot could not be made (with
# --skip-if-unavailable this prints the reason and exits 0 instead, so
# `make test` can say plainly why the XRT check did not run).
set -euo pipefail

skip_ok=0
[[ "${1:-}" == "--skip-if-unavailable" ]] && skip_ok=1

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE_DIR:-$HOME/.cache/phase0}
suite=${XRT_SUITE:-sid}
mirror=${XRT_MIRROR:-http://deb.debian.org/debian}
# g++ and pkg-config build the shim; the three libxrt packages are the NPU
# flavour of XRT (the plugin that talks to the amdxdna driver and xrt-smi);
# uuid-dev because xrt/xrt_uuid.h includes <uuid/uuid.h> and libxrt-dev
# does not depend on it.
pkgs="g++ pkg-config uuid-dev libxrt-dev libxrt-npu2 libxrt-utils-npu"
key=$(printf '%s\n%s\n%s\n' "$suite" "$mirror" "$pkgs" | sha256sum | cut -c1-12)
root="$cache/$suite-xrt-chroot-$key"
stamp="$root/.phase0-ready"

unavailable() {
	echo "check-xrt: SKIPPED: $*" >&2
	if ((skip_ok)); then exit 0; fi
	exit 2
}

if [[ $(id -u) -ne 0 ]]; then
	unavailable "making and entering a chroot needs root (running as uid $(id -u))"
fi
for tool in unshare chroot mount sha256sum; do
	command -v "$tool" >/dev/null || unavailable "$tool is not installed"
done
goroot=$(go env GOROOT 2>/dev/null) || unavailable "no Go toolchain on PATH"
gomodcache=$(go env GOMODCACHE)

make_chroot() {
	if ! command -v debootstrap >/dev/null; then
		echo "check-xrt: installing debootstrap with apt"
		apt-get install -y -q debootstrap >/dev/null || return 1
	fi
	local tmp="$root.tmp.$$"
	rm -rf "$tmp"
	echo "check-xrt: creating a $suite chroot in $root (first time only)"
	local t0=$SECONDS
	# minbase then apt inside: apt resolves libxrt's dependencies properly,
	# debootstrap --include does not always.
	debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$tmp.log" 2>&1 || {
		tail -5 "$tmp.log" >&2
		return 1
	}
	# The mirror may serve a frozen snapshot whose Release file is past its
	# Valid-Until date; the packages are still the ones we want.
	echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99phase0-snapshot"
	chroot "$tmp" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $pkgs && apt-get clean" \
		>>"$tmp.log" 2>&1 || {
		tail -5 "$tmp.log" >&2
		return 1
	}
	echo "$pkgs" >"$tmp/.phase0-ready"
	# Renamed into place only when complete, so an interrupted creation is
	# never mistaken for a usable chroot.
	mv "$tmp" "$root"
	mv "$tmp.log" "$root.log"
	echo "check-xrt: chroot ready in $((SECONDS - t0))s (log: $root.log)"
}

mkdir -p "$cache"
# One creator at a time: a second make run waits instead of racing.
exec 9>"$cache/.sid-xrt-chroot.lock"
flock 9
if [[ ! -f "$stamp" ]]; then
	make_chroot || unavailable "could not create the $suite chroot (see $root.tmp.*.log)"
fi
flock -u 9

xrt_version=$(chroot "$root" dpkg-query -W -f '${Version}' libxrt-dev 2>/dev/null || echo unknown)
echo "check-xrt: chroot $root (libxrt-dev $xrt_version)"

# The mounts live in a private mount namespace: they vanish with it, so an
# interrupted run leaves nothing mounted on the host.
unshare --mount --propagation private bash -euo pipefail -c '
root=$1 repo=$2 goroot=$3 gomodcache=$4
mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/src" "$root/usr/local/go" "$root/gomodcache"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --bind "$goroot" "$root/usr/local/go"
mount -o remount,bind,ro "$root/usr/local/go"
mount --bind "$repo" "$root/src"
if [[ -d "$gomodcache" ]]; then mount --bind "$gomodcache" "$root/gomodcache"; fi
exec chroot "$root" /usr/bin/env -i \
	PATH=/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOPROXY=off GOMODCACHE=/gomodcache \
	GOCACHE=/root/.cache/go-build CGO_ENABLED=1 \
	bash -euo pipefail -c "
cd /src
echo \"check-xrt: \$(go version), \$(g++ --version | head -1)\"
echo check-xrt: go vet -tags xrt ./npu/...
go vet -tags xrt ./npu/...
echo check-xrt: go build -tags xrt ./npu/...
go build -tags xrt -o /tmp/npuprobe ./npu/cmd/npuprobe
go build -tags xrt ./npu/...
echo \"check-xrt: linked against: \$(ldd /tmp/npuprobe | grep -o \"libxrt[^ ]*\" | sort -u | tr \"\n\" \" \")\"
echo check-xrt: go test -tags xrt ./npu/...
go test -count=1 -tags xrt ./npu/...
go test -count=1 -tags xrt -run TestXRTLinked -v ./npu
echo check-xrt: npuprobe
/tmp/npuprobe
"
' _ "$root" "$repo" "$goroot" "$gomodcache"
