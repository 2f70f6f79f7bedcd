#!/bin/sh
# Input text that reaches what thermap writes stays inert: every message,
# summary and table is valid UTF-8 without control characters (newlines
# only between its lines), every JSON document is valid UTF-8 that
# thermap's own reader takes, tables keep one row per policy, env files
# and launch.txt keep a policy's name inside its comment, and the SVG is
# valid UTF-8 without control characters. The inputs are the bundled
# fixtures with hostile names: file names with bytes that are no UTF-8,
# ESC and BEL sequences that would retitle or clear a terminal, newlines
# that would forge a second 'thermap: error:' line, '|' and ',' in policy
# names. Each is checked against the same command with a plain name where
# line counts matter. THERMAP names the binary (build/thermap by default).
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "inert output"
F=fixtures/h200x4-a
R=fixtures/real/h200x4-vm

command -v iconv >/dev/null 2>&1 || { echo "inert: needs iconv (libc-bin)"; exit 1; }

ESC=$(printf '\033')
BEL=$(printf '\007')
NL='
'
# a name with all of it: a byte that is no UTF-8, a terminal title and
# clear-screen sequence, a newline that would start a forged line
HOSTILE="x$(printf '\377')${ESC}]0;pwned${BEL}${ESC}[2J${NL}thermap: error: forged"
# ... as thermap shows it in text
HOSTILE_SHOWN='x\xff\e]0;pwned\a\e[2J\nthermap: error: forged'

# inert NAME FILE: valid UTF-8, and no control character but the line
# breaks (C0, DEL, and C1 as UTF-8 encodes them)
inert() {
	if ! iconv -f UTF-8 -t UTF-8 <"$2" >/dev/null 2>&1; then
		bad "$1: $2 is not valid UTF-8"
	elif [ "$(LC_ALL=C tr -d '\000-\011\013-\037\177' <"$2" | wc -c)" != \
	       "$(wc -c <"$2")" ]; then
		bad "$1: $2 holds a control character: $(od -c "$2" | head -5)"
	elif LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$2"; then
		bad "$1: $2 holds a C1 control character"
	else
		ok
	fi
}

# lines NAME FILE N: FILE has N lines
lines() {
	if [ "$(wc -l <"$2")" = "$3" ]; then ok
	else bad "$1: $2 has $(wc -l <"$2") lines, expected $3: $(cat "$2")"; fi
}

# json NAME FILE: thermap's reader (jansson) takes FILE as JSON: given as
# a cluster it is refused for its format or content, not for its syntax
# or encoding ('FILE:LINE:COLUMN: ...')
json() {
	cp "$2" "$W/as-cluster.json"
	"$T" plan --cluster "$W/as-cluster.json" --profile "$W/none" \
		--job "$W/none" -o "$W/none" >/dev/null 2>"$W/json.err"
	if grep -q "as-cluster.json: format: \|as-cluster.json: nodes\|as-cluster.json: .*: unknown field\|^thermap: error: $W/none: cannot open" "$W/json.err" &&
	   ! grep -q 'as-cluster.json:[0-9]' "$W/json.err"; then ok
	else bad "$1: $2 is not JSON to thermap: $(cat "$W/json.err")"; fi
}

# the bundled plan; CLUSTER names another cluster file (an option given
# twice is a usage error)
plan() { "$T" plan --cluster "${CLUSTER:-$F/cluster.json}" \
	--profile $F/profile.json --job $F/job-pp2-dp2.json "$@"; }

# ---- profile --json-summary: a file name that is no UTF-8 ------------------
cp $F/telemetry.csv "$W/tele.csv"
cp $F/telemetry.csv "$W/$HOSTILE.csv"
expect 0 summary-plain "$T" profile --host h200x4-a "$W/tele.csv" \
	-o "$W/prof-plain.json" --json-summary
expect 0 summary "$T" profile --host h200x4-a "$W/$HOSTILE.csv" \
	-o "$W/prof.json" --json-summary
inert summary "$W/summary.out"
json summary "$W/summary.out"
has summary "$W/summary.out" '"file": "'"$W"'/x\ufffd\u001b]0;pwned\u0007\u001b[2J\nthermap: error: forged.csv"'
lines summary "$W/summary.out" "$(wc -l <"$W/summary-plain.out")"
# the warnings name the file: one line each, shown
inert summary-warn "$W/summary.err"
has summary-warn "$W/summary.err" "$HOSTILE_SHOWN.csv: no GPU UUID"
lines summary-warn "$W/summary.err" "$(wc -l <"$W/summary-plain.err")"
if cmp -s "$W/prof.json" "$W/prof-plain.json"; then ok
else bad "summary: the profile depends on the file's name"; fi
# 'wrote FILE' with the output's name shown
expect 0 wrote "$T" profile --host h200x4-a "$W/tele.csv" -o "$W/$HOSTILE.json"
inert wrote "$W/wrote.out"
lines wrote "$W/wrote.out" 1
has wrote "$W/wrote.out" "wrote $W/$HOSTILE_SHOWN.json"

