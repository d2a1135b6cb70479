# sid-chroot.sh: sourced (never run) by the checks that build and test this
# repo inside a Debian sid chroot cached outside the clone: npu/check-xrt.sh
# (XRT 2.25) and scripts/check-py314.sh (CPython 3.14). Each chroot is made
# once by debootstrap and keyed by its package list and setup commands, so
# another list means another directory: a chroot in use is never rebuilt in place.
#
#   tag=check-foo name=foo pkgs="gcc …" setup="shell run in the chroot once, after apt"
#   . path/to/scripts/sid-chroot.sh "$@"   # [--skip-if-unavailable] [--prepare]: sets $repo
#   sid_chroot_ready           # needs root; makes or reuses the chroot: sets $sid_root
#                              # (with --prepare the check stops there: make test makes
#                              # the chroots while it downloads the venvs)
#   sid_chroot_run 'script'    # bash -euo pipefail in the chroot, in /src (the repo), Go on PATH
#
# SID_SUITE and SID_MIRROR pick another suite or mirror (another key).

# --skip-if-unavailable: a chroot that cannot be made or entered exits 0
# with the reason (make test), not 2.
skip_ok=0 prepare_only=0
for arg in "$@"; do
	case $arg in
	--skip-if-unavailable) skip_ok=1 ;;
	--prepare) prepare_only=1 ;;
	*)
		echo "$tag: unknown argument $arg (want --skip-if-unavailable, --prepare)" >&2
		exit 2
		;;
	esac
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${CACHE_DIR:-${PHASE0_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phase0}}  # as make's CACHE_DIR
suite=${SID_SUITE:-sid}
mirror=${SID_MIRROR:-http://deb.debian.org/debian}
setup=${setup:-}

unavailable() {
	echo "$tag: SKIPPED: $*" >&2
	if ((skip_ok)); then exit 0; fi
	exit 2
}

# The setup joins the key only when there is one, so the xrt chroot made
# before setups existed keeps its directory.
sid_chroot_key() {
	{
		printf '%s\n%s\n%s\n' "$suite" "$mirror" "$pkgs"
		[[ -z $setup ]] || printf '%s\n' "$setup"
	} | sha256sum | cut -c1-12
}

sid_chroot_make() {
	if ! command -v debootstrap >/dev/null; then
		echo "$tag: installing debootstrap with apt"
		apt-get install -y -q debootstrap >/dev/null || return 1
	fi
	local tmp="$sid_root.tmp.$$"
	rm -rf "$tmp"
	echo "$tag: creating a $suite chroot in $sid_root (first time only)"
	local t0=$SECONDS
	# minbase then apt inside: apt resolves dependencies properly,
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
	if [[ -n $setup ]]; then
		chroot "$tmp" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -euc "$setup" >>"$tmp.log" 2>&1 || {
			tail -5 "$tmp.log" >&2
			return 1
		}
	fi
	echo "$pkgs" >"$tmp/.phase0-ready"
	# Renamed into place only when complete, so an interrupted creation is
	# never mistaken for a usable chroot.
	mv "$tmp" "$sid_root"
	mv "$tmp.log" "$sid_root.log"
	echo "$tag: chroot ready in $((SECONDS - t0))s (log: $sid_root.log)"
}

sid_chroot_ready() {
	if [[ $(id -u) -ne 0 ]]; then
		unavailable "making and entering a chroot needs root (running as uid $(id -u))"
	fi
	local tool
	for tool in unshare chroot mount sha256sum flock; do
		command -v "$tool" >/dev/null || unavailable "$tool is not installed"
	done
	goroot=$(go env GOROOT 2>/dev/null) || unavailable "no Go toolchain on PATH"
	gomodcache=$(go env GOMODCACHE)
	sid_root="$cache/$suite-$name-chroot-$(sid_chroot_key)"
	mkdir -p "$cache"
	# One creator at a time: a second make run waits instead of racing.
	exec 9>"$cache/.$suite-$name-chroot.lock"
	flock 9
	if [[ ! -f "$sid_root/.phase0-ready" ]]; then
		sid_chroot_make || unavailable "could not create the $suite chroot (see $sid_root.tmp.*.log)"
	fi
	flock -u 9
	if ((prepare_only)); then
		echo "$tag: chroot ready: $sid_root"
		exit 0
	fi
}

# The mounts live in a private mount namespace: they vanish with it, so an
# interrupted run leaves nothing mounted on the host. The host's Go toolchain
# (read-only) and module cache are bound in; the build cache is the chroot's.
sid_chroot_run() {
	unshare --mount --propagation private bash -euo pipefail -c '
root=$1 repo=$2 goroot=$3 gomodcache=$4 script=$5
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
	bash -euo pipefail -c "cd /src
$script"
' _ "$sid_root" "$repo" "$goroot" "$gomodcache" "$1"
}
