#!/usr/bin/env python3
"""Write the constructed dcgmi dmon fixture to stdout.

Usage:
  python3 scripts/dcgmi-fixture.py > fixtures/telemetry/constructed/dcgmi-dmon_3gpu_constructed.log

No machine printed this file. It lays out invented readings of three GPUs
(an idle phase, then a load phase) the way NVIDIA/DCGM dcgmi/DeviceMonitor.cpp
prints `dcgmi dmon -e 150,155,160,100,110,112,203 -d 1000`, so that
thermap's dcgmi reader is tested against the printing code's layout:

  * header: "#Entity" left-aligned in 11 characters (firstFieldWidth), then
    each field's short name left-aligned in width + 6 + 2 (PADDING), the
    width and short name from dcgmlib/src/dcgm_fields.cpp: TMPTR 5,
    POWER 10, PMLMT 10, SMCLK 5, SMMAX 5, DVCCTR 20, GPUTL 10;
  * units line: "ID" the same way, then each field's unit (" C", " W");
  * rows: "GPU N" in 11 characters, each value in width + 8; doubles with
    3 decimals ("{:.3F}"), integers as integers, blanks as "N/A";
  * the header again after the 15th pass and then every 14 passes
    (MAX_PRINT_HEADER_COUNT 14, the count checked after each pass);
  * Ctrl-C: "\\n\\ndmon was stopped due to receiving a signal\\n".

Beyond the GPUs, each pass prints a "GPU-I 0" row (a MIG instance) with
"N/A" in every column, and GPU 1's temperature is N/A in one pass: both
exercise rules of the reader; whether DCGM prints them so was not checked.
Python 3 standard library only; the output depends on nothing else.
"""
import math
import sys

FIELDS = [("TMPTR", 5, " C"), ("POWER", 10, " W"), ("PMLMT", 10, " W"),
          ("SMCLK", 5, ""), ("SMMAX", 5, ""), ("DVCCTR", 20, ""),
          ("GPUTL", 10, "")]
FIRST = 11
PASSES = 80      # 30 idle, then 50 at load
IDLE = 30


def cells(entity, values):
    out = entity.ljust(FIRST)
    for (_, width, _), v in zip(FIELDS, values):
        out += v.ljust(width + 6 + 2)
    return out


def header():
    h = "#Entity".ljust(FIRST)
    u = "ID".ljust(FIRST)
    for name, width, unit in FIELDS:
        h += name.ljust(width + 6 + 2)
        u += unit.ljust(width + 6 + 2)
    return h + "\n" + u + "\n"


def gpu(g, k):
    """GPU g's values in pass k: idle, then a first-order rise to load."""
    hot = (0.0, 6.0, 2.0)[g]           # GPU 1 runs hottest
    if k < IDLE:
        t = 33 + hot / 3 + (k % 3 == 0) * 1
        p = 58.0 + 3 * g + (k % 4) * 0.25
        util, clk, mask = 0, 210, 1     # bit 0: GPU idle
    else:
        x = k - IDLE
        t = 33 + hot / 3 + (30 + hot) * (1 - math.exp(-x / 8.0))
        p = 392.0 + g + (x % 5) * 0.5
        util, clk = 100, 1410 - 15 * (g == 1 and x > 20)
        mask = 4 if g == 2 and x % 7 == 3 else 0   # bit 2: SW power cap
    temp = "N/A" if (g == 1 and k == 50) else "%d" % round(t)
    return [temp, "%.3f" % p, "%.3f" % 400.0, "%d" % clk, "%d" % 1410,
            "%d" % mask, "%d" % util]


def main():
    out = [header()]
    count = 0
    for k in range(PASSES):
        for g in range(3):
            out.append(cells("GPU %d" % g, gpu(g, k)) + "\n")
            if g == 0:
                out.append(cells("GPU-I 0", ["N/A"] * len(FIELDS)) + "\n")
        if k == PASSES - 1:
            break
        if count == 14:
            out.append(header())
            count = 0
        count += 1
    out.append("\n\ndmon was stopped due to receiving a signal\n")
    sys.stdout.write("".join(out))


main()
