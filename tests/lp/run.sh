#!/bin/sh
# --write-lp: 'thermap plan' writes the integer program of its first phase
# (the best iteration time, docs/model.md section 10) in CPLEX LP format.
# Each case re-solves that file with other solvers when they are installed
# (cbc from coinor-cbc, glpsol from glpk-utils) and holds their optimum to
# the plan's solver.reference_iteration_ms within 1e-6 relative, or, for an
# infeasible job, confirms that they find no solution either. A missing
# solver fails the case, unless THERMAP_SKIP names it ("cbc", "glpsol"):
# then the case is counted as skipped, and recorded in THERMAP_SKIPLOG
# when that names a file (make check prints the count at its end). Also: the plan
# directory is byte-identical with and without the option, the file is the
# same whatever the method, every row and column keeps its thermap name (GLPK
# puts r_N/x_N in place of a name CPLEX LP cannot take) and row names are
# unique, and a write failure is one line naming the file.
# THERMAP names the binary (build/thermap by default).
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "lp export"
F=fixtures/h200x4-a
P=fixtures/public
D=tests/cli/data

have() { command -v "$1" >/dev/null 2>&1; }

# near NAME GOT WANT: GOT is WANT within 1e-6 relative
near() {
	if [ -n "$2" ] && awk -v g="$2" -v w="$3" 'BEGIN { d = g - w; if (d < 0) d = -d;
		a = w < 0 ? -w : w; exit !(d <= 1e-6 * a) }'; then
		ok
	else
		bad "$1: optimum '$2', thermap's first phase $3"
	fi
}

# cbc_solve LP: prints "STATUS VALUE" from cbc's solution file
cbc_solve() {
	cbc "$1" solve solu "$1.cbc" >"$1.cbc-log" 2>&1
	awk 'NR == 1 { print $1, $NF }' "$1.cbc"
}

# glpsol_solve LP: prints "STATUS VALUE" from glpsol's report
glpsol_solve() {
	glpsol --lp "$1" -o "$1.glpsol" >"$1.glpsol-log" 2>&1
	awk '/^Status:/ { s = $NF } /^Objective:/ { v = $4 } END { print s, v }' "$1.glpsol"
}

# lint NAME LP: what thermap wrote, before any solver reads it
lint() {
	if head -1 "$2" | grep -q '^\\\* Problem: thermap phase 0: the best iteration time'; then ok; else bad "$1: header: $(head -1 "$2")"; fi
	if grep -qx ' iteration_ms: + T' "$2"; then ok; else bad "$1: objective is not 'iteration_ms: + T'"; fi
	# GLPK's stand-ins for names that CPLEX LP cannot take
	if grep -qE '(^| |-|\+)(r|x)_[0-9]+( |:|$)' "$2"; then bad "$1: a name was replaced: $(grep -E '(^| )(r|x)_[0-9]+( |:|$)' "$2" | head -1)"; else ok; fi
	dup=$(awk '/^Subject To/ { on = 1; next } /^$/ { on = 0 } on && /^ [A-Za-z][A-Za-z0-9_]*:/ { sub(/^ /, ""); sub(/:.*/, ""); print }' "$2" | sort | uniq -d | head -1)
	if [ -z "$dup" ]; then ok; else bad "$1: row name $dup repeats"; fi
}

