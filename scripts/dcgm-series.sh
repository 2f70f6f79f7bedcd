#!/bin/sh
# scripts/dcgm-series.sh — DCGM series for a real Prometheus server, made
# from recordings, for tests/profile/prometheus.sh and
# scripts/bench-prom.sh (POSIX sh and awk).
#
#   dcgm-series.sh h200 CSV T0_MS STEP_MS HOSTS
#	An nvidia-smi --query-gpu log in the layout of
#	fixtures/h200x4-a/telemetry.csv as dcgm-exporter would have
#	published it, on HOSTS hosts (h200-01, h200-02, ...): sample k of
#	each GPU at T0_MS + k * STEP_MS, every GPU cut to the fewest samples
#	any has (a GPU's series must not end before the others', or a query
#	fills its last points from Prometheus's 5-minute lookback). Host n
#	reads 0.5·(n-1) °C and 3·(n-1) W above the recording, so that hosts
#	differ. The metrics: GPU_TEMP, POWER_USAGE, POWER_MGMT_LIMIT,
#	SM_CLOCK, MAX_SM_CLOCK, GPU_UTIL, GPU_TEMP_LIMIT and the reasons
#	under their deprecated name CLOCK_THROTTLE_REASONS (as dcgm-exporter
#	before 3.3 published them). Prometheus text, one scrape after another,
#	timestamps in milliseconds: what `thermap profile` reads as a file.
#   dcgm-series.sh stamp T_MS
#	standard input, one scrape, with every sample stamped T_MS.
#   dcgm-series.sh synth FIRST LAST T0_MS STEP_MS POINTS
#	hosts FIRST to LAST (host-000001 ...) of 8 GPUs, POINTS samples each
#	of GPU_TEMP, POWER_USAGE, SM_CLOCK and GPU_UTIL, a load step half way
#	(for scripts/bench-prom.sh: many hosts, quickly).
#   dcgm-series.sh openmetrics
#	Prometheus text with millisecond timestamps on standard input as
#	OpenMetrics (seconds, "# EOF"), for promtool tsdb
#	create-blocks-from openmetrics.
set -eu

case ${1:-} in
h200)
	awk -F', *' -v t0="$3" -v step="$4" -v hosts="$5" '
	function hex(s,   v, i, c) {
		v = 0
		s = tolower(s)
		sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++) {
			c = index("0123456789abcdef", substr(s, i, 1)) - 1
			v = v * 16 + c
		}
		return v
	}
	NR > 1 && NF >= 17 {
		g = $2
		k = n[g]++
		temp[g, k] = $4; pw[g, k] = $6; lim[g, k] = $7; sm[g, k] = $8
		smx[g, k] = $10; ut[g, k] = $11; rs[g, k] = hex($12)
		tl[g, k] = $17; pci[g] = $3
		if (!(g in seen)) { seen[g] = 1; gpus[ng++] = g }
	}
	END {
		m = -1
		for (i = 0; i < ng; i++)
			if (m < 0 || n[gpus[i]] < m)
				m = n[gpus[i]]
		for (k = 0; k < m; k++) {
			t = t0 + k * step
			for (h = 1; h <= hosts; h++)
				for (i = 0; i < ng; i++) {
					g = gpus[i]
					l = sprintf("{gpu=\"%s\",UUID=\"GPU-%08d-0000-4000-8000-%012d\",pci_bus_id=\"%s\",device=\"nvidia%s\",modelName=\"NVIDIA H200\",Hostname=\"h200-%02d\",job=\"dcgm\"}", g, h, g, pci[g], g, h)
					printf "DCGM_FI_DEV_GPU_TEMP%s %s %.0f\n", l, temp[g, k] + (h - 1) * 0.5, t
					printf "DCGM_FI_DEV_POWER_USAGE%s %s %.0f\n", l, pw[g, k] + (h - 1) * 3, t
					printf "DCGM_FI_DEV_POWER_MGMT_LIMIT%s %s %.0f\n", l, lim[g, k], t
					printf "DCGM_FI_DEV_SM_CLOCK%s %s %.0f\n", l, sm[g, k], t
					printf "DCGM_FI_DEV_MAX_SM_CLOCK%s %s %.0f\n", l, smx[g, k], t
					printf "DCGM_FI_DEV_GPU_UTIL%s %s %.0f\n", l, ut[g, k], t
					printf "DCGM_FI_DEV_GPU_TEMP_LIMIT%s %s %.0f\n", l, tl[g, k], t
					printf "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS%s %d %.0f\n", l, rs[g, k], t
				}
		}
	}' "$2"
	;;
stamp)
	awk -v t="$2" '/^#/ || NF == 0 { print; next } { print $0 " " t }'
	;;
synth)
	awk -v first="$2" -v last="$3" -v t0="$4" -v step="$5" -v np="$6" '
	BEGIN {
		for (k = 0; k < np; k++) {
			t = t0 + k * step
			busy = k >= np / 2
			for (h = first; h <= last; h++)
				for (g = 0; g < 8; g++) {
					l = sprintf("{gpu=\"%d\",UUID=\"GPU-%08d-0000-4000-8000-%012d\",Hostname=\"host-%06d\"}", g, h, g, h)
					d = (h * 7 + g * 3) % 11
					printf "DCGM_FI_DEV_GPU_TEMP%s %d %.0f\n", l, busy ? 60 + d : 35 + d / 2, t
					printf "DCGM_FI_DEV_POWER_USAGE%s %d %.0f\n", l, busy ? 680 + d : 75 + d, t
					printf "DCGM_FI_DEV_SM_CLOCK%s %d %.0f\n", l, busy ? 1980 - 10 * d : 345, t
					printf "DCGM_FI_DEV_GPU_UTIL%s %d %.0f\n", l, busy ? 100 : 0, t
				}
		}
	}'
	;;
openmetrics)
	awk '/^#/ || NF == 0 { next }
	{
		match($0, /[0-9]+$/)
		ms = substr($0, RSTART) + 0
		printf "%s%.0f.%03d\n", substr($0, 1, RSTART - 1), (ms - ms % 1000) / 1000, ms % 1000
	}
	END { print "# EOF" }'
	;;
*)
	echo "usage: dcgm-series.sh h200 CSV T0_MS STEP_MS HOSTS | stamp T_MS | synth FIRST LAST T0_MS STEP_MS POINTS | openmetrics" >&2
	exit 2
	;;
esac
