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
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "topo fixtures" "$@"
E=tests/topo/expected

check() {  # name, then the arguments of thermap topo
	name=$1; shift
	"$T" topo "$@" >"$W/c.json" 2>"$W/err"
	printf '%s\n' "$?" >"$W/rc"
	pinned_run "$name" "topo fixture $name" || :
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
# its own `nvidia-smi topo -m` and GPU list give here, byte for byte, but
# for the GPUs' numa_node, which the recording predates (its topo -m has
# the NUMA Affinity column; the field came later)
R=fixtures/topo/real-h200x2
for list in gpus.csv; do
	"$T" topo --host vm --smi-topo $R/topo-m.txt --gpus $R/$list \
	    >"$W/r0.json" 2>"$W/err"
	rc=$?
	sed 's/, "numa_node": [0-9]*}/}/' "$W/r0.json" >"$W/r.json"
	if [ $rc -eq 0 ] && cmp -s "$W/r.json" $R/local.json; then
		ok
	elif [ "$update" != --update ]; then
		bad "real-h200x2 with $list: differs from topo --local"
		diff $R/local.json "$W/r.json" | head -10
	fi
done

# The real 2xH100 host (fixtures/real/topo-h100x2): topo --local through
# NVML wrote there what it wrote through nvidia-smi (THERMAP_NO_NVML=1),
# and what its own topo -m and GPU list give here, byte for byte
R=fixtures/real/topo-h100x2
"$T" topo --host vm --smi-topo $R/topo-m.txt --gpus $R/gpus.csv \
    >"$W/r.json" 2>"$W/err"
rc=$?
if [ $rc -eq 0 ] && cmp -s "$W/r.json" $R/nvml.json && cmp -s $R/smi.json $R/nvml.json
then
	ok
elif [ "$update" != --update ]; then
	bad "real-h100x2: NVML's topo --local differs from nvidia-smi's"
	diff $R/nvml.json "$W/r.json" | head -10
	diff $R/nvml.json $R/smi.json | head -10
fi

[ "$update" = --update ] && { echo "topo fixtures: expected files rewritten"; exit 0; }
finish