# lp NAME EXPECT ARGS...: plans with and without --write-lp, compares the
# plan directories, lints the file and re-solves it with every solver there
# is. EXPECT: 'ref', the solvers' optimum is the plan's
# reference_iteration_ms (ilp, brute); 'above', the plan's iteration_ms is
# no better than that optimum (greedy, identity); 'infeasible', plan exits
# with 5 and the solvers find no solution.
lp() {
	name=$1 expect=$2 rc=0
	shift 2
	[ "$expect" = infeasible ] && rc=5
	"$T" plan "$@" -o "$W/$name" --write-lp "$W/$name.lp" >"$W/out" 2>"$W/err"
	got=$?
	if [ "$got" != "$rc" ]; then
		bad "$name: exit $got, expected $rc; stderr: $(cat "$W/err")"
		return
	fi
	if [ -s "$W/$name.lp" ]; then ok; else bad "$name: no $name.lp"; return; fi
	lint "$name" "$W/$name.lp"
	if [ "$rc" = 0 ]; then
		"$T" plan "$@" -o "$W/$name.plain" --quiet
		if diff -r "$W/$name" "$W/$name.plain" >/dev/null; then ok; else bad "$name: --write-lp changed the plan"; fi
		want=$(num "$W/$name/plan.json" reference_iteration_ms)
		[ "$expect" = above ] && want=$(num "$W/$name/plan.json" iteration_ms)
	fi
	for s in cbc glpsol; do
		if ! have $s; then
			# a solver that is not installed: a failure, unless
			# THERMAP_SKIP names it
			skipped "$name" $s "$s is not installed" "install it: scripts/ensure-deps.sh"
			continue
		fi
		set -- $(${s}_solve "$W/$name.lp")
		if [ "$rc" = 0 ]; then
			case "$1" in
			Optimal|OPTIMAL) ;;
			*) bad "$name ($s): status $1, expected optimal" ;;
			esac
			if [ "$expect" = ref ]; then
				near "$name ($s)" "$2" "$want"
				printf 'lp export: %s: %s %s, thermap %s\n' "$name" "$s" "$2" "$want"
			elif awk "BEGIN { exit !($want >= $2 * (1 - 1e-6)) }"; then
				ok
				printf 'lp export: %s: %s %s, the plan (%s) %s\n' "$name" "$s" "$2" "$expect" "$want"
			else
				bad "$name ($s): the plan's $want ms beats the optimum $2 ms"
			fi
		else
			case "$1" in
			Infeasible|EMPTY) ok ;;
			*) bad "$name ($s): status $1, expected infeasible" ;;
			esac
		fi
	done
}

# ---- inputs written here -----------------------------------------------------
policy() {  # policy FILE METHOD PP_NVLINK MAX_TEMP_C MAX_MOVES
	cat >"$1" <<EOF
{
  "format": "thermap.policy/1",
  "name": "lp-$2",
  "method": "$2",
  "objective": {"order": ["time", "peak_temp"], "tolerance": 0.01, "move_cost_ms": 0},
  "constraints": {"tp_nvlink": true, "pp_nvlink": $3, "max_temp_c": $4,
                  "rebalance_layers": false, "min_layers": 1, "max_moves": $5},
  "solver": {"time_limit_s": 60, "mip_gap": 0.0}
}
EOF
}
policy "$W/brute.json" brute false null null
policy "$W/greedy.json" greedy false null null
policy "$W/ilp.json" ilp false null null
# every kind of row: pp_nvlink, max_moves, and a cap that binds
policy "$W/capped.json" ilp true 67.2 6
# derates that differ, so that the D columns and their rows are there
derates() {  # derates IN OUT D1 D2 ...: the i-th "derate" becomes Di
	in=$1 out=$2
	shift 2
	# each a real slowdown (basis "thermal"), known exactly
	awk -v list="$*" 'BEGIN { n = split(list, d, " ") }
		/"derate_sd":/ { sub(/"derate_sd": [0-9.]+/, "\"derate_sd\": 0") }
		/"derate_basis":/ { sub(/"derate_basis": "[a-z-]+"/, "\"derate_basis\": \"thermal\"") }
		/"derate":/ { i++; r = "\"derate\": " d[i]
			if (!has) r = r ", \"derate_sd\": 0, \"derate_basis\": \"thermal\""
			sub(/"derate": [0-9.]+/, r) }
		{ print }' has="$(grep -c '"derate_basis"' "$in")" "$in" >"$out"
}
derates $F/profile.json "$W/h200-derate.json" 1.0 1.03 1.0 1.05
derates $D/dgx1-profile.json "$W/dgx1-derate.json" 1.0 1.04 1.0 1.02 1.07 1.0 1.01 1.03
cat >"$W/job-pp4.json" <<EOF
{
  "format": "thermap.job/1",
  "parallel": {"tp": 1, "cp": 1, "ep": 1, "dp": 1, "pp": 4, "vpp": 1,
               "order": "tp-cp-ep-dp-pp"},
  "nproc_per_node": 4,
  "schedule": {"kind": "1f1b", "microbatches": 8},
  "layer_fwd_ms": 1.1, "layer_bwd_ms": 2.2,
  "stages": [
    {"layers": 8, "extra_fwd_ms": 0.6, "extra_bwd_ms": 1.0, "act_mib": 64},
    {"layers": 8, "act_mib": 64},
    {"layers": 8, "act_mib": 64},
    {"layers": 8, "extra_fwd_ms": 6.0, "extra_bwd_ms": 12.0}
  ]
}
EOF
# two hosts of four H200 each, two ranks per node: z columns, hops across
# the network
"$T" topo --host a --smi-topo $F/topo-m.txt --gpus $F/smi-q.txt \
	--host b --smi-topo $F/topo-m.txt --gpus $F/smi-q.txt -o "$W/two-cl.json"
