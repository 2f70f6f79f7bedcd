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
#   sh scripts/bench-scale.sh io [THERMAP [BASELINE]]
# BENCH_DIR      where inputs and plans go (default: a temporary directory,
#                removed afterwards)
# BENCH_TIMEOUT  hard limit of one run in seconds (default 120; 900 for io)
# BENCH_MEM_KIB  address-space limit of one run (default 16 GiB), so that a
#                runaway program fails instead of exhausting the machine
#
# io: reading the inputs and writing the plan directory at scale. The
# identity policy (no search, so what grows is reading, joining and
# writing) on tp8 pp16 jobs of 8,192 to 131,072 GPUs (BENCH_IO_HOSTS, hosts
# of 8 GPUs, dp = hosts / 16), BENCH_IO_REPS runs each (default 3; the
# median is shown); with BASELINE, each run of THERMAP is paired with one
# of BASELINE on the same inputs, side by side, and their plans at the
# smallest size are compared byte for byte (diff -r). Every plan goes to a
# directory of its own, none is removed between runs (with the rest at the
# end, unless BENCH_DIR keeps them): a file system that is slow to reuse
# just-deleted inodes (ext4 without a journal skips them) would charge one
# run for the files of the last.
set -eu
IO=
if [ "${1:-}" = io ]; then
	IO=1
	shift
fi
T=${1:-build/thermap}
TO=${BENCH_TIMEOUT:-${IO:+900}}
TO=${TO:-120}
MEM=${BENCH_MEM_KIB:-16777216}
[ -x "$T" ] || { echo "bench-scale: $T: not built (run make)" >&2; exit 2; }
make --no-print-directory build/gen_cluster build/runstat >/dev/null
D=${BENCH_DIR:-$(mktemp -d)}
[ -z "${BENCH_DIR:-}" ] && trap 'rm -rf "$D"' EXIT
mkdir -p "$D"

# ---- io: reading and writing at scale ----------------------------------------
if [ -n "$IO" ]; then
	B=${2:-}
	[ -z "$B" ] || [ -x "$B" ] || {
		echo "bench-scale: $B: not an executable" >&2; exit 2; }
	REPS=${BENCH_IO_REPS:-3}
	: >"$D/io"
	# one run: label hosts dir rep binary; appends "label gpus wall rss rc"
	io_run() {
		rc=0
		( ulimit -v "$MEM" 2>/dev/null || :
		  exec ./build/runstat -o /dev/null timeout "$TO" "$5" plan \
			--cluster "$3/cluster.json" --profile "$3/profile.json" \
			--job "$3/job.json" --policy policies/identity.json \
			-o "$3/plan-$1-$4" ) 2>"$3/$1-$4.err" || rc=$?
		set -- "$1" "$2" $(tail -n 1 "$3/$1-$4.err")
		echo "$1 $(($2 * 8)) ${3:-?} ${4:-0} $rc" >>"$D/io"
	}
	first=
	for h in ${BENCH_IO_HOSTS:-1024 2048 4096 8192 16384}; do
		dir=$D/io-$h
		./build/gen_cluster "$h" 8 16 $((h / 16)) "$dir"
		first=${first:-$dir}
		r=1
		while [ "$r" -le "$REPS" ]; do
			[ -z "$B" ] || io_run base "$h" "$dir" "$r" "$B"
			io_run new "$h" "$dir" "$r" "$T"
			r=$((r + 1))
		done
		echo "bench-scale: io $((h * 8)) GPUs done" >&2
	done
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo \
		2>/dev/null)
	echo "machine: $(nproc) CPUs (${cpu:-unknown}); identity policy, tp8" \
		"pp16, $REPS run(s) each, median"
	echo
	awk -v base="$B" '
		{ k = $1 " " $2; n[k]++; w[k, n[k]] = $3; m[k, n[k]] = $4
		  if ($5 != 0) bad[k] = $5; g[$2] = 1 }
		function med(k, a,   i, j, t, c, v) {
			c = n[k]
			for (i = 1; i <= c; i++) v[i] = a[k, i]
			for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
				if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
			return v[int((c + 1) / 2)]
		}
		function cell(k) {
			if (bad[k] != "") return "exit " bad[k] " | -"
			return sprintf("%.2f | %.0f", med(k, w), med(k, m) / 1024)
		}
		END {
			if (base != "") {
				print "| GPUs | baseline wall s | baseline peak RSS MiB | wall s | peak RSS MiB |"
				print "| --- | --- | --- | --- | --- |"
			} else {
				print "| GPUs | wall s | peak RSS MiB |"
				print "| --- | --- | --- |"
			}
			c = 0
			for (x in g) s[++c] = x + 0
			for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
				if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
			for (i = 1; i <= c; i++)
				if (base != "")
					printf "| %d | %s | %s |\n", s[i], cell("base " s[i]), cell("new " s[i])
				else
					printf "| %d | %s |\n", s[i], cell("new " s[i])
		}' "$D/io"
	if [ -n "$B" ] && [ -n "$first" ]; then
		echo
		if diff -r "$first/plan-base-1" "$first/plan-new-1" >/dev/null 2>&1
		then
			echo "plans at $(( $(basename "$first" | cut -d- -f2) * 8 ))" \
				"GPUs: byte-identical (diff -r)"
		else
			echo "plans at $(( $(basename "$first" | cut -d- -f2) * 8 ))" \
				"GPUs: DIFFER"
		fi
	fi
	exit 0
fi

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
