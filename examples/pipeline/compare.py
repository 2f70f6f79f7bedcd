#!/usr/bin/env python3
"""Compare the two runs of real-run.sh: what ran, what was predicted.

usage: compare.py OUTDIR

Reads, in OUTDIR, each run's logs (rank*.jsonl of train.py), its telemetry
(nvidia-smi --query-gpu CSV) and the plans, and prints a markdown report:
step time (median and spread), per GPU the stage, the measured mean
temperature and power and the prediction with its error (predicted -
measured), and the peak (the hottest GPU's mean, and the hottest sample).
Standard library only.

Two layouts:

  real-run.sh now     logs-identity/, telemetry-identity.csv; the second
                      run logs-second/, telemetry-second.csv, launched from
                      the plan that second-run.txt names (plan or
                      plan-coolest); plan-identity-measured/
  before (fixtures/real/h200x4-vm)
                      logs-identity/, telemetry-identity.csv; logs-thermal/,
                      telemetry-thermal.csv, launched from plan/;
                      plan-identity-measured/

The second run's prediction is its plan's (ranks[].predicted_temp_c and
power_w), made before it ran: a held-out prediction. The identity run's is
plan-identity-measured's, the identity placement planned after that run
with its measured job (and, in real-run.sh now, the profile calibrated on
it): a fit, not a held-out prediction.

"Settled": from 30 s after the job's load began to its end. When the logs
have wall-clock times (train.py's t and t_end), that is from the first
iteration's start (any rank) + 30 s to the last iteration's end, the same
window for every GPU of the run; otherwise, per GPU, from 30 s after its
first telemetry row with utilisation >= 10 % to its last such row.
Telemetry times are read as UTC (real-run.sh records with TZ=UTC).
"""
import calendar
import csv
import glob
import json
import os
import statistics
import sys
import time

SETTLE_S = 30.0
GOAL_C = 2.0  # the project's goal for a held-out prediction, per GPU


def warn(msg):
    print("compare.py: %s" % msg, file=sys.stderr)


def load_json(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as e:
        warn("%s: %s" % (path, e))
        return None


def read_logs(d):
    """{rank: (start record, [iter records, all], [measured iters])}"""
    ranks = {}
    for f in sorted(glob.glob(os.path.join(d, "rank*.jsonl"))):
        start, its = None, []
        with open(f) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    o = json.loads(line)
                except ValueError:
                    continue  # a line cut by a killed rank
                if o.get("kind") == "start":
                    start = o
                elif o.get("kind") == "iter":
                    its.append(o)
        if start is None or not isinstance(start.get("rank"), int):
            warn("%s: no start record" % f)
            continue
        ranks[start["rank"]] = (start, its,
                                [i for i in its if not i.get("warmup")])
    return ranks


def num(s):
    s = s.strip().split(" ")[0]
    try:
        return float(s)
    except ValueError:
        return None


def unix(ts):
    """nvidia-smi's 2026/11/21 14:09:08.822, as UTC, in seconds"""
    ts = ts.strip()
    base, _, frac = ts.partition(".")
    try:
        t = calendar.timegm(time.strptime(base, "%Y/%m/%d %H:%M:%S"))
    except ValueError:
        return None
    try:
        return t + (float("0." + frac) if frac else 0.0)
    except ValueError:
        return None


def read_telemetry(path):
    """{key: [(t, temp, power, util)]}, key the UUID, else "index N"."""
    out = {}
    try:
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    except OSError as e:
        warn("%s: %s" % (path, e.strerror or e))
        return None
    head, col = None, {}
    for r in rows:
        if r and r[0].strip() == "timestamp":  # a header, maybe repeated
            head = [h.strip().split(" [")[0] for h in r]
            col = {h: i for i, h in enumerate(head)}
            continue
        if head is None or len(r) != len(head) or "timestamp" not in col:
            continue  # a row cut by the killed logger
        t = unix(r[col["timestamp"]])
        if t is None:
            continue

        def get(name):
            return num(r[col[name]]) if name in col else None
        if "uuid" in col:
            key = r[col["uuid"]].strip()
        elif "index" in col:
            key = "index " + r[col["index"]].strip()
        else:
            key = "index 0"
        out.setdefault(key, []).append(
            (t, get("temperature.gpu"), get("power.draw"),
             get("utilization.gpu")))
    return out


def pct(xs, q):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(q * (len(xs) - 1)))))
    return xs[k]


def f1(x, fmt="%.1f"):
    return "n/a" if x is None else fmt % x


def signed(x):
    return "n/a" if x is None else "%+.1f" % x


