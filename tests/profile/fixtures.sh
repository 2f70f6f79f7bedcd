#!/bin/sh
# Runs `thermap profile` on every telemetry file under fixtures/telemetry/
# and on the H200 recording, and compares the profile, the --json-summary
# and the exit code with what tests/profile/expected/ holds.
#
#   sh tests/profile/fixtures.sh            compare (part of make check)
#   sh tests/profile/fixtures.sh --update   rewrite the expected files
#                                           (then read the diff!)
# THERMAP names the binary (default build/thermap). Run from the
# repository root: the summaries name files by their relative path.
set -u
T=${THERMAP:-build/thermap}
E=tests/profile/expected
update=0
[ "${1:-}" = --update ] && update=1
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # name, then the arguments of thermap profile
	name=$1; shift
	"$T" profile "$@" -o "$tmp/p.json" --json-summary >"$tmp/s.json" \
	    2>"$tmp/err"
	rc=$?
	if [ $rc -ne 0 ]; then rm -f "$tmp/p.json" "$tmp/s.json"; fi
	printf '%s\n' "$rc" >"$tmp/rc"
	if [ $update = 1 ]; then
		cp "$tmp/rc" "$E/$name.rc"
		cp "$tmp/err" "$E/$name.err"
		if [ $rc -eq 0 ]; then
			cp "$tmp/p.json" "$E/$name.profile.json"
			cp "$tmp/s.json" "$E/$name.summary.json"
		else
			rm -f "$E/$name.profile.json" "$E/$name.summary.json"
		fi
		return
	fi
	ok=1
	cmp -s "$tmp/rc" "$E/$name.rc" || ok=0
	cmp -s "$tmp/err" "$E/$name.err" || ok=0
	if [ $rc -eq 0 ]; then
		cmp -s "$tmp/p.json" "$E/$name.profile.json" || ok=0
		cmp -s "$tmp/s.json" "$E/$name.summary.json" || ok=0
	fi
	if [ $ok = 1 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL profile fixture $name (exit $rc)"
		diff "$E/$name.err" "$tmp/err" | head -5
		[ -f "$tmp/p.json" ] && diff "$E/$name.profile.json" \
		    "$tmp/p.json" | head -10
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

[ $update = 1 ] && { echo "profile fixtures: expected files rewritten"; exit 0; }
echo "profile fixtures: $pass passed, $fail failed"
[ $fail -eq 0 ]
