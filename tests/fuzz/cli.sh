#!/bin/sh
# What fuzzing found, as the command line shows it: each case runs the
# thermap program on an input that once crashed, hung or was accepted
# when it should not have been, and checks the exit code, the one error
# line and that no output file was left. THERMAP names the binary.
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "fuzz cli"

# t NAME RC STDERR -- ARGS...: exit code and the exact stderr; a case that
# runs past 60 s has hung
t() {
	name=$1 rc=$2 err=$3
	shift 4
	timeout 60 "$T" "$@" >"$W/out" 2>"$W/err" </dev/null
	got=$?
	if [ "$got" != "$rc" ]; then
		bad "$name: exit $got, expected $rc; stderr: $(cat "$W/err")"
		return
	fi
	if [ "$(cat "$W/err")" != "$err" ]; then
		bad "$name: stderr was: $(cat "$W/err")
        expected: $err"
		return
	fi
	ok
}

# none NAME FILE: a refused input leaves no output
none() {
	if [ -e "$2" ]; then bad "$1: $2 was written"; else ok; fi
}

csv() {  # a one-GPU nvidia-smi log with one row of the given values
	printf 'timestamp, index, temperature.gpu, power.draw [W], '
	printf 'enforced.power.limit [W], clocks.sm [MHz], utilization.gpu [%%]\n'
	printf '2026/11/21 12:15:28.037, 0, %s, %s, %s, %s, %s\n' "$@"
}

# ---- profile: inputs that block ---------------------------------------------
# a FIFO as input waited forever for a writer; the JSON and topology
# readers refused non-regular files already
mkfifo "$W/fifo"
t fifo 4 "thermap: error: $W/fifo: not a regular file (a FIFO or device could block or never end; give it as - on standard input)" -- profile --host h "$W/fifo" -o "$W/p.json"
none fifo-output "$W/p.json"
t device 4 "thermap: error: /dev/zero: not a regular file (a FIFO or device could block or never end; give it as - on standard input)" -- profile --host h /dev/zero -o "$W/p.json"
# standard input stays allowed
csv 40 100 700 1980 100 >"$W/one.csv"
timeout 60 "$T" profile --host h - -o "$W/p.json" <"$W/one.csv" >"$W/out" 2>"$W/err"
if [ $? = 0 ] && [ -s "$W/p.json" ]; then ok; else bad "stdin: $(cat "$W/err")"; fi
rm -f "$W/p.json"

# ---- profile: physically absurd values ---------------------------------------
# 1e308 °C was written as a 309-digit temp_max_c, and a 0 W limit accepted
csv 1e308 100 700 1980 100 >"$W/hot.csv"
t temp-1e308 4 "thermap: error: $W/hot.csv:2: temperature 1e+308 °C is out of range; expected -50 to 200 °C" -- profile --host h "$W/hot.csv" -o "$W/p.json"
none temp-1e308-output "$W/p.json"
csv -60 100 700 1980 100 >"$W/cold.csv"
t temp-cold 4 "thermap: error: $W/cold.csv:2: temperature -60 °C is out of range; expected -50 to 200 °C" -- profile --host h "$W/cold.csv" -o "$W/p.json"
csv 40 100 0 1980 100 >"$W/lim0.csv"
t power-limit-0 4 "thermap: error: $W/lim0.csv:2: power limit 0 W is out of range; expected more than 0 and at most 100000 W" -- profile --host h "$W/lim0.csv" -o "$W/p.json"
csv 40 150000 700 1980 100 >"$W/pw.csv"
t power-150kW 4 "thermap: error: $W/pw.csv:2: power 150000 W is out of range; expected 0 to 100000 W" -- profile --host h "$W/pw.csv" -o "$W/p.json"
csv 40 -5 700 1980 100 >"$W/neg.csv"
t power-negative 4 "thermap: error: $W/neg.csv:2: power -5 W is out of range; expected 0 to 100000 W" -- profile --host h "$W/neg.csv" -o "$W/p.json"
csv 40 100 700 200000 100 >"$W/clk.csv"
t clock-200GHz 4 "thermap: error: $W/clk.csv:2: SM clock 200000 MHz is out of range; expected 0 to 100000 MHz" -- profile --host h "$W/clk.csv" -o "$W/p.json"
csv 40 100 700 1980 250 >"$W/util.csv"
t util-250 4 "thermap: error: $W/util.csv:2: utilisation 250 % is out of range; expected 0 to 100 %" -- profile --host h "$W/util.csv" -o "$W/p.json"
none absurd-output "$W/p.json"
# a Prometheus scrape names the line too
printf 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0a1b",Hostname="h"} 40\nDCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0a1b",Hostname="h"} 1e9\n' >"$W/s.prom"
t prom-power 4 "thermap: error: $W/s.prom:1: power 1000000000 W is out of range; expected 0 to 100000 W" -- profile "$W/s.prom" -o "$W/p.json"
# and a query_range document the JSON path of the point
printf '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","Hostname":"h","gpu":"0"},"values":[[1700000000,"40"],[1.7e15,"41"]]}]}}\n' >"$W/q.json"
t qrange-time 4 "thermap: error: $W/q.json: data.result[0].values[1][0]: time 1700000000000000 s is out of range; expected seconds since 1970 from -1e+11 to 1e+11 (the years -1199 to 5138)" -- profile "$W/q.json" -o "$W/p.json"

