#!/bin/sh
# outputs.sh THERMAP DIR — every output of thermap on the committed
# fixtures, into DIR (which must not exist): for each command, its exit
# code, standard output, standard error and the files it wrote. Two
# builds that should behave alike (a refactoring, a compiler change) are
# compared by running this with each into the same DIR name in turn and
# comparing the trees:
#
#   sh scripts/outputs.sh old/thermap out && mv out out.old
#   sh scripts/outputs.sh build/thermap out && diff -r out.old out
#
# The solver's wall time in plan's summary line is written as N ms.
# DIR's name appears in what thermap prints (it names the files it
# wrote), so use the same name for both runs. Run from the repository root.
set -u
T=${1:?usage: outputs.sh THERMAP DIR}
O=${2:?usage: outputs.sh THERMAP DIR}
case $T in /*) ;; *) T=$PWD/$T ;; esac
[ -e "$O" ] && { echo "outputs.sh: $O exists" >&2; exit 2; }
mkdir -p "$O" || exit 1
n=0

# run NAME ARGS...: thermap ARGS, its exit code, stdout and stderr
run() {
	name=$1
	shift
	"$T" "$@" >"$O/$name.raw" 2>"$O/$name.err"
	echo $? >"$O/$name.rc"
	# the solver's wall time on plan's first line is the one figure that
	# differs from run to run
	sed 's/^\(policy .*\), [0-9]* ms$/\1, N ms/' "$O/$name.raw" >"$O/$name.out"
	rm -f "$O/$name.raw"
	n=$((n + 1))
}

# ---- the command line's own texts --------------------------------------------
run help --help
run version --version
for c in topo profile plan check replan diff compare calibrate; do
	run "help-$c" "$c" --help
done

# ---- topo: every topology fixture --------------------------------------------
for f in fixtures/topo/nvidia-smi-topo/*.txt fixtures/h200x4-a/topo-m.txt \
         fixtures/topo/real-h200x2/topo-m.txt fixtures/real/*/topo-m.txt; do
	case $f in *.src.txt) continue ;; esac
	b=$(echo "$f" | tr / _)
	run "topo-smi-$b" topo --host h --smi-topo "$f" -o "$O/topo-smi-$b.json"
