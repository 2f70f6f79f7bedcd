#!/usr/bin/env python3
"""Derive cluster.json and profile.json for the h200x4-a fixture.

Usage:
  python3 scripts/derive-h200x4a.py fixtures/h200x4-a

Reads DIR/topo-m.txt, DIR/nvml.json, DIR/smi-q.txt and DIR/telemetry.csv and
writes DIR/cluster.json and DIR/profile.json (thermap.cluster/1 and
thermap.profile/1). Python 3 standard library only; the output depends only on
the inputs. Diagnostics (skipped rows, fit quality) go to stderr.

This script is the documentation of how the demo profile was made. The rules:

Cluster
  * GPUs come from nvml.json in index order: index, uuid, pci_bus_id, model
    (= NVML name). memory_gib = "FB Memory Usage / Total" of the same GPU in
    smi-q.txt (joined on the PCI bus id), MiB / 1024 rounded to an integer:
    143771 MiB -> 140 GiB. (The product is sold as "141 GB"; that figure is
    used only when smi-q.txt has no total. stderr says which source was used.)
  * links = the GPU x GPU codes of topo-m.txt (ANSI escapes stripped, GPU rows
    and columns only), parsed by scripts/topo-to-cluster.py. Row/column i is
    nvidia-smi index i, which is the order of "gpus".
  * link_gb_per_s, net_gb_per_s, net_group and network are null (one host; the
    codes imply the bandwidth).

Profile: reading the telemetry
  * The CSV header is read by name: each name is stripped of a bracketed unit
    and of spaces ("power.draw [W]" -> "power.draw", "clocks.current.sm [MHz]"
    -> "clocks.current.sm"). clocks.sm is accepted as the same field as
    clocks.current.sm (the query said clocks.sm, the header says
    clocks.current.sm).
  * A last line with fewer fields than the header (a log cut mid-row by a
    killed logger) is skipped and counted on stderr. Any other malformed row is
    an error naming the line.
  * Time = the timestamp "2026/11/21 12:15:28.037" (local time, only
    differences are used).
  * Rows are grouped per GPU by pci.bus_id; uuid comes from nvml.json joined on
    the PCI bus id (case-insensitive); index is the telemetry index.

Profile: which samples count (what the data actually shows)
  The obvious rule -- loaded = utilization.gpu >= 50 %, settled after 30 s
  continuously loaded; idle settled after 30 s continuously unloaded -- gives
  wrong answers on this recording:
    - the 40 %-duty GPUs 1 and 2 of the asymmetric phase report 24-56 %
      utilization. GPU 1 crosses 50 % every few seconds, so it is never 30 s
      continuously "loaded"; GPU 2 stays at 38-48 %, so at ~480 W it would be
      counted as settled *idle*.
    - no idle stretch lasts 30 s (0-23 s, 174-201 s, 291-309 s), so nothing
      would ever be settled idle and the idle fields would be null.
  The rule used instead:
    1. A sample is *busy* when utilization.gpu >= 10 %, else *idle*. (Idle
       samples read 0 %; the few 1-4 % readings are single samples at a
       transition; the 40 %-duty GPUs read 24-56 % throughout that phase.)
    2. A sample is *settled* when its GPU has been continuously in the same
       state (busy or idle) for >= 30 s, i.e. sample time - time of the first
       sample of the current run >= 30 s, and the next change of state (if
       any) is more than 1 s later: nvidia-smi averages utilization and power
       over its sample period, so the last sample before a change is already
       mixed (e.g. 0 % utilization at 193 W and 50 C just before full load).
       Exception: the run that starts the log, before any transition was
       seen, is settled from its first sample when its temperature.gpu
       varies by <= 1 C (ignoring the guarded last second): the GPU was
       already at rest when logging began. Here: the initial idle run,
       34-36 C and ~78 W for 22 s on every GPU. Without this exception no
       sample would be settled idle (no idle stretch here lasts 30 s).
    3. load_samples = settled busy samples (full load and the 40 %-duty phase).
       *Full load* = settled busy samples with utilization.gpu >= 95 %. For
       GPUs 0 and 3 this includes their 100 % samples of the asymmetric phase
       (a per-sample rule cannot tell phases apart); for GPUs 1 and 2 it is
       the uniform phase only.
  samples = all complete rows of that GPU; span_s = last - first timestamp of
  that GPU's complete rows.

Profile: the fields
  * temp_idle_c, power_idle_w = mean over settled idle samples.
  * temp_load_c, power_load_w = mean over full-load samples.
  * temp_p95_c (nearest-rank 95th percentile), temp_max_c = over load_samples.
  * headroom_c = mean of temperature.gpu.tlimit over full-load samples.
    tlimit is the margin to the slowdown point as the driver reports it; it is
    used as is (not slowdown threshold minus temperature).
  * power_limit_w = mean power.limit over all complete rows of the GPU.
  * ambient_c, r_c_per_w = ordinary least squares temp = ambient + r * power
    over all settled samples (idle, busy) of that GPU; ambient rounded to
    0.1 C, r to 4 decimals; R^2 printed on stderr. The fit is over samples,
    not phase means, so the longest phase weighs most.
  * sm_clock_load_mhz = mean clocks.current.sm over full-load samples
    (integer; the mean, because clocks move in 15 MHz steps and a median
    snaps to one of them); sm_clock_max_mhz = largest clocks.max.sm over
    all rows (integer).
  * thermal_slowdown_frac = share of load_samples whose sw_thermal_slowdown or
    hw_thermal_slowdown column reads "Active", or whose
    clocks_event_reasons.active has bit 0x20 or 0x40 set; power_cap_frac =
    share with sw_power_cap "Active" or bit 0x4. Rounded to 3 decimals.
  * derate = max over GPUs of sm_clock_load_mhz / this GPU's, 3 decimals,
    except that a GPU within one clock step (15 MHz) of the fastest gets
    1.0: a difference below the clock's resolution is noise, not a slower
    GPU.
  * A field with no samples to support it is null.
  Temperatures and tlimit are rounded to 0.1, powers to 0.01 W, span_s to
  0.001 s.

Known limits (see fixtures/README.md)
  * 30 s does not reach thermal equilibrium here: under full load GPUs 1 and 2
    still creep from ~64 C (at 54 s) to ~66 C (at 160 s), so the means sit
    ~1 C below the end-of-phase values.
  * These rules are the ones `thermap profile` implements (docs/profile.md);
    this script is an independent second implementation, and the tests
    check that both give the same profile for this recording.
  * SM clocks move in 15 MHz steps; mean clocks under full load differ by
    less than one step between GPUs whose throughput is equal (all four are
    power capped at ~691 W and run ~670 TFLOP/s each), so every derate is
    1.0 here, as burn-uniform.csv confirms.
"""