# ---- topology reports: an NCCL XML and a GPU list ---------------------------
# (the file has one <nvlink> to 0001:00:00.0, on its line 5)
sed "s/target=\"0001:00:00.0\"/target=\"${ESC}]0;pwned${BEL}${ESC}[2J\"/" \
	fixtures/topo/nccl-topo/azure-ncv4-topo.xml >"$W/nccl.xml"
if grep -q "$ESC" "$W/nccl.xml"; then ok; else bad "nccl: the ESC was not planted"; fi
expect 4 nccl "$T" topo --host h --nccl "$W/nccl.xml"
inert nccl "$W/nccl.err"
lines nccl "$W/nccl.err" 1
has nccl "$W/nccl.err" 'nccl.xml:5: <nvlink> target "\e]0;pwned\a\e[2J" is not a PCI bus id'
# a model name that is no UTF-8 (and a C1 control) into the cluster
{
	printf 'GPU 0: NVIDIA H200\377\302\233x (UUID: GPU-a0000000-0000-4000-8000-000000000000)\n'
	for i in 1 2 3; do
		printf 'GPU %d: NVIDIA H200 (UUID: GPU-a000000%d-0000-4000-8000-00000000000%d)\n' $i $i $i
	done
} >"$W/gpus.txt"
expect 0 topo "$T" topo --host h200x4-a --smi-topo $F/topo-m.txt --gpus "$W/gpus.txt" \
	-o "$W/topo.json"
inert topo "$W/topo.json"
has topo "$W/topo.json" '"model": "NVIDIA H200\ufffd\u009bx"'
expect 0 topo-reads "$T" plan --cluster "$W/topo.json" --profile $F/profile.json \
	--job $F/job-pp2-dp2.json -o "$W/topo-plan" --quiet

# ---- JSON inputs: a host name, a key, raw bytes --------------------------------
sed 's/"host": "h200x4-a"/"host": "h200\\nthermap: error: forged\\u001b[2J"/' \
	$F/cluster.json >"$W/c-host.json"
CLUSTER="$W/c-host.json"
expect 4 host plan -o "$W/x"
inert host "$W/host.err"
lines host "$W/host.err" 1
has host "$W/host.err" '"h200\nthermap: error: forged\e[2J" is not a usable host name'
sed 's/"host": "h200x4-a",/"host": "h200x4-a", "gpu\\nthermap: warning: forged\\u0007": 1,/' \
	$F/cluster.json >"$W/c-key.json"
CLUSTER="$W/c-key.json"
expect 0 key plan -o "$W/key-plan"
CLUSTER=
inert key "$W/key.err"
lines key "$W/key.err" 1
has key "$W/key.err" 'nodes[0].gpu\nthermap: warning: forged\a: unknown field, ignored'
# raw control bytes and a byte that is no UTF-8 inside a JSON string:
# jansson's message quotes them
sed "s/\"thermal\"/\"th${ESC}[2J$(printf '\377')\"/" policies/thermal.json >"$W/raw-pol.json"
expect 4 raw plan --policy "$W/raw-pol.json" -o "$W/x"
inert raw "$W/raw.err"
lines raw "$W/raw.err" 1

# ---- the command line --------------------------------------------------------
expect 2 argv-cmd "$T" "pl${ESC}]0;pwned${BEL}an"
inert argv-cmd "$W/argv-cmd.err"
lines argv-cmd "$W/argv-cmd.err" 2
has argv-cmd "$W/argv-cmd.err" "thermap: unknown command 'pl\e]0;pwned\aan'"
expect 2 argv-opt "$T" plan "--x${NL}thermap: error: forged"
inert argv-opt "$W/argv-opt.err"
lines argv-opt "$W/argv-opt.err" 2
has argv-opt "$W/argv-opt.err" "thermap: unknown option '--x\nthermap: error: forged'"
expect 2 argv-host "$T" profile --host "a${NL}b" "$W/tele.csv"
inert argv-host "$W/argv-host.err"
lines argv-host "$W/argv-host.err" 2
expect 2 argv-from "$T" profile --from "${ESC}[2J" "$W/tele.csv"
inert argv-from "$W/argv-from.err"
lines argv-from "$W/argv-from.err" 2
has argv-from "$W/argv-from.err" "thermap: --from '\e[2J': expected a time"
expect 4 argv-file plan --policy "$W/no${NL}such$(printf '\377')" -o "$W/x"
inert argv-file "$W/argv-file.err"
lines argv-file "$W/argv-file.err" 1
has argv-file "$W/argv-file.err" "no\nsuch\xff: cannot open"

