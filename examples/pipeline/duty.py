#!/usr/bin/env python3
"""Load one GPU in timed phases, for recordings that test thermap's model.

usage: duty.py --phases burn:90,rest:30,duty0.7:90,rest:30,duty0.4:90
               [--period 1.0] [--size 8192] [-o PHASES.jsonl]

Each phase runs for its seconds on the GPU that CUDA_VISIBLE_DEVICES names:

  burn      back-to-back bf16 SIZE x SIZE matrix products (a uniform load)
  dutyD     the same products for D of every PERIOD seconds, then idle (the
            process sleeps on the host) for the rest: a GPU busy a known
            share of the time, as a pipeline rank is
  spinD     the products for D of every PERIOD seconds, then a kernel that
            spins on the GPU for the rest (torch.cuda._sleep), as a rank
            that waits in a communication kernel does
  rest      nothing

It writes one JSON line per phase ({"phase", "start", "end"}, times in
seconds since 1970 UTC, and the share of the time the products really ran)
to -o (default: standard output), so that the telemetry can be cut into
the phases. The program changes no GPU setting.
"""
import argparse
import json
import sys
import time


def parse_phases(text):
    out = []
    for item in text.split(","):
        name, _, sec = item.partition(":")
        try:
            sec = float(sec)
        except ValueError:
            sec = -1
        if sec <= 0:
            raise SystemExit("duty.py: error: phase %r: expected NAME:SECONDS"
                             % item)
        kind, share = name, None
        for k in ("duty", "spin"):
            if name.startswith(k):
                kind = k
                try:
                    share = float(name[len(k):])
                except ValueError:
                    share = -1
                if not 0 < share < 1:
                    raise SystemExit("duty.py: error: phase %r: expected a "
                                     "share between 0 and 1 after %r"
                                     % (item, k))
        if kind not in ("burn", "duty", "spin", "rest"):
            raise SystemExit("duty.py: error: phase %r: expected burn, "
                             "dutyD, spinD or rest" % item)
        out.append((name, kind, share, sec))
    return out


def main():
    ap = argparse.ArgumentParser(prog="duty.py")
    ap.add_argument("--phases", required=True)
    ap.add_argument("--period", type=float, default=1.0)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("-o", dest="out", default="-")
    a = ap.parse_args()
    phases = parse_phases(a.phases)
    import torch
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    y = x @ x
    torch.cuda.synchronize()
    # cycles per second of the spinning kernel, measured once
    t = time.time()
    torch.cuda._sleep(10 ** 8)
    torch.cuda.synchronize()
    cyc_per_s = 10 ** 8 / max(time.time() - t, 1e-6)
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    for name, kind, share, sec in phases:
        start = time.time()
        busy = 0.0
        while time.time() - start < sec:
            p0 = time.time()
            on = a.period if kind == "burn" else (share or 0) * a.period
            if kind != "rest":
                while time.time() - p0 < on:
                    for _ in range(4):
                        y = x @ x
                    torch.cuda.synchronize()
                busy += time.time() - p0
            left = a.period - (time.time() - p0)
            if kind == "spin" and left > 0:
                torch.cuda._sleep(int(left * cyc_per_s))
                torch.cuda.synchronize()
            elif kind in ("duty", "rest") and left > 0:
                time.sleep(left)
        end = time.time()
        out.write(json.dumps({"phase": name, "start": round(start, 3),
                              "end": round(end, 3),
                              "busy_share": round(busy / (end - start), 4)})
                  + "\n")
        out.flush()
    del y


if __name__ == "__main__":
    main()