def job_window(logs):
    """(load began, end) on the wall clock, or None without times."""
    its = [i for _, all_its, _ in logs.values() for i in all_its]
    if not its or not all(isinstance(i.get("t"), (int, float)) and
                          isinstance(i.get("t_end"), (int, float))
                          for i in its):
        return None
    return min(i["t"] for i in its), max(i["t_end"] for i in its)


def settled(series, window):
    if window is not None:
        lo, hi = window[0] + SETTLE_S, window[1]
        return [s for s in series if lo <= s[0] <= hi]
    busy = [s for s in series if s[3] is not None and s[3] >= 10]
    if not busy:
        return []
    t0, t1 = busy[0][0], busy[-1][0]
    return [s for s in series if s[0] - t0 >= SETTLE_S and s[0] <= t1]


def read_foreign(d):
    """(nvidia-smi index or None, text) from foreign.txt"""
    path = os.path.join(d, "foreign.txt")
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError:
        return None, None
    gpu = None
    for line in text.splitlines():
        if line.startswith("gpu:"):
            try:
                gpu = int(line.split(":", 1)[1])
            except ValueError:
                pass
    return gpu, text


def main(argv):
    if len(argv) != 2:
        print("usage: compare.py OUTDIR", file=sys.stderr)
        return 2
    d = argv[1]
    if not os.path.isdir(d):
        warn("%s: not a directory" % d)
        return 1
    if os.path.isdir(os.path.join(d, "logs-second")) or os.path.exists(
            os.path.join(d, "second-run.txt")):
        second = "plan"
        try:
            with open(os.path.join(d, "second-run.txt")) as fh:
                second = fh.read().strip() or "none"
        except OSError:
            pass
        runs = [("identity", "logs-identity", "telemetry-identity.csv",
                 "plan-identity-measured", False),
                ("second (%s)" % second, "logs-second",
                 "telemetry-second.csv", second, True)]
    else:  # the layout of fixtures/real/h200x4-vm
        runs = [("identity", "logs-identity", "telemetry-identity.csv",
                 "plan-identity-measured", False),
                ("thermal", "logs-thermal", "telemetry-thermal.csv", "plan",
                 True)]
    foreign_gpu, foreign_text = read_foreign(d)

    data = []
    for name, logdir, tel, plandir, held_out in runs:
        logs = read_logs(os.path.join(d, logdir))
        if not logs:
            data.append((name, None))
            continue
        plan = load_json(os.path.join(d, plandir, "plan.json"))
        data.append((name, {
            "logs": logs, "tel": read_telemetry(os.path.join(d, tel)),
            "tel_name": tel, "plan": plan, "plandir": plandir,
            "held_out": held_out, "window": job_window(logs)}))
    if all(x is None for _, x in data):
        warn("%s: no run's logs (logs-identity/, logs-second/ or "
             "logs-thermal/)" % d)
        return 1

    print("# The runs of %s\n" % os.path.basename(os.path.abspath(d)))
    for name, r in data:
        if r is None:
            print("- %s: no logs (the run did not happen or failed before "
                  "logging)" % name)
            continue
        when = ("made before it ran (held out)" if r["held_out"] else
                "made after it ran, with its measured job (not held out)")
        print("- %s: predictions from %s/plan.json, %s%s" % (
            name, r["plandir"], when,
            "" if r["plan"] is not None else "; **that plan is missing**"))
        w = r["window"]
        if w is not None and w[1] - w[0] <= SETTLE_S:
            print("  - settled window: none (the job's iterations ran %.0f s)"
                  % (w[1] - w[0]))
        elif w is not None:
            print("  - settled window: %s to %s UTC (%.0f s; the job's "
                  "iterations ran %.0f s)" % (
                      time.strftime("%H:%M:%S", time.gmtime(w[0] + SETTLE_S)),
                      time.strftime("%H:%M:%S", time.gmtime(w[1])),
                      max(0.0, w[1] - w[0] - SETTLE_S), w[1] - w[0]))
        else:
            print("  - settled window: per GPU, from its utilisation (the "
                  "logs have no wall-clock times)")
    dec = load_json(os.path.join(d, "plan", "plan.json")) if os.path.exists(
        os.path.join(d, "plan", "plan.json")) else None
    if dec and isinstance(dec.get("decision"), dict):
        print("- plan/: verdict %s: %s" % (dec["decision"].get("verdict"),
                                           dec["decision"].get("reason", "")))
    if foreign_text:
        print("- foreign load: %s" % "; ".join(
            foreign_text.strip().splitlines()))

    print("\n## Step time (rank 0, after warm-up)\n")
    print("| run | iterations | median ms | p10–p90 ms | predicted ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in data:
        if r is None:
            continue
        steps = [i["step_ms"] for i in r["logs"].get(0, (None, [], []))[2]
                 if isinstance(i.get("step_ms"), (int, float))]
        pred = ((r["plan"] or {}).get("predicted") or {}).get("iteration_ms")
        if steps:
            print("| %s | %d | %.1f | %.1f–%.1f | %s |" % (
                name, len(steps), statistics.median(steps), pct(steps, 0.1),
                pct(steps, 0.9), f1(pred)))
        else:
            print("| %s | 0 | n/a | n/a | %s |" % (name, f1(pred)))

    print("\n## GPUs, settled (error = predicted − measured)\n")
    print("| run | rank | stage | GPU | placed as planned | samples | "
          "mean °C | max °C | mean W | predicted °C | error °C | "
          "predicted W | error W |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- | --- |")
    summary = []
    for name, r in data:
        if r is None:
            continue
        pr = {x.get("rank"): x for x in (r["plan"] or {}).get("ranks") or []
              if isinstance(x, dict)}
        tel = r["tel"] or {}
        rows = []
        for rank in sorted(r["logs"]):
            st = r["logs"][rank][0]
            u = st.get("gpu_uuid")
            p = pr.get(rank, {})
            idx = p.get("gpu_index")
            series = tel.get(u)
            if series is None and idx is not None:
                series = tel.get("index %s" % idx)
            load = settled(series or [], r["window"])
            temps = [s[1] for s in load if s[1] is not None]
            pows = [s[2] for s in load if s[2] is not None]
            mt = statistics.mean(temps) if temps else None
            mx = max(temps) if temps else None
            mw = statistics.mean(pows) if pows else None
            want = p.get("uuid")
            ok = ("yes" if want is None or u is None or
                  want.lower() == u.lower() else "**NO** (plan: %s)" % want)
            pt, pw = p.get("predicted_temp_c"), p.get("power_w")
            et = pt - mt if pt is not None and mt is not None else None
            ew = pw - mw if pw is not None and mw is not None else None
            gpu = "%s" % idx if idx is not None else (u or "?")
            if foreign_gpu is not None and idx == foreign_gpu:
                gpu += " (+ foreign load)"
            print("| %s | %d | %s | %s | %s | %d | %s | %s | %s | %s | %s | "
                  "%s | %s |" % (
                      name, rank, st.get("stage"), gpu, ok, len(load), f1(mt),
                      f1(mx, "%.0f"), f1(mw, "%.0f"), f1(pt), signed(et),
                      f1(pw, "%.0f"), f1(ew, "%+.0f")))
            rows.append((gpu, mt, mx, pt, et))
        summary.append((name, r, rows))

    print("\n## Peak and errors\n")
    print("| run | hottest GPU, mean °C | hottest sample °C | predicted "
          "peak °C | error °C | GPUs within %.0f °C | mean abs. error °C | "
          "largest error °C |" % GOAL_C)
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r, rows in summary:
        means = [(mt, g) for g, mt, _, _, _ in rows if mt is not None]
        maxes = [(mx, g) for g, _, mx, _, _ in rows if mx is not None]
        errs = [(et, g) for g, _, _, _, et in rows if et is not None]
        peak_pred = ((r["plan"] or {}).get("predicted") or {}).get(
            "peak_temp_c")
        hot = max(means) if means else None
        hs = max(maxes) if maxes else None
        big = max(errs, key=lambda x: abs(x[0])) if errs else None
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name,
            "%.1f (GPU %s)" % hot if hot else "n/a",
            "%.0f (GPU %s)" % hs if hs else "n/a",
            f1(peak_pred),
            signed(peak_pred - hot[0]) if hot and peak_pred is not None
            else "n/a",
            "%d of %d" % (sum(abs(e) <= GOAL_C for e, _ in errs), len(errs))
            if errs else "n/a",
            "%.2f" % statistics.mean(abs(e) for e, _ in errs) if errs
            else "n/a",
            "%+.1f (GPU %s)" % big if big else "n/a"))
    held = [(name, rows) for name, r, rows in summary if r["held_out"]]
    for name, rows in held:
        errs = [(et, g) for g, _, _, _, et in rows if et is not None]
        miss = [(e, g) for e, g in errs if abs(e) > GOAL_C]
        if not errs:
            print("\n%s: no held-out comparison (no prediction or no "
                  "settled samples)." % name)
        elif miss:
            print("\n%s (held out): %d of %d GPUs missed by more than "
                  "%.0f °C: %s." % (name, len(miss), len(errs), GOAL_C,
                                    ", ".join("GPU %s %+.1f °C" % (g, e)
                                              for e, g in miss)))
        else:
            print("\n%s (held out): every GPU within %.0f °C (largest "
                  "%+.1f °C)." % (name, GOAL_C,
                                  max((e for e, _ in errs), key=abs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