"$T" profile --host a $F/telemetry.csv --host b $F/telemetry.csv \
	-o "$W/two-prof.json" --quiet
sed 's/"nproc_per_node": 4/"nproc_per_node": 2/' $F/job-pp2-dp2.json >"$W/two-job.json"

# ---- cases -------------------------------------------------------------------
H="--cluster $F/cluster.json"
G="--cluster $P/dgx1-v100/cluster.json"
lp h200-demo ref $H --profile $F/profile.json --job $F/job-pp2-dp2.json
lp h200-derate-ilp ref $H --profile "$W/h200-derate.json" --job "$W/job-pp4.json" --policy "$W/ilp.json"
lp h200-derate-brute ref $H --profile "$W/h200-derate.json" --job "$W/job-pp4.json" --policy "$W/brute.json"
lp dgx1-tp2pp4 ref $G --profile $D/dgx1-profile.json --job $D/job-tp2pp4.json
lp dgx1-capped ref $G --profile $D/dgx1-profile.json --job $D/job-tp2pp4.json --policy "$W/capped.json"
lp dgx1-derate-ilp ref $G --profile "$W/dgx1-derate.json" --job $D/job-tp2pp4.json --policy "$W/ilp.json"
lp dgx1-derate-greedy above $G --profile "$W/dgx1-derate.json" --job $D/job-tp2pp4.json --policy "$W/greedy.json"
lp two-hosts ref --cluster "$W/two-cl.json" --profile "$W/two-prof.json" --job "$W/two-job.json"
# two network groups and a gradient all-reduce: the A column and its rows
lp groups-grad ref --cluster $D/groups-cluster.json --profile $D/groups-profile.json --job $D/job-dp2-grad.json
lp a10-infeasible infeasible --cluster $P/a10-allsys/cluster.json --profile $D/a10-profile.json --job $D/job-a10-tp2.json