# ---- plan: a policy's name in env files, launch.txt and the summary ---------
sed "s/\"thermal\"/\"evil)\\\\ntouch $(printf '%s' "$W" | sed 's/[\/&]/\\&/g')\/pwned\\\\n#\\\\u001b]0;x\\\\u0007\"/" \
	policies/thermal.json >"$W/evil.json"
has evil-policy "$W/evil.json" '\ntouch '
expect 0 plan-plain plan -o "$W/pp"
expect 0 plan-evil plan --policy "$W/evil.json" -o "$W/pe"
inert plan-evil "$W/plan-evil.out"
lines plan-evil "$W/plan-evil.out" "$(wc -l <"$W/plan-plain.out")"
has plan-evil "$W/plan-evil.out" 'policy evil)\ntouch '
for f in env/h200x4-a.env launch.txt; do
	inert "plan-evil $f" "$W/pe/$f"
	lines "plan-evil $f" "$W/pe/$f" "$(wc -l <"$W/pp/$f")"
done
has plan-evil-env "$W/pe/env/h200x4-a.env" '(policy evil)\ntouch '
# sourced as launch.txt says: it sets the variables and runs nothing
# shellcheck source=/dev/null
(cd "$W/pe" && set -a && . ./env/h200x4-a.env && set +a &&
	[ "$NODE_RANK" = 0 ] && [ "$NPROC_PER_NODE" = 4 ]) >/dev/null 2>&1 ||
	bad "plan-evil: env file does not source"
if [ ! -e "$W/pwned" ]; then ok; else bad "plan-evil: sourcing the env file ran a command"; fi
json plan-evil "$W/pe/plan.json"
has plan-evil-json "$W/pe/plan.json" '"policy": "evil)\ntouch '
# a plan directory with a hostile name: 'wrote' and check's summary
expect 0 plan-dir plan -o "$W/$HOSTILE"
inert plan-dir "$W/plan-dir.out"
lines plan-dir "$W/plan-dir.out" "$(wc -l <"$W/plan-plain.out")"
has plan-dir "$W/plan-dir.out" "wrote $W/$HOSTILE_SHOWN (plan.json"
expect 0 check "$T" check --cluster $F/cluster.json --job $F/job-pp2-dp2.json \
	--plan "$W/$HOSTILE"
inert check "$W/check.out"
lines check "$W/check.out" 1
has check "$W/check.out" "$W/$HOSTILE_SHOWN: ok: plan "

# ---- compare: tables keep one row per policy ----------------------------------
sed 's/"thermal"/"a\\n|b,c\\"d\\u001b\\uffff"/' policies/thermal.json >"$W/odd.json"
sed 's/"thermal"/"plain"/' policies/thermal.json >"$W/plain.json"
CMP="--cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json"
UFFFF=$(printf '\357\277\277')
for fmt in text markdown csv json; do
	# shellcheck disable=SC2086
	expect 0 "compare-$fmt-plain" "$T" compare $CMP policies/identity.json \
		"$W/plain.json" --format $fmt
	# shellcheck disable=SC2086
	expect 0 "compare-$fmt" "$T" compare $CMP policies/identity.json \
		"$W/odd.json" --format $fmt
	inert "compare-$fmt" "$W/compare-$fmt.out"
	lines "compare-$fmt" "$W/compare-$fmt.out" \
		"$(wc -l <"$W/compare-$fmt-plain.out")"
done
has compare-text "$W/compare-text.out" "a\n|b,c\"d\e$UFFFF   optimal  "
has compare-markdown "$W/compare-markdown.out" "| a\n\|b,c\"d\e$UFFFF | optimal |"
has compare-csv "$W/compare-csv.out" "\"a\n|b,c\"\"d\e$UFFFF\",ilp,optimal,"
json compare-json "$W/compare-json.out"
has compare-json "$W/compare-json.out" '"policy": "a\n|b,c\"d\u001b'"$UFFFF"'"'
# the markdown table: as many cells in the odd row as in the plain one
cells() { grep -F "$2" "$1" | sed 's/\\|//g' | tr -cd '|' | wc -c; }
if [ "$(cells "$W/compare-markdown.out" '| a\n')" = \
     "$(cells "$W/compare-markdown-plain.out" '| plain |')" ]; then ok