done
for f in fixtures/topo/hwloc-xml/*.xml; do
	b=$(basename "$f")
	run "topo-hwloc-$b" topo --host h --hwloc "$f" -o "$O/topo-hwloc-$b.json"
done
for f in fixtures/topo/nccl-topo/*.xml; do
	b=$(basename "$f")
	run "topo-nccl-$b" topo --host h --nccl "$f" -o "$O/topo-nccl-$b.json"
done
for f in fixtures/topo/gpu-lists/*; do
	b=$(basename "$f")
	run "topo-gpus-$b" topo --host h --gpus "$f" -o "$O/topo-gpus-$b.json"
done
run topo-h200x4a topo --host h200x4-a --smi-topo fixtures/h200x4-a/topo-m.txt \
	--gpus fixtures/h200x4-a/smi-q.txt -o "$O/topo-h200x4a.json"
run topo-h200x2 topo --host h --smi-topo fixtures/topo/real-h200x2/topo-m.txt \
	--gpus fixtures/topo/real-h200x2/gpus.csv -o "$O/topo-h200x2.json"
run topo-prefer topo --host a --prefer smi-topo \
	--smi-topo fixtures/topo/nvidia-smi-topo/dgx1-v100-8gpu-4nic_msccl-tools.txt \
	--gpus fixtures/h200x4-a/smi-q.txt
run topo-disagree topo --host a \
	--smi-topo fixtures/topo/nvidia-smi-topo/dgx1-v100-8gpu-4nic_msccl-tools.txt \
	--gpus fixtures/h200x4-a/smi-q.txt

# ---- profile: every telemetry fixture ----------------------------------------
for f in fixtures/telemetry/*.* fixtures/telemetry/*/*.* fixtures/h200x4-a/*.csv \
         fixtures/real/h100x1-duty/telemetry*.csv fixtures/real/h200x4-vm/telemetry*.csv; do
	case $f in *.src.txt|*.md) continue ;; esac
	b=$(echo "$f" | tr / _)
	run "profile-$b" profile --host h "$f" -o "$O/profile-$b.json"
	run "summary-$b" profile --host h "$f" --json-summary -o "$O/summary-$b.json"
done
H=fixtures/h200x4-a
run profile-window profile --host h200x4-a $H/telemetry.csv --from +205 --to +290 \
	--baseline $H/profile.json -o "$O/profile-window.json"

# ---- plan and check: every policy on every bundled job ------------------------
set -- "$H/cluster.json $H/profile.json $H/job-pp2-dp2.json" \
       "fixtures/nanogpt-h100x8/cluster.json fixtures/nanogpt-h100x8/profile.json fixtures/nanogpt-h100x8/job-pp8.json" \
       "fixtures/real/h200x4-vm/cluster.json fixtures/real/h200x4-vm/profile.json fixtures/real/h200x4-vm/job.json"
k=0
for s in "$@"; do
	k=$((k + 1))
	# shellcheck disable=SC2086
	set -- $s
	c=$1 p=$2 j=$3
	for pol in policies/*.json; do
		b=$k-$(basename "$pol" .json)
		run "plan-$b" plan --cluster "$c" --profile "$p" --job "$j" \
			--policy "$pol" -o "$O/plan-$b" --write-lp "$O/plan-$b.lp"
		run "check-$b" check --cluster "$c" --job "$j" --plan "$O/plan-$b" \
			--profile "$p" --format json
		run "check-text-$b" check --cluster "$c" --job "$j" --plan "$O/plan-$b"
	done
	run "diff-$k" diff "$O/plan-$k-identity" "$O/plan-$k-thermal"
	run "diff-json-$k" diff "$O/plan-$k-identity" "$O/plan-$k-thermal" --format json
	for f in text markdown csv json; do
		run "compare-$k-$f" compare --cluster "$c" --profile "$p" --job "$j" \
			--format "$f" policies/*.json
	done
	run "compare-$k-svg" compare --cluster "$c" --profile "$p" --job "$j" \
		--svg "$O/compare-$k.svg" policies/*.json
	run "compare-$k-svg-auto" compare --cluster "$c" --profile "$p" --job "$j" \
		--svg "$O/compare-$k-auto.svg" --svg-scale auto policies/*.json
done
set --

# ---- replay, replan, calibrate ------------------------------------------------
for f in text json; do
	run "replay-$f" compare --cluster $H/cluster.json --job $H/job-pp2-dp2.json \
		--replay $H/telemetry.csv --host h200x4-a --window 60 --format "$f" \
		policies/identity.json policies/thermal.json policies/greedy.json
done
HJ="--cluster $H/cluster.json --job $H/job-pp2-dp2.json"
for w in 30:90 90:150 205:290; do
	a=${w%:*} b=${w#*:}
	run "window-$a" profile --host h200x4-a $H/telemetry.csv --from +"$a" \
		--to +"$b" --baseline $H/profile.json -o "$O/w$a.json"
done
# shellcheck disable=SC2086
run replan-base plan $HJ --profile "$O/w30.json" -o "$O/rp1"
# shellcheck disable=SC2086
run replan-same replan --previous "$O/rp1" $HJ --profile "$O/w90.json" -o "$O/rp2"
# shellcheck disable=SC2086
run replan-asym replan --previous "$O/rp1" $HJ --profile "$O/w205.json" -o "$O/rp3"
# shellcheck disable=SC2086
run replan-forced replan --previous "$O/rp1" $HJ --profile "$O/w205.json" \
	--min-gain 0 -o "$O/rp4"
R=fixtures/real/h200x4-vm
for r in identity thermal; do
	run "cal-plan-$r" plan --cluster $R/cluster.json --profile $R/profile.json \
		--job $R/job.json --policy "policies/$r.json" -o "$O/cal-plan-$r"
	run "cal-$r" calibrate --cluster $R/cluster.json --profile $R/profile.json \
		--job "tests/calibrate/data/job-$r.json" --plan "$O/cal-plan-$r" \
		--host vm "$R/telemetry-$r.csv" -o "$O/cal-$r.json"
done

# ---- refusals: one line each ---------------------------------------------------
run bad-option plan --clusters x
run bad-json plan --cluster $H/telemetry.csv --profile $H/profile.json \
	--job $H/job-pp2-dp2.json -o "$O/x"
run bad-profile plan --cluster $H/cluster.json --profile $H/cluster.json \
	--job $H/job-pp2-dp2.json -o "$O/x"
run bad-telemetry profile --host h $H/cluster.json
run bad-hwloc topo --host h --hwloc $H/cluster.json

echo "outputs.sh: $n commands into $O"
