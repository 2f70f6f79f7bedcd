# shellcheck shell=sh
# What the shell harnesses of tests/ share (POSIX sh; they run under dash).
# A harness runs from the repository root and begins
#
#	. tests/lib.sh
#	preamble LABEL "$@"
#
# and ends with 'finish' (tests/fuzz/cli.sh keeps its own summary line).
# Its own helpers (a case runner that compares the exact stderr, readers
# of one kind of file) stay in it. As in any sh function, the variables
# these set (label, want, name, got, i) are the harness's too.
#
#   preamble LABEL [--update]
#	set -u; T is $THERMAP (default build/thermap); W a fresh directory
#	(thermap-LABEL.XXXXXX under $TMPDIR or /tmp, blanks as '-') that an
#	EXIT trap removes; the counters pass, fail and skip at 0; update the
#	harness's first argument ('--update' rewrites the pinned files).
#	LABEL starts the summary line and the skipped lines.
#   ok
#	one check passed.
#   bad MSG...
#	one check failed: prints "FAIL: MSG".
#   skipped CASE NAME WHY [FIX]
#	CASE cannot run: WHY (e.g. "cbc is not installed"). That is a failure,
#	"FAIL: CASE: WHY (FIX; or skip it by name: THERMAP_SKIP=NAME)"
#	("FIX; or " left out without FIX), unless THERMAP_SKIP (names
#	separated by commas or blanks) names NAME: then it is counted as
#	skipped, "LABEL: CASE: skipped (no NAME; THERMAP_SKIP names it)" is
#	printed, and "LABEL: CASE (NAME)" is added to the file
#	THERMAP_SKIPLOG names when its directory exists (make check counts
#	those lines).
#   pinned FILE
#	$W/FILE is $E/FILE byte for byte (the first 20 lines of the diff
#	when not); with --update, $W/FILE is copied to $E/FILE instead. E
#	is the harness's folder of expected files.
#   expect CODE NAME COMMAND...
#	runs COMMAND, stdout to $W/NAME.out, stderr to $W/NAME.err; it must
#	exit with CODE.
#   one_line NAME TEXT
#	$W/NAME.err is one error line holding TEXT (warnings aside, and a
#	usage error's "Try" hint).
#   has NAME FILE TEXT
#	FILE contains the fixed string TEXT.
#   num FILE KEY [LEAD]
#	prints the first number written as "KEY": N in FILE, on a line where
#	LEAD (a sed basic regular expression; anything by default) is all
#	that comes before the key.
#   str FILE KEY [LEAD]
#	the same for a string, "KEY": "S", without its quotes.
#   ranks PLAN_JSON
#	prints "rank uuid" for each rank of a plan.json (one rank a line).
#   stopped PID
#	waits up to 10 s for the process to be stopped (SIGSTOP, as
#	THERMAP_TEST_STOP_AT does); true if it is.
#   finish [--with-skipped]
#	prints "LABEL: P passed, F failed", with ", S skipped" when checks
#	were skipped (always, with --with-skipped); true when none failed.

preamble() {
	set -u
	label=$1
	update=${2:-}
	# shellcheck disable=SC2034 # the harness runs it
	T=${THERMAP:-build/thermap}
	W=$(mktemp -d "${TMPDIR:-/tmp}/thermap-$(printf '%s' "$label" | tr ' ' -).XXXXXX")
	trap 'rm -rf "$W"' EXIT
	pass=0
	fail=0
	skip=0
}

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; }

skipped() {
	case " $(echo "${THERMAP_SKIP:-}" | tr ',' ' ') " in
	*" $2 "*)
		skip=$((skip + 1))
		printf '%s: %s: skipped (no %s; THERMAP_SKIP names it)\n' "$label" "$1" "$2"
		if [ -n "${THERMAP_SKIPLOG:-}" ] && [ -d "$(dirname "$THERMAP_SKIPLOG")" ]; then
			echo "$label: $1 ($2)" >>"$THERMAP_SKIPLOG"
		fi
		;;
	*)
		if [ -n "${4:-}" ]; then
			bad "$1: $3 ($4; or skip it by name: THERMAP_SKIP=$2)"
		else
			bad "$1: $3 (skip it by name: THERMAP_SKIP=$2)"
		fi
		;;
	esac
}

pinned() {
	if [ "$update" = --update ]; then
		cp "$W/$1" "$E/$1"
		ok
	elif cmp -s "$W/$1" "$E/$1"; then
		ok
	else
		bad "$1 differs from $E/$1:"
		diff "$E/$1" "$W/$1" | head -20
	fi
}

# pinned_run NAME WHAT: a run's exit code ($W/rc), stderr ($W/err) and,
# when it exited 0, its output ($W/c.json) against $E/NAME.rc, .err and
# .json, WHAT naming it in a failure; with --update they are written
# there instead and it returns 1 (nothing was compared)
pinned_run() {
	name=$1 what=$2 rc=$(cat "$W/rc")
	if [ "$update" = --update ]; then
		cp "$W/rc" "$E/$name.rc"
		cp "$W/err" "$E/$name.err"
		if [ "$rc" -eq 0 ]; then cp "$W/c.json" "$E/$name.json"
		else rm -f "$E/$name.json"; fi
		return 1
	fi
	if cmp -s "$W/rc" "$E/$name.rc" && cmp -s "$W/err" "$E/$name.err" &&
	   { [ "$rc" -ne 0 ] || cmp -s "$W/c.json" "$E/$name.json"; }; then
		ok
	else
		bad "$what (exit $rc)"
		diff "$E/$name.err" "$W/err" | head -5
		[ "$rc" -eq 0 ] && diff "$E/$name.json" "$W/c.json" | head -10
	fi
	return 0
}

expect() {
	want=$1 name=$2
	shift 2
	"$@" >"$W/$name.out" 2>"$W/$name.err"
	got=$?
	if [ "$got" = "$want" ]; then ok
	else bad "$name: exit $got, expected $want: $(head -3 "$W/$name.err")"; fi
}

one_line() {
	if [ "$(grep -vc -e '^thermap: warning: ' -e '^Try ' "$W/$1.err")" = 1 ] &&
	   grep -v '^thermap: warning: ' "$W/$1.err" | head -1 | grep -qF -- "$2"; then ok
	else bad "$1: stderr is not one line with '$2': $(cat "$W/$1.err")"; fi
}

has() {
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: $2 lacks: $3"; fi
}

num() { sed -n "s/^${3:-.*}\"$2\": \\([-0-9.eE+]*\\).*/\\1/p" "$1" | head -1; }
str() { sed -n "s/^${3:-.*}\"$2\": \"\\([^\"]*\\)\".*/\\1/p" "$1" | head -1; }

ranks() {
	sed -n 's/.*{"rank": \([0-9]*\),.*"uuid": "\([^"]*\)".*/\1 \2/p' "$1"
}

stopped() {
	i=0
	while [ $i -lt 200 ] && [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != T ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = T ]
}

# shellcheck disable=SC2120 # the argument is optional
finish() {
	if [ "$skip" != 0 ] || [ "${1:-}" = --with-skipped ]; then
		printf '%s: %d passed, %d failed, %d skipped\n' "$label" "$pass" "$fail" "$skip"
	else
		printf '%s: %d passed, %d failed\n' "$label" "$pass" "$fail"
	fi
	[ "$fail" = 0 ]
}
