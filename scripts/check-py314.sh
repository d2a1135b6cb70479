#!/usr/bin/env bash
# check-py314.sh: run the bridge and worker tests against CPython 3.14, the
# newest minor phase0 supports, inside a Debian sid chroot cached outside the
# clone: pyenv here stops at 3.13, Debian unstable ships python3.14 with its
# shared libpython3.14 and NumPy. The venv the tests embed is made in the
# chroot from /usr/bin/python3.14 with the system NumPy (requirements-min.txt's
# only package), as make's NumPy-only venvs are for 3.10–3.13 on the host. The
# torch tests are left out, as they are for those minors.
#
#   scripts/check-py314.sh [--skip-if-unavailable]
#
# Exit 0: every test passed and the output shows 3.14 embedded in both
# packages. Exit 1: a test failed or 3.14 did not run. Exit 2: the chroot
# could not be made (with --skip-if-unavailable this prints the reason and
# exits 0 instead, so `make test` says plainly why 3.14 was not tested).
set -euo pipefail

tag=check-py314 name=py314
# gcc and libc6-dev for cgo (the bridge); libpython3.14 is what the bridge
# loads; python3-numpy is sid's NumPy built for 3.14.
pkgs="gcc libc6-dev python3.14 libpython3.14 python3-numpy"
venv=/opt/phase0/venv-py3.14
setup="python3.14 -m venv --system-site-packages --without-pip $venv"
. "$(dirname "$0")/sid-chroot.sh" "$@"
sid_chroot_ready
echo "$tag: chroot $sid_root"

sid_chroot_run '
py='"$venv"'/bin/python
echo "check-py314: $(go version), embedding $($py -c "import sys, numpy; print(sys.version.split()[0], \"with numpy\", numpy.__version__)")"
echo "check-py314: PHASE0_PYTHON=$py go test ./python/bridge ./python/worker (all but the torch tests)"
log=/tmp/check-py314.log
if ! PHASE0_PYTHON=$py go test -count=1 -v -skip "^(TestImportTorch|TestCallTorch)$" ./python/bridge ./python/worker >$log 2>&1; then
	grep -E "^(\s*--- FAIL|FAIL|panic)" $log || tail -40 $log
	echo "check-py314: FAILED (full output in the chroot at $log)" >&2
	exit 1
fi
grep -E "^(ok|\s*--- SKIP)" $log || true
# The default python of both packages is the 3.14 venv: the bridge says so
# by version, the worker by the venv'"'"'s folder in its subtest name.
ran=1
grep -q "embedded python 3\.14\.[0-9]* from '"$venv"'$" $log || { echo "check-py314: the bridge did not report embedding 3.14" >&2; ran=0; }
grep -q -- "--- PASS: TestRunEveryPython/venv-py3.14 " $log || { echo "check-py314: the worker did not run in the 3.14 venv" >&2; ran=0; }
((ran)) || exit 1
grep -E "embedded python 3\.14|--- PASS: TestRunEveryPython/venv-py3\.14 " $log | sed "s/^ */check-py314: /"
'
