#!/bin/sh
# Installs the Debian packages thermap builds with, when any is missing.
# As root it runs apt-get; otherwise it names the command to run.
set -u
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "thermap: installing:$missing"
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
else
	echo "thermap: missing packages:$missing" >&2
	echo "thermap: run as root, or: sudo apt-get install -y$missing" >&2
	exit 1
fi
