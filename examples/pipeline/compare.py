#!/usr/bin/env python3
"""Compare the identity run and the thermap run of real-run.sh.

usage: compare.py OUTDIR

Reads OUTDIR/logs-identity and logs-thermal (rank*.jsonl of train.py), the
telemetry of each run (telemetry-identity.csv, telemetry-thermal.csv), and
the plans (plan-identity-measured/plan.json: the identity placement of the
measured job; plan/plan.json: thermap's). Prints a markdown report: step
time (median and spread), per-GPU temperature and power under load, peak
temperature, and what each plan predicted. Standard library only.

"Under load" = the rows of a run's telemetry from 30 s after its first
row with utilisation >= 10 % to its last such row (the warm-up and the
cool-down are left out); temperature and power are means over those rows,
and the peak is their maximum.
"""
import csv
import datetime
import glob
import json
import os
import statistics
import sys

SETTLE_S = 30.0


def die(msg):
    print("compare.py: %s" % msg, file=sys.stderr)
    sys.exit(1)


def read_logs(d):
    ranks = {}
    for f in sorted(glob.glob(os.path.join(d, "rank*.jsonl"))):
        start, iters = None, []
        with open(f) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                o = json.loads(line)
                if o.get("kind") == "start":
                    start = o
                elif o.get("kind") == "iter" and not o.get("warmup"):
                    iters.append(o)
        if start is None:
            die("%s: no start record" % f)
        ranks[start["rank"]] = (start, iters)
    if not ranks:
        die("%s: no rank*.jsonl" % d)
    return ranks


def num(s):
    s = s.strip().split(" ")[0]
    try:
        return float(s)
    except ValueError:
        return None


def read_telemetry(path):
    """{uuid: [(t, temp, power, util)]}"""
    out = {}
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        die("%s: empty" % path)
    head = [h.strip().split(" [")[0] for h in rows[0]]
    col = {h: i for i, h in enumerate(head)}
    for r in rows[1:]:
        if len(r) != len(head):
            continue  # a row cut by the killed logger
        try:
            t = datetime.datetime.strptime(r[col["timestamp"]].strip(),
                                           "%Y/%m/%d %H:%M:%S.%f")
        except ValueError:
            continue
        u = r[col["uuid"]].strip()
        out.setdefault(u, []).append((t, num(r[col["temperature.gpu"]]),
                                      num(r[col["power.draw"]]),
                                      num(r[col["utilization.gpu"]])))
    return out


def under_load(series):
    busy = [s for s in series if s[3] is not None and s[3] >= 10]
    if not busy:
        return []
    t0, t1 = busy[0][0], busy[-1][0]
    return [s for s in series
            if (s[0] - t0).total_seconds() >= SETTLE_S and s[0] <= t1]


def pct(xs, q):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(q * (len(xs) - 1)))))
    return xs[k]


def main(argv):
    if len(argv) != 2:
        die("usage: compare.py OUTDIR")
    d = argv[1]
    runs = {}
    for name in ("identity", "thermal"):
        logs = read_logs(os.path.join(d, "logs-" + name))
        tel = read_telemetry(os.path.join(d, "telemetry-%s.csv" % name))
        steps = [it["step_ms"] for it in logs[0][1]]
        if not steps:
            die("logs-%s: no measured iterations" % name)
        runs[name] = (logs, tel, steps)
    plan_t = json.load(open(os.path.join(d, "plan", "plan.json")))
    plan_i = json.load(open(os.path.join(d, "plan-identity-measured",
                                         "plan.json")))
    pred = {"identity": plan_i, "thermal": plan_t}

    print("## Step time (rank 0, after warm-up)\n")
    print("| run | iterations | median ms | p10–p90 ms | predicted ms |")
    print("| --- | --- | --- | --- | --- |")
    for name in ("identity", "thermal"):
        steps = runs[name][2]
        print("| %s | %d | %.1f | %.1f–%.1f | %.1f |" % (
            name, len(steps), statistics.median(steps), pct(steps, 0.1),
            pct(steps, 0.9), pred[name]["predicted"]["iteration_ms"]))

    print("\n## GPUs under load\n")
    print("| run | rank | stage | GPU (UUID) | placed as planned | mean °C "
          "| peak °C | predicted °C | mean W |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    peaks = {}
    for name in ("identity", "thermal"):
        logs, tel, _ = runs[name]
        pr = {r["rank"]: r for r in pred[name]["ranks"]}
        peak = None
        for rank in sorted(logs):
            st = logs[rank][0]
            u = st["gpu_uuid"]
            load = under_load(tel.get(u, []))
            temps = [s[1] for s in load if s[1] is not None]
            pows = [s[2] for s in load if s[2] is not None]
            want = pr.get(rank, {}).get("uuid")
            ok = "yes" if want in (None, u) else "NO (plan: %s)" % want
            mt = statistics.mean(temps) if temps else float("nan")
            pk = max(temps) if temps else float("nan")
            if temps and (peak is None or pk > peak):
                peak = pk
            print("| %s | %d | %d | %s | %s | %.1f | %.0f | %.1f | %.0f |" % (
                name, rank, st["stage"], u, ok, mt, pk,
                pr.get(rank, {}).get("predicted_temp_c", float("nan")),
                statistics.mean(pows) if pows else float("nan")))
        peaks[name] = peak
    print("\n## Peak temperature\n")
    print("| run | measured peak °C | predicted peak °C |")
    print("| --- | --- | --- |")
    for name in ("identity", "thermal"):
        print("| %s | %s | %.1f |" % (
            name, "%.0f" % peaks[name] if peaks[name] is not None else "n/a",
            pred[name]["predicted"]["peak_temp_c"]))


if __name__ == "__main__":
    main(sys.argv)