import datetime
import importlib.util
import json
import os
import re
import sys

HOST = "h200x4-a"
BUSY_UTIL = 10.0
FULL_UTIL = 95.0
SETTLE_S = 30.0
FLAT_START_C = 1.0
GUARD_S = 1.0
FALLBACK_MEMORY_GIB = 141
CLOCK_STEP_MHZ = 15

HERE = os.path.dirname(os.path.abspath(__file__))


def load_topo_module():
    sys.dont_write_bytecode = True  # leave no __pycache__ in scripts/
    spec = importlib.util.spec_from_file_location(
        "topo_to_cluster", os.path.join(HERE, "topo-to-cluster.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def die(msg):
    print("derive-h200x4a: %s" % msg, file=sys.stderr)
    sys.exit(4)


# ---------------------------------------------------------------- cluster

def smi_q_memory_mib(path):
    """{pci bus id (upper): FB total MiB} from `nvidia-smi -q`."""
    out = {}
    bus = None
    in_fb = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$", line)
            if m:
                bus = m.group(1).upper()
                in_fb = False
                continue
            s = line.strip()
            if s == "FB Memory Usage":
                in_fb = True
                continue
            if in_fb:
                m = re.match(r"^Total\s*:\s*(\d+)\s*MiB$", s)
                if m and bus is not None and bus not in out:
                    out[bus] = int(m.group(1))
                    in_fb = False
                elif ":" not in s:
                    in_fb = False
    return out


def build_cluster(d, nvml, topo):
    links = topo.parse_topo_m(os.path.join(d, "topo-m.txt"))
    mem = {}
    qpath = os.path.join(d, "smi-q.txt")
    if os.path.exists(qpath):
        mem = smi_q_memory_mib(qpath)
    gpus = []
    for g in sorted(nvml["gpus"], key=lambda g: g["index"]):
        bus = g["pci_bus_id"].upper()
        if bus in mem:
            gib = int(round(mem[bus] / 1024.0))
            print("memory_gib GPU%d: %d MiB from smi-q.txt -> %d GiB"
                  % (g["index"], mem[bus], gib), file=sys.stderr)
        else:
            gib = FALLBACK_MEMORY_GIB
            print("memory_gib GPU%d: no FB total in smi-q.txt, using %d"
                  % (g["index"], gib), file=sys.stderr)
        gpus.append({"index": g["index"], "uuid": g["uuid"],
                     "pci_bus_id": g["pci_bus_id"], "model": g["name"],
                     "memory_gib": gib})
    if len(links) != len(gpus):
        die("topo-m.txt has %d GPUs, nvml.json %d" % (len(links), len(gpus)))
    return topo.cluster_doc(HOST, gpus, links)


# ---------------------------------------------------------------- telemetry

def norm_name(h):
    h = re.sub(r"\[[^\]]*\]", "", h)
    h = h.replace(" ", "").strip()
    if h == "clocks.sm":
        h = "clocks.current.sm"
    if h == "clocks.mem":
        h = "clocks.current.memory"
    return h


NEEDED = ["timestamp", "index", "pci.bus_id", "temperature.gpu", "power.draw",
          "power.limit", "clocks.current.sm", "clocks.max.sm", "utilization.gpu",
          "clocks_event_reasons.active", "clocks_event_reasons.sw_thermal_slowdown",
          "clocks_event_reasons.hw_thermal_slowdown",
          "clocks_event_reasons.sw_power_cap", "temperature.gpu.tlimit"]


def num(s, path, lineno, name):
    s = s.strip()
    s = re.sub(r"\s*(W|MHz|%|C)$", "", s)
    try:
        return float(s)
    except ValueError:
        die("%s:%d: %s: expected a number, found %r" % (path, lineno, name, s))


def read_telemetry(path):
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = [norm_name(h) for h in lines[0].split(",")]
    col = {h: i for i, h in enumerate(header)}
    for n in NEEDED:
        if n not in col:
            die("%s:1: header has no column %r (has: %s)" % (path, n, ", ".join(header)))
    rows = []
    cut = 0
    for lineno, line in enumerate(lines[1:], 2):
        fields = [x.strip() for x in line.rstrip("\r").split(",")]
        if len(fields) != len(header):
            if lineno == len(lines) and len(fields) < len(header):
                cut += 1
                print("%s:%d: last line cut mid-row (%d of %d fields), skipped"
                      % (path, lineno, len(fields), len(header)), file=sys.stderr)
                continue
            die("%s:%d: expected %d fields, found %d" % (path, lineno, len(header), len(fields)))
        v = lambda n: fields[col[n]]
        try:
            t = datetime.datetime.strptime(v("timestamp"), "%Y/%m/%d %H:%M:%S.%f")
        except ValueError:
            die("%s:%d: timestamp: expected YYYY/MM/DD HH:MM:SS.mmm, found %r"
                % (path, lineno, v("timestamp")))
        active = v("clocks_event_reasons.active")
        try:
            mask = int(active, 16)
        except ValueError:
            die("%s:%d: clocks_event_reasons.active: expected a hex bitmask, found %r"
                % (path, lineno, active))
        rows.append({
            "t": t,
            "index": int(num(v("index"), path, lineno, "index")),
            "bus": v("pci.bus_id").upper(),
            "temp": num(v("temperature.gpu"), path, lineno, "temperature.gpu"),
            "power": num(v("power.draw"), path, lineno, "power.draw"),
            "plimit": num(v("power.limit"), path, lineno, "power.limit"),
            "sm": num(v("clocks.current.sm"), path, lineno, "clocks.current.sm"),
            "smmax": num(v("clocks.max.sm"), path, lineno, "clocks.max.sm"),
            "util": num(v("utilization.gpu"), path, lineno, "utilization.gpu"),
            "tlimit": num(v("temperature.gpu.tlimit"), path, lineno, "temperature.gpu.tlimit"),
            "thermal": (v("clocks_event_reasons.sw_thermal_slowdown") == "Active"
                        or v("clocks_event_reasons.hw_thermal_slowdown") == "Active"
                        or bool(mask & 0x60)),
            "pcap": v("clocks_event_reasons.sw_power_cap") == "Active" or bool(mask & 0x4),
        })
    return rows, cut


# ---------------------------------------------------------------- statistics

def mean(xs):
    return sum(xs) / len(xs) if xs else None


def p95(xs):
    xs = sorted(xs)
    if not xs:
        return None
    k = -(-95 * len(xs) // 100)  # nearest rank: ceil(0.95 n)
    return xs[max(k, 1) - 1]


def ols(xs, ys):
    n = len(xs)
    if n < 2:
        return None, None, None
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0:
        return None, None, None
    r = sxy / sxx
    a = my - r * mx
    r2 = (sxy * sxy) / (sxx * syy) if syy else 1.0
    return a, r, r2


def rnd(x, nd):
    return None if x is None else round(x, nd)


def settle(samples):
    """Mark each sample's state (busy/idle) and whether it is settled."""
    run_start = None
    run_state = None
    runs = []
    for s in samples:
        s["busy"] = s["util"] >= BUSY_UTIL
        if s["busy"] != run_state:
            run_state = s["busy"]
            run_start = s["t"]
            runs.append({"samples": []})
        runs[-1]["samples"].append(s)
        s["settled"] = (s["t"] - run_start).total_seconds() >= SETTLE_S
    # guard: the samples just before a state change are already mixed
    for k in range(len(runs) - 1):
        t_next = runs[k + 1]["samples"][0]["t"]
        for s in runs[k]["samples"]:
            s["guard"] = (t_next - s["t"]).total_seconds() <= GUARD_S
    # the run that starts the log: settled from its start if steady
    if runs:
        lead = [s for s in runs[0]["samples"] if not s.get("guard")]
        temps = [s["temp"] for s in lead]
        if temps and max(temps) - min(temps) <= FLAT_START_C:
            for s in lead:
                s["settled"] = True
    for s in samples:
        if s.get("guard"):
            s["settled"] = False


def build_profile(rows, nvml):
    uuid_by_bus = {g["pci_bus_id"].upper(): g["uuid"] for g in nvml["gpus"]}
    by_bus = {}
    order = []
    for r in rows:
        if r["bus"] not in by_bus:
            by_bus[r["bus"]] = []
            order.append(r["bus"])
        by_bus[r["bus"]].append(r)
    order.sort(key=lambda b: (by_bus[b][0]["index"], b))

    entries = []
    for bus in order:
        ss = sorted(by_bus[bus], key=lambda s: s["t"])
        settle(ss)
        idle = [s for s in ss if s["settled"] and not s["busy"]]
        load = [s for s in ss if s["settled"] and s["busy"]]
        full = [s for s in load if s["util"] >= FULL_UTIL]
        fit = [s for s in ss if s["settled"]]
        a, r, r2 = ols([s["power"] for s in fit], [s["temp"] for s in fit])
        idx = ss[0]["index"]
        print("GPU%d %s: %d rows, %d settled idle, %d settled busy (%d full load); "
              "fit T = %.2f + %.5f*P over %d samples, R^2 = %.4f"
              % (idx, bus, len(ss), len(idle), len(load), len(full),
                 a if a is not None else float("nan"),
                 r if r is not None else float("nan"), len(fit),
                 r2 if r2 is not None else float("nan")), file=sys.stderr)
        smload = (sum(s["sm"] for s in full) / len(full)) if full else None
        entries.append({
            "host": HOST,
            "uuid": uuid_by_bus.get(bus),
            "pci_bus_id": nvml_bus(nvml, bus),
            "index": idx,
            "samples": len(ss),
            "load_samples": len(load),
            "span_s": round((ss[-1]["t"] - ss[0]["t"]).total_seconds(), 3),
            "temp_idle_c": rnd(mean([s["temp"] for s in idle]), 1),
            "temp_load_c": rnd(mean([s["temp"] for s in full]), 1),
            "temp_p95_c": rnd(p95([s["temp"] for s in load]), 1),
            "temp_max_c": rnd(max([s["temp"] for s in load]) if load else None, 1),
            "headroom_c": rnd(mean([s["tlimit"] for s in full]), 1),
            "power_idle_w": rnd(mean([s["power"] for s in idle]), 2),
            "power_load_w": rnd(mean([s["power"] for s in full]), 2),
            "power_limit_w": rnd(mean([s["plimit"] for s in ss]), 2),
            "ambient_c": rnd(a, 1),
            "r_c_per_w": rnd(r, 4),
            "sm_clock_load_mhz": None if smload is None else int(round(smload)),
            "sm_clock_max_mhz": int(round(max([s["smmax"] for s in ss]))),
            "thermal_slowdown_frac": rnd(sum(s["thermal"] for s in load) / len(load), 3) if load else None,
            "power_cap_frac": rnd(sum(s["pcap"] for s in load) / len(load), 3) if load else None,
            "derate": None,
        })
    clocks = [e["sm_clock_load_mhz"] for e in entries if e["sm_clock_load_mhz"]]
    if clocks:
        fastest = max(clocks)
        for e in entries:
            if e["sm_clock_load_mhz"]:
                slower = fastest - e["sm_clock_load_mhz"] >= CLOCK_STEP_MHZ
                e["derate"] = round(fastest / e["sm_clock_load_mhz"], 3) if slower else 1.0
    return {"format": "thermap.profile/1", "gpus": entries}


def nvml_bus(nvml, bus):
    for g in nvml["gpus"]:
        if g["pci_bus_id"].upper() == bus:
            return g["pci_bus_id"]
    return bus


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python3 scripts/derive-h200x4a.py DIR", file=sys.stderr)
        return 2
    d = argv[0]
    topo = load_topo_module()
    with open(os.path.join(d, "nvml.json"), encoding="utf-8") as f:
        nvml = json.load(f)
    try:
        cluster = build_cluster(d, nvml, topo)
    except topo.TopoError as e:
        die(str(e))
    rows, cut = read_telemetry(os.path.join(d, "telemetry.csv"))
    print("telemetry.csv: %d complete rows, %d cut row(s) skipped" % (len(rows), cut),
          file=sys.stderr)
    profile = build_profile(rows, nvml)
    for name, doc in (("cluster.json", cluster), ("profile.json", profile)):
        path = os.path.join(d, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(topo.dump_json(doc))
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
