#!/bin/sh
# What thermap writes, and its command-line grammar (docs/formats.md,
# "Writing and replacing"; docs/exit-codes.md):
#  - every single-file writer (profile -o, topo -o, calibrate -o,
#    plan --write-lp, compare --svg) refuses a FIFO, a symbolic link, a
#    directory and a character device (one made here with mknod, standing
#    in for /dev/null: no file of the system is ever the target) with
#    exit 2 and one line, and leaves them as they were; it replaces a
#    regular file by a rename; on a full file system (ulimit -f: thermap
#    ignores SIGXFSZ, so the write fails with EFBIG) it exits 1 naming the
#    file and leaves the old one and no temporary;
#  - a killed writer's temporary file is removed by the next writer of the
#    same file, one a live process holds (flock) is not;
#  - plan and replan refuse a target that is not a directory, a directory
#    that is not a plan, and a plan directory with other files in it,
#    naming them; while a writer is stopped before its rename
#    (THERMAP_TEST_STOP_AT), the target is made a directory, a plan with a
#    foreign file, or a symbolic link to another plan: each is refused and
#    put back as it was, and nothing the link points to is deleted; a
#    concurrent writer's plan is replaced;
#  - a killed writer's DIR.tmp-XXXXXX is removed by the next writer, a
#    stopped (live) writer's is not, and a look-alike holding other files
#    keeps them;
#  - standard output on /dev/full, or closed, is exit 1 with one line;
#  - options: one value each, --x V and --x=V, '--' ends the options;
#  - check --format json.
# A sub-case that needs root (mknod), or jq, fails when it cannot run,
# unless THERMAP_SKIP names root (or jq): then it is counted as skipped.
# THERMAP names the binary (build/thermap by default).
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble writes
case $T in /*) ;; *) T=$PWD/$T ;; esac
F=$PWD/fixtures/h200x4-a
R=$PWD/fixtures/real/h200x4-vm
CD=$PWD/tests/calibrate/data
# the writers left stopped or holding a lock are killed on the way out
pids=""
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT

# the error lines of the last run (warnings left out)
errs() { grep -v '^thermap: warning: ' "$W/err"; }

# t NAME RC STDERR -- ARGS...: exit code and the error line(s) exactly
# ('-' leaves stderr unchecked); warnings are not counted
t() {
	name=$1 rc=$2 want=$3
	shift 4
	"$T" "$@" >"$W/out" 2>"$W/err"
	got=$?
	if [ "$got" != "$rc" ]; then
		bad "$name: exit $got, expected $rc; stderr: $(cat "$W/err")"
	elif [ "$want" != "-" ] && [ "$(errs)" != "$want" ]; then
		bad "$name: stderr was: $(errs)
        expected: $want"
	else
		ok
	fi
}

# check NAME CONDITION...: the condition holds
check() {
	name=$1
	shift
	if "$@"; then ok; else bad "$name"; fi
}

no_temp() {
	if [ -z "$(ls -a "$1" | grep -e '\.tmp\.' -e '\.tmp-')" ]; then ok
	else bad "$2: temporary left: $(ls -a "$1" | grep -e '\.tmp\.' -e '\.tmp-')"; fi
}

HJ="--cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json"

# ---- the single-file writers --------------------------------------------------
# (the identity run's plan, for calibrate)
# shellcheck disable=SC2086
"$T" plan --cluster $R/cluster.json --profile $R/profile.json --job $R/job.json \
	--policy "$PWD/policies/identity.json" -o "$W/cal-plan" --quiet 2>/dev/null
# w_NAME TARGET: the writer, with inputs that give more than 1 KiB
# shellcheck disable=SC2086
w_profile() { "$T" profile --host h200x4-a $F/telemetry.csv -o "$1" --quiet; }
w_topo() { "$T" topo --host a --smi-topo $F/topo-m.txt --host b --smi-topo $F/topo-m.txt -o "$1"; }
w_calibrate() {
	"$T" calibrate --cluster $R/cluster.json --profile $R/profile.json \
		--job $CD/job-identity.json --plan "$W/cal-plan" --host vm \
		$R/telemetry-identity.csv -o "$1" --quiet
}
# shellcheck disable=SC2086
w_lp() { "$T" plan $HJ -o "$W/lp-plan" --write-lp "$1" --quiet; }
# shellcheck disable=SC2086
w_svg() { "$T" compare $HJ "$PWD/policies/identity.json" --svg "$1"; }

root=false
if mknod "$W/probe-null" c 1 3 2>/dev/null; then root=true; rm -f "$W/probe-null"; fi

for w in profile topo calibrate lp svg; do
	D="$W/$w"
	mkdir "$D"
	# written fresh, mode 0644; replaced by a rename (a new inode)
	w_$w "$D/out" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 0 ] && [ -f "$D/out" ] && [ "$(stat -c %a "$D/out")" = 644 ] &&
	   [ "$(stat -c %s "$D/out")" -gt 1024 ]; then ok
	else bad "$w: fresh write: exit $rc: $(errs)"; fi
	cp "$D/out" "$D/first"
	ino=$(stat -c %i "$D/out")
	w_$w "$D/out" >"$W/out" 2>"$W/err"
	if [ $? = 0 ] && [ "$(stat -c %i "$D/out")" != "$ino" ] && cmp -s "$D/out" "$D/first"
	then ok; else bad "$w: replacing a regular file: $(errs)"; fi
	no_temp "$D" "$w"

	# a FIFO, a symbolic link, a directory: refused, left as they were
	mkfifo "$D/fifo"
	w_$w "$D/fifo" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $D/fifo: exists and is a FIFO, not a regular file; refusing to replace it" ] &&
	   [ -p "$D/fifo" ]; then ok
	else bad "$w: FIFO: exit $rc: $(errs)"; fi
	echo keep >"$D/pointee"
	ln -s pointee "$D/link"
	w_$w "$D/link" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $D/link: exists and is a symbolic link, not a regular file; refusing to replace it" ] &&
	   [ -L "$D/link" ] && [ "$(cat "$D/pointee")" = keep ]; then ok
	else bad "$w: symlink: exit $rc: $(errs)"; fi
	mkdir "$D/dir"
	w_$w "$D/dir" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $D/dir: exists and is a directory, not a regular file; refusing to replace it" ] &&
	   [ -d "$D/dir" ]; then ok
	else bad "$w: directory: exit $rc: $(errs)"; fi
	# a character device like /dev/null (made here, never the system's)
	if $root; then
		mknod "$D/null" c 1 3
		w_$w "$D/null" >"$W/out" 2>"$W/err"
		rc=$?
		if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $D/null: exists and is a character device, not a regular file; refusing to replace it" ] &&
		   [ -c "$D/null" ]; then ok
		else bad "$w: character device: exit $rc: $(errs)"; fi
	else
		skipped "$w-chardev" root "making a character device needs root"
	fi
	# a directory that is not there
	w_$w "$D/none/out" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 1 ] && [ "$(errs)" = "thermap: error: $D/none/out: cannot create: No such file or directory" ]
	then ok; else bad "$w: missing directory: exit $rc: $(errs)"; fi
	# a full file system: no byte beyond the first KiB (512 B under
	# dash) may be written; thermap ignores SIGXFSZ itself
	echo keep >"$D/full"
	(ulimit -f 1; w_$w "$D/full") >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 1 ] && [ "$(errs)" = "thermap: error: $D/full: cannot write: File too large" ] &&
	   [ "$(cat "$D/full")" = keep ]; then ok
	else bad "$w: full file system: exit $rc: $(errs)"; fi
	no_temp "$D" "$w, full file system"
done
# --write-lp on a full file system makes no plan either
if [ ! -e "$W/lp-plan.tmp" ] && [ -z "$(ls "$W" | grep 'lp-plan\.tmp')" ]; then ok
else bad "--write-lp, full: a plan temporary is left"; fi

# a killed writer's temporary goes; one a live process holds stays; a name
# that is not a temporary's stays
D="$W/stale"
mkdir "$D"
echo old >"$D/p.json.tmp.AbC123"
echo held >"$D/p.json.tmp.Held99"
echo mine >"$D/p.json.tmp.notmine"
flock "$D/p.json.tmp.Held99" sleep 30 &
holder=$!
pids="$pids $holder"
i=0
while [ $i -lt 100 ] && flock -n "$D/p.json.tmp.Held99" true; do sleep 0.05; i=$((i + 1)); done
w_profile "$D/p.json" >"$W/out" 2>"$W/err"
if [ $? = 0 ] && [ ! -e "$D/p.json.tmp.AbC123" ] && [ -e "$D/p.json.tmp.Held99" ] &&
   [ -e "$D/p.json.tmp.notmine" ]; then ok
else bad "stale temporary files: $(ls "$D") $(errs)"; fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# ---- standard output -----------------------------------------------------------
plan1="$W/std-plan"
# shellcheck disable=SC2086
"$T" plan $HJ -o "$plan1" --quiet
FULL="thermap: error: standard output: cannot write: No space left on device"
full() {
	name=$1
	shift
	"$T" "$@" >/dev/full 2>"$W/err"
	rc=$?
	if [ $rc = 1 ] && [ "$(errs)" = "$FULL" ]; then ok
	else bad "$name > /dev/full: exit $rc: $(errs)"; fi
}
full help --help
full profile profile --host h200x4-a $F/telemetry.csv
full topo topo --host a --smi-topo $F/topo-m.txt
# shellcheck disable=SC2086
full plan plan $HJ -o "$W/std-plan2"
full check check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$plan1"
full check-json check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$plan1" --format json
full diff diff "$plan1" "$W/std-plan2"
# shellcheck disable=SC2086
full compare compare $HJ "$PWD/policies/identity.json"
# replan's decision line is its result: lost, it is exit 1, not 3
# shellcheck disable=SC2086
full replan replan --previous "$plan1" $HJ -o "$W/std-plan3" --quiet
"$T" check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$plan1" >&- 2>"$W/err"
rc=$?
if [ $rc = 1 ] && [ "$(errs)" = "thermap: error: standard output: cannot write: Bad file descriptor" ]
then ok; else bad "closed stdout: exit $rc: $(errs)"; fi
# a failing command keeps its own code and line
"$T" check --cluster "$W/nope.json" --job $F/job-pp2-dp2.json --plan "$plan1" >/dev/full 2>"$W/err"
rc=$?
if [ $rc = 4 ] && [ "$(errs)" = "thermap: error: $W/nope.json: cannot open: No such file or directory" ]
then ok; else bad "failure to /dev/full: exit $rc: $(errs)"; fi

# ---- plan directories ------------------------------------------------------------
P="$W/plans"
mkdir "$P"
# shellcheck disable=SC2086
plan() { "$T" plan $HJ --quiet "$@"; }
plan -o "$P/ref"
plan -o "$P/victim"
echo precious >"$P/victim/keep.txt"
refuse() {
	name=$1 dir=$2 want=$3
	plan -o "$dir" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $dir: $want" ]; then ok
	else bad "$name: exit $rc: $(errs)"; fi
}
# what is not a directory
echo data >"$P/file"
refuse plan-file "$P/file" "exists and is a regular file, not a directory; refusing to replace it"
check "plan-file: kept" [ "$(cat "$P/file")" = data ]
mkfifo "$P/fifo"
refuse plan-fifo "$P/fifo" "exists and is a FIFO, not a directory; refusing to replace it"
check "plan-fifo: kept" [ -p "$P/fifo" ]
ln -s victim "$P/link"
refuse plan-symlink "$P/link" "exists and is a symbolic link, not a directory; refusing to replace it"
if [ -L "$P/link" ] && [ -f "$P/victim/keep.txt" ] && [ -f "$P/victim/plan.json" ]; then ok
else bad "plan-symlink: not kept"; fi
if $root; then
	mknod "$P/null" c 1 3
	refuse plan-chardev "$P/null" "exists and is a character device, not a directory; refusing to replace it"
	check "plan-chardev: kept" [ -c "$P/null" ]
else
	skipped plan-chardev root "making a character device needs root"
fi
# directories that are not a plan, or a plan and more
mkdir "$P/data" && echo x >"$P/data/x.csv"
refuse plan-not-a-plan "$P/data" "exists and is not a thermap plan directory; refusing to replace it"
mkdir "$P/other" && echo '{"format": "other.plan/1"}' >"$P/other/plan.json"
refuse plan-other-format "$P/other" "exists and is not a thermap plan directory; refusing to replace it"
cp -r "$P/ref" "$P/extra"
echo notes >"$P/extra/notes.txt"
refuse plan-foreign-file "$P/extra" "holds other files than a plan's (notes.txt); refusing to replace it and delete them"
if [ -f "$P/extra/notes.txt" ] && [ -f "$P/extra/plan.json" ]; then ok
else bad "plan-foreign-file: not kept"; fi
mkdir "$P/extra/env/scripts"
echo x >"$P/extra/env/run.sh"
refuse plan-foreign-env "$P/extra" "holds other files than a plan's (env/run.sh, env/scripts/, notes.txt); refusing to replace it and delete them"
for f in a b c; do echo x >"$P/extra/$f"; done
refuse plan-foreign-many "$P/extra" "holds other files than a plan's (a, b, c, env/run.sh and 2 more); refusing to replace it and delete them"
# replan refuses before any work, the same way
# shellcheck disable=SC2086
t replan-foreign 2 "thermap: error: $P/extra: holds other files than a plan's (a, b, c, env/run.sh and 2 more); refusing to replace it and delete them" -- replan --previous "$P/ref" $HJ -o "$P/extra"
for x in fifo:FIFO link:"symbolic link" file:"regular file"; do
	# shellcheck disable=SC2086
	t "replan-${x%%:*}" 2 "thermap: error: $P/${x%%:*}: exists and is a ${x#*:}, not a directory; refusing to replace it" -- replan --previous "$P/ref" $HJ -o "$P/${x%%:*}"
done
if $root; then
	# shellcheck disable=SC2086
	t replan-chardev 2 "thermap: error: $P/null: exists and is a character device, not a directory; refusing to replace it" -- replan --previous "$P/ref" $HJ -o "$P/null"
	check "replan-chardev: kept" [ -c "$P/null" ]
else
	skipped replan-chardev root "making a character device needs root"
fi
if [ -p "$P/fifo" ] && [ -L "$P/link" ] && [ "$(cat "$P/file")" = data ]; then ok
else bad "replan: a refused target changed"; fi
t plan-dot 2 "thermap: error: .: names no directory of its own" -- plan $HJ -o .
# an empty directory and a plan are replaced; a trailing slash is the same
mkdir "$P/empty"
plan -o "$P/empty" && check "plan into an empty directory" diff -r "$P/empty" "$P/ref"
plan -o "$P/empty/" && check "plan over a plan, DIR/" diff -r "$P/empty" "$P/ref"
no_temp "$P" "plans"

# ---- the target changed while the writer was stopped before its rename -------
# steps with one env file: 1 temporary made, 2 plan.json, 3 env, 4 launch.txt,
# 5 renamed into place, 6 the previous plan removed
race() {
	name=$1 dir=$2 change=$3
	THERMAP_TEST_STOP_AT=4 "$T" plan $HJ -o "$dir" --quiet >"$W/out" 2>"$W/err" &
	pid=$!
	pids="$pids $pid"
	if stopped $pid; then ok; else bad "$name: the writer did not stop"; fi
	eval "$change"
	kill -CONT $pid
	wait $pid
	rc=$?
}
race race-new-dir "$P/r1" 'mkdir "$P/r1"; echo mine >"$P/r1/mine.txt"'
if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $P/r1: exists and is not a thermap plan directory; refusing to replace it" ] &&
   [ "$(ls "$P/r1")" = mine.txt ]; then ok
else bad "race-new-dir: exit $rc: $(errs); now: $(ls "$P/r1")"; fi
race race-new-link "$P/r2" 'ln -s victim "$P/r2"'
if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $P/r2: exists and is a symbolic link, not a directory; refusing to replace it" ] &&
   [ -L "$P/r2" ] && [ -f "$P/victim/keep.txt" ] && [ -f "$P/victim/plan.json" ]; then ok
else bad "race-new-link: exit $rc: $(errs)"; fi
cp -r "$P/ref" "$P/r3"
race race-foreign-file "$P/r3" 'echo mine >"$P/r3/mine.txt"'
if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $P/r3: holds other files than a plan's (mine.txt); refusing to replace it and delete them" ] &&
   [ -f "$P/r3/mine.txt" ] && rm "$P/r3/mine.txt" && diff -r "$P/r3" "$P/ref" >/dev/null; then ok
else bad "race-foreign-file: exit $rc: $(errs)"; fi
# the finding: a plan swapped for a link to another plan; the clean-up
# must not delete the files the link points to
cp -r "$P/ref" "$P/r4"
race race-plan-to-link "$P/r4" 'rm -r "$P/r4"; ln -s victim "$P/r4"'
if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $P/r4: exists and is a symbolic link, not a directory; refusing to replace it" ] &&
   [ -L "$P/r4" ] && [ -f "$P/victim/keep.txt" ] && [ -f "$P/victim/plan.json" ] &&
   [ -f "$P/victim/env/h200x4-a.env" ]; then ok
else bad "race-plan-to-link: exit $rc: $(errs); victim: $(ls -R "$P/victim")"; fi
cp -r "$P/ref" "$P/r5"
race race-plan-to-file "$P/r5" 'rm -r "$P/r5"; echo data >"$P/r5"'
if [ $rc = 2 ] && [ "$(errs)" = "thermap: error: $P/r5: exists and is a regular file, not a directory; refusing to replace it" ] &&
   [ "$(cat "$P/r5")" = data ]; then ok
else bad "race-plan-to-file: exit $rc: $(errs)"; fi
# a concurrent writer's plan is a plan: replaced
race race-concurrent "$P/r6" 'plan -o "$P/r6" --policy "$PWD/policies/identity.json"'
if [ $rc = 0 ] && diff -r "$P/r6" "$P/ref" >/dev/null; then ok
else bad "race-concurrent: exit $rc: $(errs)"; fi
no_temp "$P" "races"

# ---- temporaries of killed and of live writers -------------------------------
# killed after plan.json: its DIR.tmp-XXXXXX stays, the next writer removes it
THERMAP_TEST_STOP_AT=2 "$T" plan $HJ -o "$P/k" --quiet >/dev/null 2>&1 &
pid=$!
pids="$pids $pid"
if stopped $pid; then ok; else bad "kill: the writer did not stop"; fi
kill -KILL $pid
wait $pid 2>/dev/null
check "kill: a temporary is left" [ -n "$(ls "$P" | grep '^k\.tmp-')" ]
# a look-alike that holds something else keeps it
mkdir "$P/k.tmp-Abc123" && echo mine >"$P/k.tmp-Abc123/mine.txt"
plan -o "$P/k"
if [ "$(ls "$P" | grep '^k\.tmp-')" = k.tmp-Abc123 ] && [ -f "$P/k.tmp-Abc123/mine.txt" ] &&
   diff -r "$P/k" "$P/ref" >/dev/null; then ok
else bad "kill: after the next run: $(ls "$P" | grep '^k')"; fi
rm -r "$P/k.tmp-Abc123"
# killed after the rename: the previous plan is left under the temporary
# name, and removed by the next writer
THERMAP_TEST_STOP_AT=5 "$T" plan $HJ -o "$P/k" --quiet >/dev/null 2>&1 &
pid=$!
pids="$pids $pid"
stopped $pid && kill -KILL $pid
wait $pid 2>/dev/null
if diff -r "$P/k" "$P/ref" >/dev/null && [ -n "$(ls "$P" | grep '^k\.tmp-')" ]; then ok
else bad "kill after the rename: $(ls "$P" | grep '^k')"; fi
plan -o "$P/k"
no_temp "$P" "kill after the rename, then a run"
# a live writer (stopped after making its temporary) keeps it while another
# writer runs; both finish
THERMAP_TEST_STOP_AT=1 "$T" plan $HJ -o "$P/live" --quiet >/dev/null 2>"$W/live.err" &
pid=$!
pids="$pids $pid"
stopped $pid
tmpname=$(ls "$P" | grep '^live\.tmp-')
plan -o "$P/live" --policy "$PWD/policies/identity.json"
if [ -n "$tmpname" ] && [ -d "$P/$tmpname" ]; then ok
else bad "live writer: its temporary '$tmpname' was removed"; fi
kill -CONT $pid
wait $pid
rc=$?
if [ $rc = 0 ] && diff -r "$P/live" "$P/ref" >/dev/null; then ok
else bad "live writer: exit $rc: $(cat "$W/live.err")"; fi
no_temp "$P" "live writer"

# a full file system while writing the plan: exit 1 naming the file, the
# previous plan as it was, no temporary
cp -r "$P/ref" "$P/full"
# shellcheck disable=SC2086
(ulimit -f 1; "$T" plan $HJ --policy "$PWD/policies/identity.json" -o "$P/full" --quiet) >"$W/out" 2>"$W/err"
rc=$?
if [ $rc = 1 ] && [ "$(errs | sed 's/\.tmp-[A-Za-z0-9]\{6\}/.tmp-XXXXXX/')" = "thermap: error: $P/full.tmp-XXXXXX/plan.json: write failed: File too large" ] &&
   diff -r "$P/full" "$P/ref" >/dev/null; then ok
else bad "plan, full file system: exit $rc: $(errs)"; fi
no_temp "$P" "plan, full file system"

# ---- options -----------------------------------------------------------------------
twice() {
	name=$1 cmd=$2 opt=$3
	shift 3
	t "$name" 2 "thermap: option '$opt' is given more than once; it takes one value
Try 'thermap $cmd --help'." -- "$cmd" "$@"
}
twice twice-plan plan --cluster --cluster a --cluster b
twice twice-plan-o plan -o --out a -o b
twice twice-replan replan --min-gain --min-gain 1% --min-gain=2%
twice twice-check check --plan --plan a --plan=b
twice twice-compare compare --format --format csv --format=json
twice twice-diff diff --format --format=json a --format text b
twice twice-profile profile -o -o a x.csv -o b
twice twice-profile-from profile --from --from +1 --from +2 x.csv
twice twice-calibrate calibrate --plan --plan a --plan b
twice twice-topo topo --prefer --prefer gpus --prefer hwloc
t flag-value 2 "thermap: option '--quiet=yes' takes no value
Try 'thermap plan --help'." -- plan --quiet=yes
t check-format 2 "thermap: --format 'xml': expected text or json
Try 'thermap check --help'." -- check --cluster a --job b --plan c --format xml
# --x=V where --x V is taken, compare included
t compare-eq 0 "" -- compare --cluster=$F/cluster.json --profile=$F/profile.json --job=$F/job-pp2-dp2.json --format=csv "$PWD/policies/identity.json"
check "compare-eq: csv" grep -q '^identity,identity,' "$W/out"
# '--' ends the options: a file whose name starts with '-'
cp $F/telemetry.csv "$W/-t.csv"
(cd "$W" && "$T" profile --host h200x4-a -t.csv >"$W/out" 2>"$W/err")
rc=$?
if [ $rc = 2 ] && [ "$(errs)" = "thermap: unknown option '-t.csv'
Try 'thermap profile --help'." ]; then ok; else bad "no --: exit $rc: $(errs)"; fi
(cd "$W" && "$T" profile --host h200x4-a -- -t.csv >"$W/out" 2>"$W/err")
rc=$?
if [ $rc = 0 ] && grep -q '"host": "h200x4-a"' "$W/out"; then ok
else bad "profile -- -t.csv: exit $rc: $(errs)"; fi
(cd "$W" && "$T" profile --host h200x4-a -- --version >"$W/out" 2>"$W/err")
rc=$?
if [ $rc = 4 ] && [ "$(errs)" = "thermap: error: --version: cannot open: No such file or directory" ]
then ok; else bad "profile -- --version: exit $rc: $(errs)"; fi
cp "$PWD/policies/identity.json" "$W/-id.json"
# shellcheck disable=SC2086
(cd "$W" && "$T" compare $HJ --format csv -- -id.json >"$W/out" 2>"$W/err")
rc=$?
if [ $rc = 0 ] && grep -q '^identity,' "$W/out"; then ok
else bad "compare -- -id.json: exit $rc: $(errs)"; fi
cp -r "$P/ref" "$W/-old" && cp -r "$P/ref" "$W/-new"
(cd "$W" && "$T" diff -- -old -new >"$W/out" 2>"$W/err")
rc=$?
if [ $rc = 0 ] && grep -q 'no rank moves' "$W/out"; then ok
else bad "diff -- -old -new: exit $rc: $(errs)"; fi
# options that apply per file still repeat: two --replay logs
n=$(wc -l <$F/telemetry.csv)
head -n $((n / 2)) $F/telemetry.csv >"$W/rep-a.csv"
{ head -n 1 $F/telemetry.csv; tail -n +$((n / 2 + 1)) $F/telemetry.csv; } >"$W/rep-b.csv"
t compare-replay-twice 0 - -- compare --cluster $F/cluster.json --job $F/job-pp2-dp2.json \
	--replay "$W/rep-a.csv" --replay="$W/rep-b.csv" --host h200x4-a --window 60 \
	--format csv "$PWD/policies/identity.json"
check "compare-replay-twice: a step" grep -q '^1,0,60,60,120,identity,' "$W/out"
t diff-three 2 "thermap: unexpected argument 'c'
Try 'thermap diff --help'." -- diff a b c
t plan-operand 2 "thermap: unexpected argument 'x'
Try 'thermap plan --help'." -- plan -- x

# ---- check --format json ---------------------------------------------------------
CJ="--cluster $F/cluster.json --job $F/job-pp2-dp2.json"
# shellcheck disable=SC2086
t check-json 0 "" -- check $CJ --plan "$P/ref" --profile $F/profile.json --format json
id=$(sed -n 's/^  "id": "\(.*\)",$/\1/p' "$P/ref/plan.json")
for l in '"format": "thermap.check/1",' '"ok": true,' '"exit": 0,' "\"plan\": \"$id\"," \
	 '"ranks": 4,' '"nodes": 1,' '{"name": "ranks", "result": "pass"}' \
	 '{"name": "pp_nvlink", "result": "not_applicable"}' \
	 '{"name": "previous", "result": "skipped"}' \
	 '{"name": "launchers", "result": "pass"}' \
	 '{"name": "evidence_rule", "result": "pass"}' '"failure": null'; do
	if grep -qF -- "$l" "$W/out"; then ok; else bad "check-json lacks: $l"; fi
done
if [ "$(grep -c '{"name": ' "$W/out")" = 17 ]; then ok; else bad "check-json: not 17 checks"; fi
if command -v jq >/dev/null 2>&1; then
	if jq -e '.ok and (.checks | length) == 17' "$W/out" >/dev/null; then ok
	else bad "check-json: not the JSON expected"; fi
else
	skipped check-json-jq jq "jq is not installed" "install it: scripts/ensure-deps.sh jq"
fi
cp -r "$P/ref" "$W/broken"
sed -i 's/^NODE_RANK=0/NODE_RANK=1/' "$W/broken/env/h200x4-a.env"
# shellcheck disable=SC2086
t check-json-fail 4 "thermap: error: $W/broken/env/h200x4-a.env: NODE_RANK=1 is out of range or repeats another env file" -- check $CJ --plan "$W/broken" --format json
for l in '"ok": false,' '"exit": 4,' '{"name": "env_files", "result": "fail"}' \
	 '{"name": "ranks", "result": "not_run"}' \
	 "\"failure\": {\"check\": \"env_files\", \"message\": \"$W/broken/env/h200x4-a.env: NODE_RANK=1 is out of range or repeats another env file\"}"; do
	if grep -qF -- "$l" "$W/out"; then ok; else bad "check-json-fail lacks: $l"; fi
done
t check-json-input 4 - -- check --cluster "$W/nope.json" --job $F/job-pp2-dp2.json --plan "$P/ref" --format json
if grep -qF '{"name": "input_files", "result": "fail"}' "$W/out" && grep -qF '"plan": null,' "$W/out"
then ok; else bad "check-json-input: $(cat "$W/out")"; fi
# the text stays as it was
# shellcheck disable=SC2086
t check-text 0 "" -- check $CJ --plan "$P/ref"
check "check-text: one line" [ "$(cat "$W/out")" = "$P/ref: ok: plan $id, 4 ranks on 1 node(s); every rank's GPU in the env files matches plan.json; the launcher files agree; tp_nvlink holds" ]

# no case above touched the system's devices
if [ -c /dev/null ] && [ -c /dev/full ]; then ok
else bad "/dev/null or /dev/full is no longer a character device"; fi

finish --with-skipped