# ---- profile: identities -----------------------------------------------------
# one distinct GPU per row grew memory without bound (1M GPUs: 2.6 GB and
# a 614 MB profile above the loaders' 256 MiB)
awk 'BEGIN { print "timestamp, uuid, temperature.gpu, utilization.gpu [%]";
	for (i = 0; i <= 131072; i++)
		printf "2026/11/21 12:15:28.037, GPU-%08x, 40, 100 %%\n", i }' \
	>"$W/many.csv"
t gpu-cap 4 "thermap: error: $W/many.csv:131074: more than 131072 distinct GPUs; one run profiles at most 131072 (memory grows with every GPU, and the profile it writes must stay loadable): profile the hosts in parts" -- profile --host h "$W/many.csv" -o "$W/p.json"
none gpu-cap-output "$W/p.json"
# a UUID column of any text went into the profile, which no command loads
printf 'timestamp, uuid, temperature.gpu, utilization.gpu [%%]\n2026/11/21 12:15:28.037, GPU-0000IIII, 40, 100 %%\n' >"$W/uuid.csv"
t csv-uuid 4 "thermap: error: $W/uuid.csv:2: GPU UUID \"GPU-0000IIII\": expected \"GPU-\" or \"MIG-\" and hex digits" -- profile --host h "$W/uuid.csv" -o "$W/p.json"
# a dmon gpu of 5e34 was cast to int (undefined behaviour)
printf '#Date       Time        gpu    pwr  gtemp     sm   pclk\n#YYYYMMDD   HH:MM:SS    Idx      W      C      %%    MHz\n 20240104   13:54:35   5e34     60     40    100   1980\n' >"$W/d.txt"
t dmon-gpu 4 "thermap: error: $W/d.txt:3: gpu: expected an index from 0 to 65535, found \"5e34\"" -- profile --host h "$W/d.txt" -o "$W/p.json"

# a bus id with a sign became the bus ffffffffffffffff; a row naming no
# GPU gave an entry without identity; clocks 4000 times apart a derate of
# 3960: each written, then refused by every command that read the profile
t csv-pci-sign 4 "thermap: error: tests/fuzz/regress/tele_csv/pci-bus-with-sign:2: PCI bus id \"0000:-1:00.0\": expected DDDDDDDD:BB:DD.F" -- profile --host h tests/fuzz/regress/tele_csv/pci-bus-with-sign -o "$W/p.json"
printf 'timestamp, index, pci.bus_id, temperature.gpu\n2026/11/21 12:15:28.037, , [N/A], 40\n' >"$W/noid.csv"
t csv-no-gpu 4 "thermap: error: $W/noid.csv:2: the sample names no GPU: its index, PCI bus id and UUID are all missing" -- profile --host h "$W/noid.csv" -o "$W/p.json"
t derate-3960 4 "thermap: error: tests/fuzz/regress/tele_csv/derate-beyond-100: GPU h GPU-00000001: its mean full-load SM clock, 0.5 MHz, is 3.96e+03 times below GPU h GPU-00000000's (1980 MHz), beyond a derate of 100 with its uncertainty: GPUs of different models, or clocks not in MHz?" -- profile --host h tests/fuzz/regress/tele_csv/derate-beyond-100 -o "$W/p.json"
none csv-output "$W/p.json"

# ---- topo ----------------------------------------------------------------------
# two <nvlink count=64> to one peer were written as NV128
t nccl-nv128 4 "thermap: error: tests/fuzz/regress/topo_nccl/nvlink-count-over-64: GPU 0 and GPU 1 are joined by 128 NVLinks; expected 1 to 64 (NV1 ... NV64)" -- topo --host a --nccl tests/fuzz/regress/topo_nccl/nvlink-count-over-64 -o "$W/c.json"
none nccl-nv128-output "$W/c.json"
# one renamed attribute crashed libhwloc (SIGSEGV in hwloc_topology_load)
sed 's/complete_cpuset/complete_cpucet/' \
	fixtures/topo/hwloc-xml/mpibind-g4dnmetal.xml >"$W/g4dn.xml"
timeout 120 "$T" topo --host a --hwloc "$W/g4dn.xml" -o "$W/c.json" \
	>"$W/out" 2>"$W/err"
rc=$?
if [ $rc = 4 ] && [ "$(wc -l <"$W/err")" = 1 ] &&
   grep -q "^thermap: error: $W/g4dn.xml: libhwloc crashed reading it (.*): malformed hwloc XML\$" "$W/err"; then
	ok
else
	bad "hwloc-crash: exit $rc: $(cat "$W/err")"
fi
none hwloc-crash-output "$W/c.json"
# two GPUs sharing a UUID gave a cluster every later command rejected
sed 's/GPU-c6f92517-d6ad-e039-6cbf-fc1d05507a3c/GPU-04732404-7fc3-5ae6-cddd-c879b3a379bb/' \
	fixtures/topo/hwloc-xml/mpibind-coral-lassen.xml >"$W/lassen.xml"
t hwloc-dup-uuid 4 "thermap: error: $W/lassen.xml: GPU 0 and GPU 1 have the same UUID GPU-04732404-7fc3-5ae6-cddd-c879b3a379bb; a UUID names one GPU" -- topo --host a --hwloc "$W/lassen.xml" -o "$W/c.json"
none hwloc-dup-uuid-output "$W/c.json"

# its own summary line, not finish's: the count alone when none failed
if [ $fail -ne 0 ]; then
	printf 'fuzz cli: %d passed, %d FAILED\n' "$pass" "$fail"
	exit 1
fi
printf 'fuzz cli: %d passed\n' "$pass"
