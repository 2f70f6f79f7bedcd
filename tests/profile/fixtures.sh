#!/bin/sh
# Runs `thermap profile` on every telemetry file under fixtures/telemetry/
# and on the H200 recordings (the one-hot one with --phases), and compares
# the profile, the --json-summary and the exit code with what
# tests/profile/expected/ holds.
#
#   sh tests/profile/fixtures.sh            compare (part of make check)
#   sh tests/profile/fixtures.sh --update   rewrite the expected files
#                                           (then read the diff!)
# THERMAP names the binary (default build/thermap). Run from the
# repository root: the summaries name files by their relative path.
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "profile fixtures" "$@"
E=tests/profile/expected

check() {  # name, then the arguments of thermap profile
	name=$1; shift
	"$T" profile "$@" -o "$W/p.json" --json-summary >"$W/s.json" \
	    2>"$W/err"
	rc=$?
	if [ $rc -ne 0 ]; then rm -f "$W/p.json" "$W/s.json"; fi
	printf '%s\n' "$rc" >"$W/rc"
	if [ "$update" = --update ]; then
		cp "$W/rc" "$E/$name.rc"
		cp "$W/err" "$E/$name.err"
		if [ $rc -eq 0 ]; then
			cp "$W/p.json" "$E/$name.profile.json"
			cp "$W/s.json" "$E/$name.summary.json"
		else
			rm -f "$E/$name.profile.json" "$E/$name.summary.json"
		fi
		return
	fi
	same=1
	cmp -s "$W/rc" "$E/$name.rc" || same=0
	cmp -s "$W/err" "$E/$name.err" || same=0
	if [ $rc -eq 0 ]; then
		cmp -s "$W/p.json" "$E/$name.profile.json" || same=0
		cmp -s "$W/s.json" "$E/$name.summary.json" || same=0
	fi
	if [ $same = 1 ]; then
		ok
	else
		bad "profile fixture $name (exit $rc)"
		diff "$E/$name.err" "$W/err" | head -5
		[ -f "$W/p.json" ] && diff "$E/$name.profile.json" \
		    "$W/p.json" | head -10
	fi
}

mkdir -p "$E"
for f in $(find fixtures/telemetry -type f ! -name '*.src.txt' | LC_ALL=C sort)
do
	name=$(printf '%s' "${f#fixtures/telemetry/}" | sed 's|/|__|g')
	check "$name" "$f"
done
check h200x4-a --host h200x4-a fixtures/h200x4-a/telemetry.csv
check h200x4-a-window --host h200x4-a --from +23 --to +174 \
    fixtures/h200x4-a/telemetry.csv
# each GPU loaded alone, then all four: the couplings of --phases
O=fixtures/real/h200x4-onehot
check h200x4-onehot-phases --host h200x4-onehot $O/telemetry.csv \
    --phases $O/load-phases.txt

[ "$update" = --update ] && { echo "profile fixtures: expected files rewritten"; exit 0; }
finish
