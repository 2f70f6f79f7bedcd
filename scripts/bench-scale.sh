#!/bin/sh
# bench-scale.sh: `thermap plan` on synthetic clusters of 8 to 8192 GPUs
# (a report, not a test). For each job of the table in docs/bench.md it
# generates a cluster, profile and job (build/gen_cluster, 8 GPUs per host),
# plans it with the identity, greedy and thermal (ilp) policies, and prints
# a markdown table: wall time and peak RSS of the whole `thermap plan`
# command (build/runstat), the solve time thermap prints, status, gap, the
# predicted iteration time and its gain over the identity and greedy plans
# of the same run, and the predicted peak temperature. Then the naive run:
# the single integer program (forced with THERMAP_DIRECT_ONLY and
# THERMAP_DIRECT_MAX) with
# time_limit_s 60 on the first 64-GPU job.
#
# usage, from the repository root:
#   sh scripts/bench-scale.sh [THERMAP]           (default build/thermap)
# BENCH_DIR      where inputs and plans go (default: a temporary directory,
#                removed afterwards)
# BENCH_TIMEOUT  hard limit of one run in seconds (default 120); a run that
#                reaches it is reported as timed out
# BENCH_MEM_KIB  address-space limit of one run (default 16 GiB), so that a
#                runaway program fails instead of exhausting the machine
set -eu
T=${1:-build/thermap}
TO=${BENCH_TIMEOUT:-120}
MEM=${BENCH_MEM_KIB:-16777216}
[ -x "$T" ] || { echo "bench-scale: $T: not built (run make)" >&2; exit 2; }
make --no-print-directory build/gen_cluster build/runstat >/dev/null
D=${BENCH_DIR:-$(mktemp -d)}
[ -z "${BENCH_DIR:-}" ] && trap 'rm -rf "$D"' EXIT
mkdir -p "$D"

# the thermal policy with another time limit
policy() {  # seconds → file
	f=$D/thermal-$1.json
	sed "s/\"time_limit_s\": *[0-9.]*/\"time_limit_s\": $1/" \
		policies/thermal.json >"$f"
	grep -q "\"time_limit_s\": $1[,}]" "$f" || {
		echo "bench-scale: policies/thermal.json has no time_limit_s" >&2
		exit 1; }
	echo "$f"
}

# One plan. Appends a tab-separated record to $D/runs:
# case policy rc wall_s rss_kib status gap iteration_ms peak_c solve_ms msg
plan() {  # case dir policy-label policy-file
	c=$1 dir=$2 name=$3 pol=$4
	rc=0
	( ulimit -v "$MEM" 2>/dev/null || :   # not every sh has -v
	  exec ./build/runstat -o "$dir/$name.out" timeout "$TO" "$T" plan \
		--cluster "$dir/cluster.json" --profile "$dir/profile.json" \
		--job "$dir/job.json" --policy "$pol" -o "$dir/plan-$name" \
	) 2>"$dir/$name.err" || rc=$?
	set -- $(tail -n 1 "$dir/$name.err")
	wall=${1:-?} rss=${2:-0}
	msg=$(grep -m 1 '^thermap: error:' "$dir/$name.err" | cut -c 1-160 || :)
	if [ "$rc" -eq 0 ] && [ -f "$dir/plan-$name/plan.json" ]; then
		fields=$(awk '
			/^    "status":/       { s = $2 }
			/^    "gap":/          { g = $2 }
			/^    "iteration_ms":/ { t = $2 }
			/^    "peak_temp_c":/  { p = $2 }
			/^  "ranks":/          { exit }
			END { gsub(/[",]/, "", s); gsub(/,/, "", g); gsub(/,/, "", t)
			      gsub(/,/, "", p); printf "%s\t%s\t%s\t%s", s, g, t, p }
			' "$dir/plan-$name/plan.json")
		solve=$(awk 'NR == 1 { print $(NF - 1); exit }' "$dir/$name.out")
	else
		case $rc in
		124|137) st="timed out" ;;
		*)       st="exit $rc" ;;
		esac
		fields=$(printf '%s\t-\t-\t-' "$st")
		solve=-
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$name" "$rc" "$wall" \
		"$rss" "$fields" "$solve" "$msg" >>"$D/runs"
	# every plan must pass the independent check
	if [ "$rc" -eq 0 ]; then
		if "$T" check --cluster "$dir/cluster.json" --job "$dir/job.json" \
			--profile "$dir/profile.json" --plan "$dir/plan-$name" \
			>"$dir/$name.check" 2>&1; then
			echo "ok $c $name" >>"$D/checks"
		else
			echo "FAILED $c $name: $(tail -n 1 "$dir/$name.check")" \
				>>"$D/checks"
		fi
	fi
	rm -rf "$dir/plan-$name" "$dir"/plan-"$name".tmp-* 2>/dev/null || :
}

# case  hosts tp pp dp  ilp-time-limit(default: the policy's)  target
CASES='8a 1 1 8 1 - optimal<0.02
8b 1 2 4 1 - optimal<0.02
64a 8 2 8 4 - optimal<0.5
64b 8 1 16 4 - optimal<0.5
512 64 4 8 16 5 gap0.01<5
8192 1024 8 16 64 10 gap0.02<10,rss<1GiB'
: >"$D/runs"
: >"$D/cases"
: >"$D/checks"
echo "$CASES" | while read -r c h tp pp dp lim target; do
	dir=$D/$c
	./build/gen_cluster "$h" "$tp" "$pp" "$dp" "$dir"
	printf '%s\t%d\t%s\t%s\n' "$c" $((tp * pp * dp)) \
		"tp$tp pp$pp dp$dp" "$target" >>"$D/cases"
	plan "$c" "$dir" identity policies/identity.json
	plan "$c" "$dir" greedy policies/greedy.json
	if [ "$lim" = - ]; then
		plan "$c" "$dir" thermal policies/thermal.json
	else
		plan "$c" "$dir" thermal "$(policy "$lim")"
	fi
	echo "bench-scale: $c done" >&2
done
# the direct program, which thermap itself uses only where the host
# decomposition does not prove its answer, and up to 1024 ranks × GPUs
export THERMAP_DIRECT_ONLY=1 THERMAP_DIRECT_MAX=1e18
plan 64a "$D/64a" naive-60s "$(policy 60)"
unset THERMAP_DIRECT_ONLY THERMAP_DIRECT_MAX

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo \
	2>/dev/null)
