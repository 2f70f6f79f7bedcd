#!/bin/sh
# thermap topo --local on a machine with NVIDIA GPUs, through NVML and
# through nvidia-smi, held against nvidia-smi's own topo -m, one command:
#
#   sh examples/topo/real-topo.sh OUTDIR
#
# Writes machine.txt (time, host, nvidia-smi -L), driver.txt (driver and
# CUDA versions, product name), topo-m.txt, gpus.csv and nvlink-s.txt
# (nvidia-smi topo -m, its GPU list, nvlink -s), nvml.json/nvml.err (topo --local,
# NVML loaded), smi.json/smi.err (the same with THERMAP_NO_NVML=1: NVML
# left unloaded, nvidia-smi asked), from-smi.json/from-smi.err (the
# cluster from topo-m.txt and gpus.csv as files), and result.txt: whether
# the three clusters are the same, byte for byte. THERMAP names the
# thermap program (default build/thermap). Reads only; changes no GPU
# setting.
set -eu
OUT=${1:?usage: real-topo.sh OUTDIR}
T=${THERMAP:-build/thermap}
mkdir -p "$OUT"
HOST=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
{ date -u; hostname; nvidia-smi -L; } >"$OUT/machine.txt"
nvidia-smi topo -m >"$OUT/topo-m.txt"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total \
	--format=csv >"$OUT/gpus.csv"
nvidia-smi nvlink -s >"$OUT/nvlink-s.txt" 2>&1 || :
nvidia-smi -q | grep -iE "driver version|cuda version|product name" |
	sort -u >"$OUT/driver.txt"
rc=0
"$T" topo --host "$HOST" --local -o "$OUT/nvml.json" 2>"$OUT/nvml.err" || rc=$?
echo "topo --local (NVML): exit $rc" >"$OUT/result.txt"
rc=0
THERMAP_NO_NVML=1 "$T" topo --host "$HOST" --local -o "$OUT/smi.json" \
	2>"$OUT/smi.err" || rc=$?
echo "topo --local (nvidia-smi): exit $rc" >>"$OUT/result.txt"
rc=0
"$T" topo --host "$HOST" --smi-topo "$OUT/topo-m.txt" --gpus "$OUT/gpus.csv" \
	-o "$OUT/from-smi.json" 2>"$OUT/from-smi.err" || rc=$?
echo "topo --smi-topo --gpus: exit $rc" >>"$OUT/result.txt"
for f in smi.json from-smi.json; do
	if cmp -s "$OUT/nvml.json" "$OUT/$f"; then
		echo "nvml.json and $f: the same" >>"$OUT/result.txt"
	else
		echo "nvml.json and $f differ:" >>"$OUT/result.txt"
		diff "$OUT/nvml.json" "$OUT/$f" >>"$OUT/result.txt" || :
	fi
done
cat "$OUT/result.txt"
