#!/bin/sh
# The option table against the man page, and the one grammar on every row.
#  - Rows: `thermap CMD --help` is written from each command's rows (src/cli),
#    one line per row (or per rows that share a help text); each row's
#    name, short alias and argument name are compared, command by command
#    and in order, with the entries of the man page's OPTIONS (docs/thermap.1,
#    .SS "thermap CMD"), and the commands of `thermap --help` with its
#    sections. The first mismatch is named. The comparison is also run on a
#    copy of the man page with one argument name changed, and must fail
#    there.
#  - Grammar, for every row of every command: --x=V does what --x V does
#    (and -o V what --out V does); a flag given a value is refused; an
#    option of one value given twice is refused unless it is one of the
#    repeatable options the man page lists; --help, -h and --version where
#    a value is due are a missing value, not help or the version; after
#    '--' nothing is an option.
# THERMAP names the binary (build/thermap by default); MAN the man page.
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble options
MAN=${MAN:-docs/thermap.1}
F=fixtures/h200x4-a

# ---- rows --------------------------------------------------------------------

# The rows of an option list, one line each: NAME ALIAS ARG ('-' for none;
# NAME 'operand' for the operands' row, ARG their name). Input: one entry
# per line as people read it: "-o DIR, --out DIR", "--from T, --to T",
# "--help, -h", "FILE...". A short option beside a long one is its alias.
rows() {
	awk '{
		n = split($0, it, /, /)
		for (k = 1; k <= n; k++) {
			sp = index(it[k], " ")
			nm[k] = sp ? substr(it[k], 1, sp - 1) : it[k]
			ar[k] = sp ? substr(it[k], sp + 1) : "-"
		}
		for (k = 1; k <= n; k++) {
			short = nm[k] ~ /^-[^-]$/
			if (short && k < n && nm[k + 1] ~ /^--/) {
				print nm[k + 1], nm[k], (ar[k + 1] != "-" ? ar[k + 1] : ar[k]); k++
			} else if (nm[k] ~ /^--/ && k < n && nm[k + 1] ~ /^-[^-]$/) {
				print nm[k], nm[k + 1], (ar[k] != "-" ? ar[k] : ar[k + 1]); k++
			} else if (nm[k] ~ /^-/) {
				print nm[k], "-", ar[k]
			} else {
				print "operand", "-", it[k]
			}
		}
	}'
}

# The entries of `thermap CMD --help`: the lines that start with two
# spaces and a name, up to the gap before the help text. --help is the
# parser's own row: -h is its alias.
help_entries() {
	"$T" "$1" --help | awk '/^  [^ ]/ {
		s = substr($0, 3); i = index(s, "  "); s = i ? substr(s, 1, i - 1) : s
		if (s == "--help") s = "--help, -h"
		print s
	}'
}

# The commands `thermap --help` lists
commands() {
	"$T" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { exit }
	                   on { print $1 }'
}

# The entries of the man page's OPTIONS for one command: each .TP's tag as
# it reads, fonts and quotes gone.
man_entries() {
	awk -v want="$2" '
	function plain(s,    m, out, q, i, c, alt, args, n, k) {
		m = ""
		if (s ~ /^\.[A-Z]+( |$)/) { m = substr(s, 2, index(s " ", " ") - 2); s = substr(s, length(m) + 3) }
		# a macro that alternates fonts joins its arguments, .B and .I
		# and text keep their spaces
		alt = m ~ /^(BI|BR|IB|IR|RB|RI)$/
		n = 0; q = 0; args[0] = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c == "\"") { q = !q; continue }
			if (c == " " && !q && m != "") { if (args[n] != "") args[++n] = ""; continue }
			args[n] = args[n] c
		}
		out = ""
		for (k = 0; k <= n; k++) out = out (k && !alt ? " " : "") args[k]
		gsub(/\\f[BIRP]/, "", out); gsub(/\\-/, "-", out)
		return out
	}
	/^\.SH / { sec = $0; next }
	sec != ".SH OPTIONS" { next }
	/^\.SS / { ss = $0; sub(/^\.SS "?/, "", ss); sub(/"$/, "", ss); tag = 0; next }
	ss == "thermap " want && tag { print plain($0); tag = 0; next }
	ss == "thermap " want && /^\.TP/ { tag = 1 }
	' "$1"
}