# the rows and columns each case was chosen for, one row a line (GLPK
# continues a long row on lines that start with a sign)
rows() {
	awk '/^ [A-Za-z][^ ]*:/ { if (r != "") print r; r = $0; next }
		/^ [-+]/ && r != "" { r = r $0; next } { if (r != "") print r; r = "" }' "$1"
}
# has_row NAME LP ERE: a row of LP matches ERE
has_row() { if rows "$2" | grep -qE -- "$3"; then ok; else bad "$1: $2 lacks $3"; fi; }
has_row columns-D "$W/h200-derate-ilp.lp" '^ slow_d0_s3_r3: - 1\.05 x_r3_h0_g3 .* \+ D_d0_s3 >= 0$'
has_row columns-C "$W/dgx1-tp2pp4.lp" '^ hop_d0_k2_r4_h0_g0: .* \+ C_d0_k2 >= -[0-9.]+$'
has_row rows-tpnv "$W/dgx1-tp2pp4.lp" '^ tpnv_r0_r1_h0_g0: '
has_row rows-ppnv "$W/dgx1-capped.lp" '^ ppnv_k0_r0_r2_h0_g0: '
has_row rows-moves "$W/dgx1-capped.lp" '^ max_moves: .* >= 2$'
has_row columns-z "$W/two-hosts.lp" '^ onhost_r3_h1: - z_n1_h1 '
has_row rows-node "$W/two-hosts.lp" '^ node_n1: \+ z_n1_h1 \+ z_n1_h0 = 1$'
has_row rows-ring "$W/groups-grad.lp" '^ ring_s1_r1_h0_g0: .* - 20\.97152 x_r3_h2_g0 .* - 83\.88608 x_r1_h0_g0 \+ A >= -83\.88608$'
has_row columns-A "$W/groups-grad.lp" '^ iter_d1: .* - A .*\+ T >= 0$'
if grep -q ' A ' "$W/two-hosts.lp"; then bad "two-hosts: an all-reduce column without gradients"; else ok; fi
# the cap is not in the file: it is stated at the reference time, which is
# this program's optimum; here it binds, so the plan's objective (the time
# phase under the cap) is above the file's optimum
if grep -q 'cap_\|peak_\| P ' "$W/dgx1-capped.lp"; then bad "capped: temperature rows in the file"; else ok; fi
obj=$(num "$W/dgx1-capped/plan.json" objective)
ref=$(num "$W/dgx1-capped/plan.json" reference_iteration_ms)
if awk "BEGIN { exit !($obj > $ref + 1) }"; then ok; else bad "capped: objective $obj, reference $ref: the cap should bind"; fi
# the method does not change the program; greedy's plan is no faster than
# its optimum, and brute force agrees with the ilp
if cmp -s "$W/dgx1-derate-ilp.lp" "$W/dgx1-derate-greedy.lp"; then ok; else bad "greedy and ilp wrote different programs"; fi
if cmp -s "$W/h200-derate-ilp.lp" "$W/h200-derate-brute.lp"; then ok; else bad "brute and ilp wrote different programs"; fi
gi=$(num "$W/dgx1-derate-greedy/plan.json" iteration_ms)
ir=$(num "$W/dgx1-derate-ilp/plan.json" reference_iteration_ms)
if awk "BEGIN { exit !($gi >= $ir - 1e-4) }"; then ok; else bad "greedy $gi ms beats the optimum $ir ms"; fi
near brute-ilp "$(num "$W/h200-derate-brute/plan.json" reference_iteration_ms)" "$(num "$W/h200-derate-ilp/plan.json" reference_iteration_ms)"

# ---- the command line --------------------------------------------------------
plan() { "$T" plan $H --profile $F/profile.json --job $F/job-pp2-dp2.json "$@"; }
plan -o "$W/s" --write-lp "$W/s.lp" >"$W/out"
if grep -qxF "wrote $W/s.lp (phase 0 integer program, CPLEX LP)" "$W/out"; then ok; else bad "no 'wrote' line: $(cat "$W/out")"; fi
# a second run replaces the file with the same bytes, through a rename
cp "$W/s.lp" "$W/s1.lp"
ln "$W/s.lp" "$W/s-link.lp"
plan -o "$W/s" --write-lp "$W/s.lp" --quiet
if cmp -s "$W/s.lp" "$W/s1.lp"; then ok; else bad "a second run wrote other bytes"; fi
if [ "$(stat -c %i "$W/s.lp")" != "$(stat -c %i "$W/s-link.lp")" ]; then ok; else bad "the file was rewritten in place, not renamed"; fi
if [ "$(stat -c %a "$W/s.lp")" = 644 ]; then ok; else bad "mode $(stat -c %a "$W/s.lp"), expected 644"; fi
if [ -z "$(ls "$W" | grep '\.tmp')" ]; then ok; else bad "temporary left: $(ls "$W" | grep '\.tmp')"; fi
# a file that cannot be written: one line naming it, exit 1, and no plan
plan -o "$W/nolp" --write-lp "$W/none/x.lp" >"$W/out" 2>"$W/err"
got=$?
if [ "$got" = 1 ] && [ "$(cat "$W/err")" = "thermap: error: $W/none/x.lp: cannot create: No such file or directory" ]; then ok; else bad "unwritable: exit $got: $(cat "$W/err")"; fi
if [ ! -e "$W/nolp" ]; then ok; else bad "unwritable: the plan was written anyway"; fi
plan -o "$W/nolp" --write-lp >"$W/out" 2>"$W/err"
got=$?
if [ "$got" = 2 ] && [ "$(cat "$W/err")" = "thermap: option '--write-lp' needs a value
Try 'thermap plan --help'." ]; then ok; else bad "no value: exit $got: $(cat "$W/err")"; fi
"$T" plan --help >"$W/out"
if grep -qF -- "--write-lp FILE" "$W/out"; then ok; else bad "plan --help lacks --write-lp"; fi

finish
