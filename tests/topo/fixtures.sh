#!/bin/sh
# Runs `thermap topo` on every topology sample under fixtures/topo/ (topo -m
# text, hwloc XML, NCCL topology XML) and on the H200 host's own reports,
# and compares the cluster written, the stderr text and the exit code with
# tests/topo/expected/. The cluster's link matrix of each topo -m sample is
# the printed one, cell for cell (tests/test_topo_smi.c checks that against
# an independent reading; this keeps the whole document from drifting).
#
#   sh tests/topo/fixtures.sh            compare (part of make check)
#   sh tests/topo/fixtures.sh --update   rewrite the expected files
set -u
T=${THERMAP:-build/thermap}
E=tests/topo/expected
update=0
[ "${1:-}" = --update ] && update=1
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # name, then the arguments of thermap topo
	name=$1; shift
	"$T" topo "$@" >"$tmp/c.json" 2>"$tmp/err"
	rc=$?
	printf '%s\n' "$rc" >"$tmp/rc"
	if [ $update = 1 ]; then
		cp "$tmp/rc" "$E/$name.rc"
		cp "$tmp/err" "$E/$name.err"
		if [ $rc -eq 0 ]; then cp "$tmp/c.json" "$E/$name.json"
		else rm -f "$E/$name.json"; fi
		return
	fi
	ok=1
	cmp -s "$tmp/rc" "$E/$name.rc" || ok=0
	cmp -s "$tmp/err" "$E/$name.err" || ok=0
	[ $rc -ne 0 ] || cmp -s "$tmp/c.json" "$E/$name.json" || ok=0
	if [ $ok = 1 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL topo fixture $name (exit $rc)"
		diff "$E/$name.err" "$tmp/err" | head -5
		[ $rc -eq 0 ] && diff "$E/$name.json" "$tmp/c.json" | head -10
	fi
}

mkdir -p "$E"
for f in $(find fixtures/topo -type f \( -name '*.txt' -o -name '*.xml' \) \
           ! -name '*.src.txt' ! -path '*/gpu-lists/*' | LC_ALL=C sort); do
	name=$(printf '%s' "${f#fixtures/topo/}" | sed 's|/|__|g')
	case $f in
	*/nvidia-smi-topo/*) check "$name" --host h --smi-topo "$f" ;;
	*/hwloc-xml/*) check "$name" --host h --hwloc "$f" ;;
	*/nccl-topo/*) check "$name" --host h --nccl "$f" ;;
	esac
done
H=fixtures/h200x4-a
check h200x4-a --host h200x4-a --smi-topo $H/topo-m.txt --gpus $H/smi-q.txt \
    --hwloc $H/hwloc.xml
check h200x4-a-L --host h200x4-a --smi-topo $H/topo-m.txt --gpus $H/nvlink.txt
check h200x4-a-hwloc-only --host h200x4-a --hwloc $H/hwloc.xml

# The real 2xH200 host: what `thermap topo --local` wrote there must be what
# its own `nvidia-smi topo -m` and GPU list give here, byte for byte.
R=fixtures/topo/real-h200x2
for list in gpus.csv; do
	"$T" topo --host vm --smi-topo $R/topo-m.txt --gpus $R/$list \
	    >"$tmp/r.json" 2>"$tmp/err"
	if [ $? -eq 0 ] && cmp -s "$tmp/r.json" $R/local.json; then
		pass=$((pass + 1))
	elif [ $update = 0 ]; then
		fail=$((fail + 1))
		echo "FAIL real-h200x2 with $list: differs from topo --local"
		diff $R/local.json "$tmp/r.json" | head -10
	fi
done

[ $update = 1 ] && { echo "topo fixtures: expected files rewritten"; exit 0; }
echo "topo fixtures: $pass passed, $fail failed"
[ $fail -eq 0 ]