# The command sections of the man page's OPTIONS
man_commands() {
	awk '/^\.SH / { sec = $0; next } sec == ".SH OPTIONS" && /^\.SS "thermap / {
		s = $0; sub(/^\.SS "thermap /, "", s); sub(/"$/, "", s); print s }' "$1"
}

# compare_rows MAN: 0 when every command's rows ($W/h-CMD) match MAN's
# entries; else the first mismatch on stdout
compare_rows() {
	commands >"$W/cmds"
	if [ "$(sort "$W/cmds")" != "$(man_commands "$1" | sort)" ]; then
		echo "commands: thermap --help lists $(tr '\n' ' ' <"$W/cmds")but $1 has OPTIONS sections for $(man_commands "$1" | tr '\n' ' ')"
		return 1
	fi
	while read -r cmd; do
		man_entries "$1" "$cmd" | rows >"$W/m-$cmd"
		first=$(awk -v cmd="$cmd" -v man="$1" '
			NR == FNR { h[FNR] = $0; nh = FNR; next }
			{ m[FNR] = $0; nm = FNR }
			END {
				n = nh > nm ? nh : nm
				for (i = 1; i <= n; i++) {
					a = i <= nh ? h[i] : "(nothing)"
					b = i <= nm ? m[i] : "(nothing)"
					if (a != b) {
						printf "thermap %s, row %d: the table has \"%s\", %s has \"%s\"\n",
						       cmd, i, a, man, b
						exit
					}
				}
			}' "$W/h-$cmd" "$W/m-$cmd")
		if [ -n "$first" ]; then
			echo "$first"
			return 1
		fi
	done <"$W/cmds"
	return 0
}

# the table's rows, as each command's --help shows them
for cmd in $(commands); do
	help_entries "$cmd" | rows >"$W/h-$cmd"
done
if out=$(compare_rows "$MAN"); then ok; else bad "man page: $out"; fi
# each command has rows to compare, and --help is the last
for cmd in $(commands); do
	if [ "$(tail -n 1 "$W/h-$cmd")" = "--help -h -" ] && [ "$(wc -l <"$W/h-$cmd")" -ge 2 ]; then ok
	else bad "rows of $cmd: $(cat "$W/h-$cmd")"; fi
done
# the comparison fails where the man page differs, and says where
sed 's/^\.BI \\-\\-write\\-lp " FILE"$/.BI \\-\\-write\\-lp " PATH"/' "$MAN" >"$W/altered.1"
if cmp -s "$MAN" "$W/altered.1"; then
	bad "self-test: the --write-lp entry was not found to alter"
elif out=$(compare_rows "$W/altered.1"); then
	bad "self-test: an altered man page passed"
elif [ "$out" = "thermap plan, row 7: the table has \"--write-lp - FILE\", $W/altered.1 has \"--write-lp - PATH\"" ]; then ok
else bad "self-test: $out"; fi
# topo's --help entry (its .TP, tag and text) left out
awk '/^\.TP$/ { held = $0; next }
     held != "" && /^\.BR \\-\\-help ", " \\-h$/ && !done { getline; done = 1; held = ""; next }
     held != "" { print held; held = "" }
     { print }' "$MAN" >"$W/nohelp.1"
if out=$(compare_rows "$W/nohelp.1"); then bad "self-test: a man page without topo's --help passed"
elif [ "$out" = "thermap topo, row 9: the table has \"--help -h -\", $W/nohelp.1 has \"(nothing)\"" ]; then ok
else bad "self-test: $out"; fi

# ---- the grammar on every row -------------------------------------------------

# r NAME ARGS...: rc, stdout and stderr of thermap ARGS into $W/NAME.*
r() {
	case_=$1
	shift
	"$T" "$@" >"$W/$case_.out" 2>"$W/$case_.err"
	echo $? >"$W/$case_.rc"
}
same() { cmp -s "$W/$1.rc" "$W/$2.rc" && cmp -s "$W/$1.out" "$W/$2.out" && cmp -s "$W/$1.err" "$W/$2.err"; }
said() { [ "$(cat "$W/$1.rc")" = "$2" ] && [ "$(cat "$W/$1.err")" = "$3" ]; }

# the options that apply to the files after them (docs/thermap.1, OPTIONS)
repeatable=" profile--host profile--fields calibrate--host calibrate--fields calibrate--processes "
repeatable="$repeatable topo--host topo--smi-topo topo--gpus topo--hwloc "
repeatable="$repeatable topo--nccl compare--replay "

V=$W/none
for cmd in $(commands); do
	while read -r name alias arg; do
		[ "$name" = operand ] || [ "$name" = --help ] && continue
		if [ "$arg" = - ]; then
			r flag "$cmd" "$name=1"
			if said flag 2 "thermap: option '$name=1' takes no value
Try 'thermap $cmd --help'."; then ok; else bad "$cmd $name=1: $(cat "$W/flag.err")"; fi
			continue
		fi
		r sp "$cmd" "$name" "$V"
		r eq "$cmd" "$name=$V"
		if same sp eq && ! grep -qE "unknown option|needs a value|takes no value" "$W/eq.err"
		then ok; else bad "$cmd $name=V: exit $(cat "$W/eq.rc"): $(cat "$W/eq.err"); $name V: exit $(cat "$W/sp.rc"): $(cat "$W/sp.err")"; fi
		if [ "$alias" != - ]; then
			r al "$cmd" "$alias" "$V"
			if same sp al; then ok; else bad "$cmd $alias V: $(cat "$W/al.err")"; fi
		fi
		r twice "$cmd" "$name=$V" "$name" "$V"
		case $repeatable in
		*" $cmd$name "*)
			if grep -q "given more than once" "$W/twice.err"; then bad "$cmd $name twice: $(cat "$W/twice.err")"; else ok; fi ;;
		*)
			if said twice 2 "thermap: option '$name' is given more than once; it takes one value
