#!/usr/bin/env bash
# newer-tree.sh: builds, outside the clone, a copy of mlir-air's
# programming_examples at our snapshot with upstream's newer files laid over
# it, the tree docs/DEVELOPING.md ("A newer upstream tree") runs phase0 on.
#
#   scripts/newer-tree.sh --git-dir DIR --tsv FILE [--files DIR] [--out DIR] [--allow-missing]
#
#   --git-dir  a bare (or any) git directory of Xilinx/mlir-air at the snapshot;
#              programming_examples/{llms,fused_decode,matrix_vector_multiplication}
#              and the folders the tsv
#              lists as added-from-snapshot are taken from its HEAD
#   --tsv      the list of newer files: path, commit, total_chars, status
#              (new | replaced | deleted | added-from-snapshot), tab-separated
#   --files    where the newer files were saved, one file per tsv path
#              (default <cache>/newer-files); never the clone: upstream's code
#              is not committed here
#   --out      the tree to build (default <cache>/newer-tree); replaced whole,
#              built beside it first so a failed build leaves no half tree
#   --allow-missing  lay over the files that are there and list the others
#              (<out>.missing); without it a missing or short file is exit 2
#
# <cache> is $PHASE0_CACHE, else $XDG_CACHE_HOME/phase0, else ~/.cache/phase0.
# Each saved file must hold exactly the tsv's total_chars characters (UTF-8):
# a truncated save is named, never laid over. <out>.sha256 lists every file of
# the built tree (`sha256sum -c` shows it unchanged after a run).
set -euo pipefail

cache=${PHASE0_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phase0}
git_dir=${MLIR_AIR_GIT_DIR:-} tsv=${UPSTREAM_NEWER_TSV:-} files=$cache/newer-files out=$cache/newer-tree
allow_missing=0
die() {
	echo "newer-tree: $*" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--git-dir) git_dir=${2:?--git-dir needs a directory} && shift ;;
	--tsv) tsv=${2:?--tsv needs a file} && shift ;;
	--files) files=${2:?--files needs a directory} && shift ;;
	--out) out=${2:?--out needs a directory} && shift ;;
	--allow-missing) allow_missing=1 ;;
	-h | --help)
		awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
		exit 0
		;;
	*) die "unknown argument $1 (want --git-dir, --tsv, --files, --out, --allow-missing)" ;;
	esac
	shift
done
[ -n "$git_dir" ] || die "--git-dir is required (a git directory of Xilinx/mlir-air, e.g. what fetch github:Xilinx/mlir-air gives)"
[ -n "$tsv" ] || die "--tsv is required (the list of newer files: path, commit, total_chars, status)"
[ -r "$tsv" ] || die "cannot read the list of newer files $tsv"
head=$(git --git-dir="$git_dir" rev-parse --short=9 HEAD 2>/dev/null) || die "$git_dir is not a git directory with a HEAD"
[ -d "$files" ] || die "no saved newer files under $files (save each tsv path there with the search tool's read_file first)"

tmp=$out.tmp.$$
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp"

# The snapshot: llms, fused_decode, matrix_vector_multiplication (the
# quantized modules import ../../fused_decode and int4_awq; docs/quantized.md)
# and the folders the tsv adds from it.
snap=(programming_examples/llms programming_examples/fused_decode programming_examples/matrix_vector_multiplication)
while IFS=$'\t' read -r path _ _ status; do
	[ "$status" = added-from-snapshot ] || continue
	# programming_examples/{a,b,c/d}: one path per brace item
	if [[ $path =~ ^(.*)\{(.*)\}$ ]]; then
		IFS=, read -ra items <<<"${BASH_REMATCH[2]}"
		for it in "${items[@]}"; do snap+=("${BASH_REMATCH[1]}$it"); done
	else
		snap+=("$path")
	fi
done < <(grep -v '^#' "$tsv")
git --git-dir="$git_dir" archive HEAD "${snap[@]}" | tar -x -C "$tmp" ||
	die "git archive of ${snap[*]} from $git_dir failed"

laid=0 deleted=0 missing=()
while IFS=$'\t' read -r path commit chars status; do
	case $status in
	new | replaced)
		src=$files/$path
		if [ ! -f "$src" ]; then
			missing+=("$path@$commit: not saved ($src)")
			continue
		fi
		have=$(LC_ALL=C.UTF-8 wc -m <"$src")
		if [ "$have" != "$chars" ]; then
			missing+=("$path@$commit: $src holds $have characters, the index $chars")
			continue
		fi
		mkdir -p "$tmp/$(dirname "$path")"
		cp "$src" "$tmp/$path"
		laid=$((laid + 1))
		;;
	deleted)
		rm -rf "${tmp:?}/$path"
		deleted=$((deleted + 1))
		;;
	esac
done < <(grep -v '^#' "$tsv" | tail -n +2)

if [ ${#missing[@]} -gt 0 ]; then
	printf '%s\n' "${missing[@]}" >"$tmp.missing"
	if [ $allow_missing = 0 ]; then
		printf 'newer-tree: %s\n' "${missing[@]}" >&2
		rm -f "$tmp.missing"
		die "${#missing[@]} newer files are missing or short; save them under $files (or pass --allow-missing)"
	fi
fi

(cd "$tmp" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$tmp.sha256"
rm -rf "$out" "$out.missing"
mv "$tmp" "$out"
mv "$tmp.sha256" "$out.sha256"
[ -f "$tmp.missing" ] && mv "$tmp.missing" "$out.missing"
echo "newer-tree: $out: snapshot $head, $laid newer files laid over, $deleted deleted"
if [ ${#missing[@]} -gt 0 ]; then
	echo "newer-tree: ${#missing[@]} newer files not laid over (--allow-missing), listed in $out.missing" >&2
fi
echo "newer-tree: run: phase0 run @$out/programming_examples/llms/hf_models.txt --llms-dir $out/programming_examples/llms"