else bad "compare-markdown: the odd row has another number of cells"; fi
# the SVG: valid UTF-8, no control character, no U+FFFF (no XML character)
# shellcheck disable=SC2086
expect 0 compare-svg "$T" compare $CMP policies/identity.json "$W/odd.json" \
	--svg "$W/$HOSTILE.svg"
inert compare-svg "$W/$HOSTILE.svg"
has compare-svg "$W/$HOSTILE.svg" ">a\n|b,c&quot;d\e$(printf '\357\277\275')</text>"
if grep -q "$UFFFF" "$W/$HOSTILE.svg"; then bad "compare-svg: U+FFFF in the SVG"; else ok; fi
inert compare-svg-out "$W/compare-svg.out"
has compare-svg-out "$W/compare-svg.out" "wrote $W/$HOSTILE_SHOWN.svg"
if ! command -v xmllint >/dev/null 2>&1; then
	skipped compare-svg-xml xmllint "xmllint is not installed" \
		"install it: scripts/ensure-deps.sh libxml2-utils"
elif xmllint --noout "$W/$HOSTILE.svg" 2>/dev/null; then ok
else bad "compare-svg: not well-formed XML"; fi

# ---- replan and diff: a reason that names the cluster file ---------------------
cp tests/replan/data/cluster-renamed.json "$W/renamed.json"
cp tests/replan/data/cluster-renamed.json "$W/$HOSTILE.json"
sed 's/"h200x4-a"/"h200x4-b"/' $F/profile.json >"$W/prof-b.json"
expect 0 replan-plain "$T" replan --previous "$W/pp" --cluster "$W/renamed.json" \
	--job $F/job-pp2-dp2.json --profile "$W/prof-b.json" -o "$W/rp"
expect 0 replan "$T" replan --previous "$W/pp" --cluster "$W/$HOSTILE.json" \
	--job $F/job-pp2-dp2.json --profile "$W/prof-b.json" -o "$W/rh"
inert replan "$W/replan.out"
lines replan "$W/replan.out" 1
inert replan-text "$W/replan.err"
lines replan-text "$W/replan.err" "$(wc -l <"$W/replan-plain.err")"
has replan-text "$W/replan.err" "is not in $W/$HOSTILE_SHOWN.json"
json replan-plan "$W/rh/plan.json"
expect 0 diff-plain "$T" diff "$W/pp" "$W/rp"
expect 0 diff "$T" diff "$W/pp" "$W/rh"
inert diff "$W/diff.out"
lines diff "$W/diff.out" "$(wc -l <"$W/diff-plain.out")"
# plan.json recorded the reason as JSON: the byte that is no UTF-8 as
# U+FFFD, which diff shows as it is
has diff "$W/diff.out" "forced: host h200x4-a is not in $W/x$(printf '\357\277\275')${HOSTILE_SHOWN#x\\xff}.json"
expect 0 diff-json "$T" diff "$W/pp" "$W/rh" --format json
inert diff-json "$W/diff-json.out"
json diff-json "$W/diff-json.out"

# ---- calibrate: telemetry named with hostile bytes ------------------------------
expect 0 cal-plan "$T" plan --cluster $R/cluster.json --profile $R/profile.json \
	--job tests/calibrate/data/job-identity.json \
	--policy policies/identity.json -o "$W/cal-plan" --quiet
cp $R/telemetry-identity.csv "$W/cal.csv"
cp $R/telemetry-identity.csv "$W/$HOSTILE.csv"
for v in plain hostile; do
	if [ $v = plain ]; then f="$W/cal.csv"; else f="$W/$HOSTILE.csv"; fi
	expect 0 "cal-$v" "$T" calibrate --cluster $R/cluster.json \
		--profile $R/profile.json --job tests/calibrate/data/job-identity.json \
		--plan "$W/cal-plan" --host vm "$f" -o "$W/cal-$v.json"
done
inert cal "$W/cal-hostile.out"
lines cal "$W/cal-hostile.out" "$(wc -l <"$W/cal-plain.out")"
has cal "$W/cal-hostile.out" "; telemetry $W/$HOSTILE_SHOWN.csv"
inert cal-profile "$W/cal-hostile.json"
json cal-profile "$W/cal-hostile.json"
# every calibrated field keeps its mark
if [ "$(grep -c 'thermap calibrate: plan' "$W/cal-hostile.json")" = \
     "$(grep -c 'thermap calibrate: plan' "$W/cal-plain.json")" ]; then ok
else bad "cal-profile: marks lost"; fi
expect 0 cal-reads "$T" plan --cluster $R/cluster.json --profile "$W/cal-hostile.json" \
	--job tests/calibrate/data/job-identity.json -o "$W/cal-replan" --quiet

finish