Try 'thermap $cmd --help'."; then ok; else bad "$cmd $name twice: $(cat "$W/twice.err")"; fi ;;
		esac
		for q in --version --help -h; do
			r miss "$cmd" "$name" "$q"
			if said miss 2 "thermap: option '$name' needs a value
Try 'thermap $cmd --help'." && [ ! -s "$W/miss.out" ]; then ok
			else bad "$cmd $name $q: exit $(cat "$W/miss.rc"): $(cat "$W/miss.out" "$W/miss.err")"; fi
		done
		# a value given with '=' is the value, whatever it is
		r val "$cmd" "$name=--version"
		if ! grep -q "^thermap [0-9]" "$W/val.out"; then ok; else bad "$cmd $name=--version printed the version"; fi
	done <"$W/h-$cmd"
	# after '--', an option's name is an operand
	r dd "$cmd" -- --help
	if [ "$(cat "$W/dd.rc")" != 0 ] && ! grep -q "^usage:" "$W/dd.out"; then ok
	else bad "$cmd -- --help: exit $(cat "$W/dd.rc"): $(head -1 "$W/dd.out")"; fi
	# --version as an option, anywhere before '--', whatever surrounds it
	r ver "$cmd" --bogus --version
	if said ver 0 "" && [ "$(cat "$W/ver.out")" = "$("$T" --version)" ]; then ok; else bad "$cmd --bogus --version: $(cat "$W/ver.err")"; fi
done

# the brief's cases by name
r miss plan --cluster c --policy --version
if said miss 2 "thermap: option '--policy' needs a value
Try 'thermap plan --help'."; then ok; else bad "plan --policy --version: $(cat "$W/miss.out" "$W/miss.err")"; fi
r ver plan --cluster=c --policy=p --version
if said ver 0 ""; then ok; else bad "plan --cluster=c --policy=p --version: $(cat "$W/ver.err")"; fi

# plan --cluster=FILE and compare --cluster=FILE alike, on real inputs
r plan-sp plan --cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/p-sp" --quiet
r plan-eq plan --cluster=$F/cluster.json --profile=$F/profile.json --job=$F/job-pp2-dp2.json --out="$W/p-eq" --quiet
if said plan-eq 0 "" && diff -r "$W/p-sp" "$W/p-eq" >/dev/null; then ok; else bad "plan --x=V: $(cat "$W/plan-eq.err")"; fi
r cmp-sp compare --cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json --format csv policies/thermal.json
r cmp-eq compare --cluster=$F/cluster.json --profile=$F/profile.json --job=$F/job-pp2-dp2.json --format=csv policies/thermal.json
if said cmp-eq 0 "" && same cmp-sp cmp-eq; then ok; else bad "compare --x=V: $(cat "$W/cmp-eq.err")"; fi

finish
