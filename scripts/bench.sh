#!/bin/sh
# make bench: builds and runs the solver benchmark (a report, not a test).
set -eu
make --no-print-directory build/bench >/dev/null
./build/bench
