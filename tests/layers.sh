#!/bin/sh
# The layer rule of src/ (README, "The source, layer by layer"): a file
# includes the header of its own folder and those of the folders below
# it, never one above or beside it; jansson is seen only by the document
# loaders (format/ and the query_range reader), GLPK only by the solvers,
# libhwloc only by the hwloc reader, libcurl only by the Prometheus API
# reader. Each breach is one line; the exit
# status is the number of breaches (at most 1).
set -u
cd "$(dirname "$0")/.." || exit 1

# folder: the folders whose headers it may include (itself first)
below() {
	case $1 in
	base)      echo "base" ;;
	format)    echo "format base" ;;
	telemetry) echo "telemetry format base" ;;
	topo)      echo "topo format base" ;;
	model)     echo "model format base" ;;
	solve)     echo "solve model format base" ;;
	ops)       echo "ops solve model telemetry topo format base" ;;
	cli)       echo "cli ops solve model telemetry topo format base" ;;
	*)         echo "" ;;
	esac
}

# the files that may include a library's header
may() {
	case $1 in
	'<jansson.h>') case $2 in src/format/*.c|src/telemetry/prom.c) return 0 ;; esac ;;
	'<glpk.h>')    case $2 in src/solve/*.c) return 0 ;; esac ;;
	'<hwloc.h>')   case $2 in src/topo/hwloc.c) return 0 ;; esac ;;
	'<curl/curl.h>') case $2 in src/telemetry/promapi.c) return 0 ;; esac ;;
	*) return 0 ;;
	esac
	return 1
}

n=0 bad=0
for f in src/*/*.c src/*/*.h; do
	dir=${f#src/}
	dir=${dir%%/*}
	allowed=$(below "$dir")
	if [ -z "$allowed" ]; then
		echo "layers: $f: src/$dir/ is no layer of the rule"
		bad=1
		continue
	fi
	# shellcheck disable=SC2013
	for inc in $(sed -n 's/^#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p' "$f"); do
		n=$((n + 1))
		case $inc in
		'"thermap/thermap.h"') ;;
		\"*/*.h\")
			d=${inc#\"}
			d=${d%%/*}
			case " $allowed " in
			*" $d "*) ;;
			*) echo "layers: $f includes $inc: src/$dir/ may include only $allowed"
			   bad=1 ;;
			esac ;;
		\"*\")
			echo "layers: $f includes $inc: name the folder (\"FOLDER/FILE.h\")"
			bad=1 ;;
		*)
			if ! may "$inc" "$f"; then
				echo "layers: $f includes $inc, which only the files the rule names may"
				bad=1
			fi ;;
		esac
	done
done
# a folder's header is the only header in it
for h in src/*/*.h; do
	dir=${h#src/}
	dir=${dir%%/*}
	case $h in
	"src/$dir/$dir.h") ;;
	*) echo "layers: $h: one header per folder (src/$dir/$dir.h)"; bad=1 ;;
	esac
done
if [ "$bad" = 0 ]; then echo "layers: $n includes follow the rule"; fi
exit "$bad"
