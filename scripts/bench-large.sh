#!/bin/sh
# bench-large.sh: the whole loop at the sizes of the largest jobs (a
# report, not a test; docs/bench.md, "The largest clusters"). For tp8 pp16
# jobs of 8,192 to 131,072 GPUs (BENCH_LARGE_HOSTS node ranks, 8 GPUs per
# host, dp = hosts / 16) on a cluster with one spare host
# (build/gen_cluster), one run each of, in this order:
#   identity   thermap plan --policy identity (reading and writing alone)
#   thermal    thermap plan with the shipped thermal policy
#   check      thermap check of the thermal plan, and with --profile
#   replan     thermap replan of the thermal plan after the host of its
#              node rank 0 is gone from the cluster (the fewest moves,
#              onto the spare)
# and prints a markdown table: wall seconds and peak RSS of each command
# (build/runstat), thermal's wall time as a multiple of identity's, and
# from thermal's summary line the gap on time, the peak beside its proven
# bound at the plan's time, and identity's peak; from its plan.json the
# ranks it moves and the least its moves bound proves.
#
# usage, from the repository root:
#   sh scripts/bench-large.sh [THERMAP]           (default build/thermap)
# BENCH_DIR      where inputs and plans go (default: a temporary directory,
#                removed afterwards)
# BENCH_TIMEOUT  hard limit of one command in seconds (default 300)
set -eu
T=${1:-build/thermap}
TO=${BENCH_TIMEOUT:-300}
[ -x "$T" ] || { echo "bench-large: $T: not built (run make)" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || {
	echo "bench-large: needs python3 (to drop a host from the cluster)" >&2
	exit 2; }
make --no-print-directory build/gen_cluster build/runstat >/dev/null
D=${BENCH_DIR:-$(mktemp -d)}
[ -z "${BENCH_DIR:-}" ] && trap 'rm -rf "$D"' EXIT
mkdir -p "$D"

# run NAME DIR CMD...: prints "wall rss" (or "timeout"/"failed rc")
run() {
	name=$1 dir=$2
	shift 2
	rc=0
	./build/runstat -o "$dir/$name.out" timeout "$TO" "$@" \
		2>"$dir/$name.err" || rc=$?
	if [ "$rc" = 0 ] || [ "$rc" = 3 ]; then
		tail -n 1 "$dir/$name.err"
	elif [ "$rc" = 124 ]; then
		echo "timeout 0"
	else
		echo "failed($rc) 0"
	fi
}

mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

echo "| GPUs | identity s (MiB) | thermal s (MiB) | thermal / identity |" \
     "gap on time | peak, bound at that time, identity's peak °C |" \
     "ranks moved (proven least) | check s | check --profile s |" \
     "replan, a host lost, s (MiB) |"
echo "| --: | --: | --: | --: | --: | --- | --: | --: | --: | --: |"
for h in ${BENCH_LARGE_HOSTS:-1024 4096 16384}; do
	dir=$D/large-$h
	./build/gen_cluster $((h + 1)) 8 16 $((h / 16)) "$dir" >/dev/null
	set -- $(run identity "$dir" "$T" plan --cluster "$dir/cluster.json" \
		--profile "$dir/profile.json" --job "$dir/job.json" \
		--policy policies/identity.json -o "$dir/plan-identity" --quiet)
	iw=$1 ir=$2
	set -- $(run thermal "$dir" "$T" plan --cluster "$dir/cluster.json" \
		--profile "$dir/profile.json" --job "$dir/job.json" \
		-o "$dir/plan-thermal")
	tw=$1 tr=$2
	set -- $(run check "$dir" "$T" check --cluster "$dir/cluster.json" \
		--job "$dir/job.json" --plan "$dir/plan-thermal")
	cw=$1
	set -- $(run checkp "$dir" "$T" check --cluster "$dir/cluster.json" \
		--job "$dir/job.json" --plan "$dir/plan-thermal" \
		--profile "$dir/profile.json")
	pw=$1
	# the host of the thermal plan's node rank 0, gone from the cluster
	python3 - "$dir/plan-thermal/plan.json" "$dir/cluster.json" \
		"$dir/cluster-lost.json" <<'EOF'
import json, sys
plan, cluster, out = sys.argv[1:]
gone = next(n["host"] for n in json.load(open(plan))["nodes"]
            if n["node_rank"] == 0)
c = json.load(open(cluster))
c["nodes"] = [n for n in c["nodes"] if n["host"] != gone]
json.dump(c, open(out, "w"))
EOF
	set -- $(run replan "$dir" "$T" replan --previous "$dir/plan-thermal" \
		--cluster "$dir/cluster-lost.json" --profile "$dir/profile.json" \
		--job "$dir/job.json" -o "$dir/plan-replan" --quiet)
	rw=$1 rr=$2
	line=$(grep -m 1 '^policy ' "$dir/thermal.out" || :)
	gap=$(echo "$line" | sed -n 's/.*gap \([0-9.]* %\).*/\1/p')
	peak=$(echo "$line" | sed -n 's/.*; peak \([0-9.]*\) °C, bound \([0-9.]*\) °C.*/\1, \2/p')
	ipeak=$(sed -n 's/.*; peak [0-9.]* °C (identity \([0-9.]*\) °C.*/\1/p' \
		"$dir/thermal.out" | head -n 1)
	ratio=$(awk -v a="$tw" -v b="$iw" 'BEGIN { if (b > 0 && a > 0)
		printf "%.2f", a / b; else print "–" }')
	# the ranks the thermal plan moves, and how many its moves bound
	# proves any placement as fast and as cool must move
	moves=$(python3 - "$dir/plan-thermal/plan.json" <<'EOF' || echo "–"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    m = d["predicted"]["moved_ranks"]
    g = d["solver"]["gaps"].get("moves")
    print("%d (%s)" % (m, "–" if g is None else "%d" % round(m * (1 - g))))
except Exception:
    print("–")
EOF
)
	echo "| $((h * 8)) | $iw ($(mib "$ir")) | $tw ($(mib "$tr")) | $ratio |" \
	     "${gap:-–} | ${peak:-–, –}, ${ipeak:-–} | $moves | $cw | $pw |" \
	     "$rw ($(mib "$rr")) |"
done