echo "machine: $(nproc) CPUs (${cpu:-unknown}), ${mem:-unknown} memory;" \
	"per run: timeout ${TO} s, address space $((MEM / 1048576)) GiB"
echo
awk -F'\t' '
	FNR == NR { gpus[$1] = $2; job[$1] = $3; target[$1] = $4; next }
	{ n++; c[n] = $1; pol[n] = $2; rc[n] = $3; wall[n] = $4; rss[n] = $5
	  st[n] = $6; gap[n] = $7; it[n] = $8; pk[n] = $9; solve[n] = $10
	  msg[n] = $11
	  if ($3 == 0 && $2 == "identity") { idt[$1] = $8; idp[$1] = $9 }
	  if ($3 == 0 && $2 == "greedy") grt[$1] = $8 }
	# a gap in per cent, with more digits when it is small but not zero
	function gapstr(x) {
		if (x > 0 && x < 1e-4)
			return sprintf("%.4f %%", x * 100)
		return sprintf("%.2f %%", x * 100)
	}
	function pct(base, x) {
		return base == "" || x == "-" ? "-" : sprintf("%+.2f %%", (base - x) / base * 100)
	}
	END {
		print "| GPUs | job | policy | status | gap | plan wall s | solve ms | peak RSS MiB | iteration ms | gain vs identity | gain vs greedy | peak °C (vs identity) |"
		print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
		for (i = 1; i <= n; i++) {
			g = gap[i] == "-" || gap[i] == "null" ? "-" : gapstr(gap[i])
			p = pk[i] == "-" ? "-" : sprintf("%.1f (%+.1f)", pk[i], idp[c[i]] == "" ? 0 : pk[i] - idp[c[i]])
			printf "| %d | %s | %s | %s | %s | %.3f | %s | %.0f | %s | %s | %s | %s |\n",
			       gpus[c[i]], job[c[i]], pol[i], st[i], g, wall[i], solve[i],
			       rss[i] / 1024, it[i], pol[i] == "identity" ? "-" : pct(idt[c[i]], it[i]),
			       pol[i] == "greedy" ? "-" : pct(grt[c[i]], it[i]), p
		}
		print ""
		print "Targets (thermal policy; plan time is the wall time of the whole command):"
		print ""
		print "| GPUs | job | target | measured | met |"
		print "| --- | --- | --- | --- | --- |"
		for (i = 1; i <= n; i++) {
			if (pol[i] != "thermal")
				continue
			t = target[c[i]]
			split(t, a, /[<,]/)
			lim = a[2] + 0
			ok = rc[i] == 0 && wall[i] < lim
			if (a[1] == "optimal") {
				want = sprintf("proven optimal, under %g s", lim)
				ok = ok && st[i] == "optimal"
			} else {
				gl = substr(a[1], 4) + 0
				want = sprintf("gap <= %g %%, under %g s", gl * 100, lim)
				ok = ok && gap[i] != "-" && gap[i] <= gl + 1e-12
			}
			if (t ~ /rss</) {
				want = want ", under 1 GiB RSS"
				ok = ok && rss[i] < 1048576
			}
			got = sprintf("%s, gap %s, %.3f s, %.0f MiB", st[i],
			              gap[i] == "-" ? "-" : gapstr(gap[i]),
			              wall[i], rss[i] / 1024)
			printf "| %d | %s | %s | %s | %s |\n", gpus[c[i]], job[c[i]], want, got, ok ? "yes" : "**no**"
		}
		print ""
		for (i = 1; i <= n; i++) {
			if (pol[i] != "naive-60s")
				continue
			if (rc[i] != 0)
				r = sprintf("no solution (%s after %.1f s)", st[i], wall[i])
			else if (st[i] == "optimal")
				r = sprintf("proven optimal in %.1f s", wall[i])
			else
				r = sprintf("no proven optimum in 60 s: %s, gap %.2f %%, %.1f s", st[i], gap[i] * 100, wall[i])
			printf "Naive single integer program (time_limit_s 60), %d GPUs %s: %s, peak RSS %.0f MiB.\n", gpus[c[i]], job[c[i]], r, rss[i] / 1024
		}
		for (i = 1; i <= n; i++)
			if (msg[i] != "")
				printf "\n%d GPUs %s, %s: %s", gpus[c[i]], job[c[i]], pol[i], msg[i]
		print ""
	}' "$D/cases" "$D/runs"
echo
awk '{ n++; if ($1 != "ok") { bad++; print } }
	END { printf "thermap check: %d of %d plans pass\n", n - bad, n }' "$D/checks"
