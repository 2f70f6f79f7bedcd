#!/usr/bin/env python3
"""Derive cluster.json and profile.json for the h200x4-a fixture.

Usage:
  python3 scripts/derive-h200x4a.py fixtures/h200x4-a
  python3 scripts/derive-h200x4a.py --window FROM TO fixtures/h200x4-a

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
    over all settled samples (idle, busy) of that GPU, when they show two
    power levels (>= 2 settled idle and >= 2 settled busy samples, or >= 10
    settled samples spanning >= 100 W) and the result is physical (0 < r <=
    10 C/W, -50 <= ambient <= 200 C); ambient rounded to 0.1 C, r to 4
    decimals; R^2 printed on stderr. The fit is over samples, not phase
    means, so the longest phase weighs most.
  * temp_fit_sd_c = residual standard deviation of that fit,
    sqrt(sum of squared residuals / (n - 2)), 2 decimals.
  * A GPU with settled busy samples but no fit of its own (a window of a
    running job: no idle, the power steady) gets, in this order:
      - a pooled slope: one r fitted over the settled samples of all GPUs of
        the host, each about its own mean power and temperature (fixed
        effects), when the power's standard deviation about each GPU's mean,
        pooled, is >= 30 W (that of 100 W spread evenly, 100/sqrt(12)) over
        >= 2 GPUs and >= 10 degrees of freedom; ambient = own mean
        temperature - r * own mean power; temp_fit_sd_c over n - 1;
      - else r = 30 C / power limit (the median rise at the limit of the
        own fits of the real recordings), ambient as above.
    Each such field is listed in "estimated" with how it was made.
  * power_idle_w without settled idle samples (and with settled busy ones):
    11 % of the power limit (the real idle recordings: 5-16 %), at most the
    lowest settled power of the GPU; temp_idle_c then = the fit at that
    power. Both listed in "estimated".
  * sm_clock_load_mhz = mean clocks.current.sm over full-load samples
    (integer, ties to even; the mean, because clocks move in 15 MHz steps
    and a median snaps to one of them); sm_clock_max_mhz = largest
    clocks.max.sm over all rows (integer).
  * thermal_slowdown_frac = share of load_samples whose sw_thermal_slowdown or
    hw_thermal_slowdown column reads "Active", or whose
    clocks_event_reasons.active has bit 0x20 or 0x40 set; power_cap_frac =
    share with sw_power_cap "Active" or bit 0x4. Rounded to 3 decimals.
  * derate, derate_sd, derate_basis: q = fastest mean full-load clock over
    GPUs / this GPU's. derate_sd = q * sqrt((se/c)^2 + (se_f/c_f)^2) from
    the standard errors of the two mean clocks, at least q * 15 MHz / c (one
    clock step). A standard error counts n samples as n (1 - rho)/(1 + rho)
    independent ones, rho = the lag-1 autocorrelation of the clocks of
    neighbouring rows of the GPU (0 when negative), at least 1.
      - power-capped (power_cap_frac >= 0.5) and thermal_slowdown_frac <
        0.05: basis "power-cap", derate 1, derate_sd at least q - 1;
      - thermal_slowdown_frac >= 0.05: basis "thermal", derate q;
      - else basis "clock", derate q.
    derate rounded to 3 decimals, derate_sd to 4; a derate whose excess
    over 1 is at most derate_sd is written as 1.
  * A field with no samples to support it is null.
  Temperatures and tlimit are rounded to 0.1, powers to 0.01 W, span_s to
  0.001 s.

  With --window FROM TO the script prints the profile of the rows FROM to
  TO seconds after the first row (as `thermap profile --from +FROM --to
  +TO` cuts them) instead of writing files: the estimate rules above only
  act on such windows of this recording.

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
    1.0 here, as burn-uniform.csv confirms; the basis is "power-cap" (a
    clock under the cap is no speed for another workload).
"""

import datetime
import importlib.util
import json
import math
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
CLOCK_STEP_MHZ = 15      # one SM clock step: the floor of derate's uncertainty
FIT_SPAN_W = 100.0       # own fit without idle: settled power spans this
FIT_MIN_N = 10           # ... over at least this many samples
POOL_SD_W = 30.0         # pooled fit: power SD about each GPU's mean, W
LIMIT_RISE_C = 30.0      # last-resort slope: degrees over ambient at the limit
IDLE_SHARE = 0.11        # idle power without idle samples: share of the limit
CAPPED_FRAC = 0.5        # power-capped: SW power cap active this often
CAPPED_POWER = 0.95      # ... or, without reasons, this share of the limit
THERMAL_FRAC = 0.05      # thermally slowed: a thermal reason this often
LIMIT_MAX_W = 1e5        # a power limit an estimate may rest on, at most

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


def clock_se(seq):
    """Standard error of the mean of clocks seq = [(position, MHz)], the
    positions being places in the GPU's list of samples. Neighbouring
    samples are alike, so n samples count as n (1 - rho) / (1 + rho)
    independent ones, rho = the lag-1 autocorrelation over pairs of
    samples next to each other in the GPU's list (0 when negative)."""
    n = len(seq)
    if n < 2:
        return None
    xs = [c for _, c in seq]
    m = sum(xs) / n
    dev = [x - m for x in xs]
    ss = sum(d * d for d in dev)
    var = ss / (n - 1)
    if not var > 0:
        return 0.0
    pairs = [(dev[i - 1], dev[i]) for i in range(1, n)
             if seq[i][0] == seq[i - 1][0] + 1]
    rho = 0.0
    if pairs:
        rho = (sum(u * v for u, v in pairs) / len(pairs)) / (ss / n)
    rho = min(max(rho, 0.0), 1.0)
    neff = max(n * (1 - rho) / (1 + rho), 1.0)
    return math.sqrt(var / neff)


def resid_sd(xs, ys, a, r, params):
    """Residual standard deviation of ys about a + r x, `params` of the
    line's parameters having been fitted to these samples."""
    n = len(xs)
    if n <= params:
        return None
    return math.sqrt(sum((y - a - r * x) ** 2 for x, y in zip(xs, ys)) / (n - params))


def own_fit(g):
    """The GPU's own fit, or None: two power levels (>= 2 settled idle and
    >= 2 settled busy samples), or >= FIT_MIN_N settled samples spanning
    FIT_SPAN_W; physical (0 < r <= 10, -50 <= ambient <= 200)."""
    fit = g["fit"]
    xs = [s["power"] for s in fit]
    ys = [s["temp"] for s in fit]
    levels = (sum(1 for s in fit if not s["busy"]) >= 2
              and sum(1 for s in fit if s["busy"]) >= 2)
    spread = len(fit) >= FIT_MIN_N and max(xs) - min(xs) >= FIT_SPAN_W
    if not (levels or spread):
        return None
    a, r, r2 = ols(xs, ys)
    if r is None or not (0 < r <= 10) or not (-50 <= a <= 200):
        return None
    print("  GPU%d own fit: R^2 = %.4f" % (g["index"], r2), file=sys.stderr)
    return a, r, resid_sd(xs, ys, a, r, 2)


def slope_fit(g, r):
    """Ambient from the GPU's own means for a given slope r; None when not
    physical."""
    fit = g["fit"]
    if not fit or r is None or not (0 < r <= 10):
        return None
    xs = [s["power"] for s in fit]
    ys = [s["temp"] for s in fit]
    a = sum(ys) / len(ys) - r * (sum(xs) / len(xs))
    if not (-50 <= a <= 200):
        return None
    return a, r, resid_sd(xs, ys, a, r, 1)


def group_fits(members, what, name):
    """GPUs of one host (this recording names no model) without a fit of
    their own: a fixed-effects slope pooled over the group when the power
    moves enough about each GPU's mean (SD >= POOL_SD_W over >= 2 GPUs and
    >= FIT_MIN_N degrees of freedom), else LIMIT_RISE_C over the power
    limit; then idle levels for GPUs never seen idle."""
    sxx = sxy = 0.0
    nn = ng = 0
    pmax = None
    for g in members:
        busy_p = [s["power"] for s in g["ss"] if s["busy"]]
        if busy_p and (pmax is None or max(busy_p) > pmax):
            pmax = max(busy_p)
        fit = g["fit"]
        if len(fit) < 2:
            continue
        mx = sum(s["power"] for s in fit) / len(fit)
        my = sum(s["temp"] for s in fit) / len(fit)
        sxx += sum((s["power"] - mx) ** 2 for s in fit)
        sxy += sum((s["power"] - mx) * (s["temp"] - my) for s in fit)
        nn += len(fit)
        ng += 1
    sd = math.sqrt(sxx / (nn - ng)) if nn > ng else None
    r_pool = None
    if ng >= 2 and nn - ng >= FIT_MIN_N and sd >= POOL_SD_W and sxx > 0:
        r_pool = sxy / sxx
    for g in members:
        if g["fitres"] is not None or not g["fit"] or not g["load"]:
            continue
        res = slope_fit(g, r_pool)
        if res is not None:
            g["fitres"] = res
            g["est"]["r_c_per_w"] = (
                "pooled: one slope fitted over the settled samples of the %.0f "
                "GPUs of %s %s, each about its own means (power spread within "
                "a GPU %.1f W over %.0f samples); no fit of its own"
                % (ng, what, name, sd, nn))
            g["est"]["ambient_c"] = ("this GPU's mean temperature less the "
                                     "pooled slope times its mean power")
            g["est"]["temp_fit_sd_c"] = "this GPU's samples about the pooled slope"
            continue
        lim = g["plimit"] if g["plimit"] and g["plimit"] > 0 else pmax
        if not lim or not 0 < lim <= LIMIT_MAX_W:
            continue
        res = slope_fit(g, LIMIT_RISE_C / lim)
        if res is None:
            continue
        g["fitres"] = res
        if g["plimit"] and g["plimit"] > 0:
            g["est"]["r_c_per_w"] = (
                "last resort, not fitted: %.0f \u00b0C above ambient at the "
                "power limit of %.2f W; no fit of its own, nor a pooled one "
                "over its %s's GPUs" % (LIMIT_RISE_C, lim, what))
        else:
            g["est"]["r_c_per_w"] = (
                "last resort, not fitted: %.0f \u00b0C above ambient at %.2f W, "
                "the largest power seen on the GPUs of %s %s (no power limit "
                "in the log); no fit of its own, nor a pooled one over its "
                "%s's GPUs" % (LIMIT_RISE_C, lim, what, name, what))
        g["est"]["ambient_c"] = ("this GPU's mean temperature less the "
                                 "last-resort slope times its mean power")
        g["est"]["temp_fit_sd_c"] = "this GPU's samples about the last-resort slope"
    for g in members:
        if not g["load"]:
            continue
        base = g["plimit"] if g["plimit"] and g["plimit"] > 0 else pmax
        if g["power_idle"] is None and base and 0 < base <= LIMIT_MAX_W:
            pmin = min(s["power"] for s in g["fit"]) if g["fit"] else None
            pi = IDLE_SHARE * base
            if g["plimit"] and g["plimit"] > 0:
                how = ("no idle samples: %.0f %% of the power limit of %.2f W "
                       "(real idle recordings: 5-16 %%)" % (100 * IDLE_SHARE, base))
            else:
                how = ("no idle samples: %.0f %% of %.2f W, the largest power "
                       "seen on the GPUs of %s %s, for the power limit the log "
                       "lacks (real idle recordings: 5-16 %% of the limit)"
                       % (100 * IDLE_SHARE, base, what, name))
            if pmin is not None and pi > pmin:
                pi = pmin
                how = ("no idle samples: the lowest settled power of this GPU, "
                       "%.2f W, which is below %.0f %% of %.2f W"
                       % (pmin, 100 * IDLE_SHARE, base))
            g["power_idle"] = pi
            g["est"]["power_idle_w"] = how
        if g["temp_idle"] is not None:
            continue
        if g["fitres"] is not None and g["power_idle"] is not None:
            a, r, _ = g["fitres"]
            g["temp_idle"] = a + r * g["power_idle"]
            g["est"]["temp_idle_c"] = "no idle samples: the fit at power_idle_w"
        elif g["temp_load"] is not None:
            g["temp_idle"] = min(s["temp"] for s in g["ss"])
            g["est"]["temp_idle_c"] = (
                "no idle samples and no fit: the lowest temperature this GPU "
                "showed, so at most its idle temperature")


def derate_of(g, fast):
    """derate, derate_sd, derate_basis (docs/profile.md)."""
    if g["clock"] is None or fast is None:
        return None, None, "none"
    c, cf = g["clock"], fast["clock"]
    q = cf / c
    rel = 0.0
    if g["clock_se"]:
        rel += (g["clock_se"] / c) ** 2
    if fast["clock_se"]:
        rel += (fast["clock_se"] / cf) ** 2
    sd = max(q * math.sqrt(rel), q * CLOCK_STEP_MHZ / c)
    hot = g["thermal"] is not None and g["thermal"] >= THERMAL_FRAC
    if g["pcap"] is not None:
        capped = g["pcap"] >= CAPPED_FRAC
    else:
        capped = bool(g["plimit"]) and g["power_load"] is not None and \
            g["power_load"] >= CAPPED_POWER * g["plimit"]
    if capped and not hot:
        basis, sd, d = "power-cap", max(sd, q - 1), 1.0
    else:
        basis, d = ("thermal" if hot else "clock"), q
    sd = round(sd, 4)
    d = round(d, 3)
    if d - 1 <= sd:
        d = 1.0
    return d, sd, basis


def build_profile(rows, nvml, host=HOST):
    uuid_by_bus = {g["pci_bus_id"].upper(): g["uuid"] for g in nvml["gpus"]}
    by_bus = {}
    order = []
    for r in rows:
        if r["bus"] not in by_bus:
            by_bus[r["bus"]] = []
            order.append(r["bus"])
        by_bus[r["bus"]].append(r)
    order.sort(key=lambda b: (by_bus[b][0]["index"], b))

    gs = []
    for bus in order:
        ss = sorted(by_bus[bus], key=lambda s: s["t"])
        settle(ss)
        idle = [s for s in ss if s["settled"] and not s["busy"]]
        load = [s for s in ss if s["settled"] and s["busy"]]
        full = [s for s in load if s["util"] >= FULL_UTIL]
        fit = [s for s in ss if s["settled"]]
        idx = ss[0]["index"]
        print("GPU%d %s: %d rows, %d settled idle, %d settled busy (%d full load)"
              % (idx, bus, len(ss), len(idle), len(load), len(full)), file=sys.stderr)
        pos = {id(s): i for i, s in enumerate(ss)}
        g = {"bus": bus, "index": idx, "ss": ss, "idle": idle, "load": load,
             "full": full, "fit": fit, "est": {},
             "temp_idle": mean([s["temp"] for s in idle]),
             "power_idle": mean([s["power"] for s in idle]),
             "temp_load": mean([s["temp"] for s in full]),
             "power_load": mean([s["power"] for s in full]),
             "plimit": mean([s["plimit"] for s in ss]),
             "clock": mean([s["sm"] for s in full]),
             "clock_se": clock_se([(pos[id(s)], s["sm"]) for s in full]),
             "thermal": (sum(s["thermal"] for s in load) / len(load)) if load else None,
             "pcap": (sum(s["pcap"] for s in load) / len(load)) if load else None}
        g["fitres"] = own_fit(g) if fit else None
        gs.append(g)
    group_fits(gs, "host", host)
    fast = None
    for g in gs:
        if g["clock"] and (fast is None or g["clock"] > fast["clock"]):
            fast = g

    entries = []
    for g in gs:
        ss, load, full = g["ss"], g["load"], g["full"]
        a, r, fsd = g["fitres"] if g["fitres"] is not None else (None, None, None)
        d, dsd, basis = derate_of(g, fast)
        e = {
            "host": host,
            "uuid": uuid_by_bus.get(g["bus"]),
            "pci_bus_id": nvml_bus(nvml, g["bus"]),
            "index": g["index"],
            "samples": len(ss),
            "load_samples": len(load),
            "span_s": round((ss[-1]["t"] - ss[0]["t"]).total_seconds(), 3),
            "temp_idle_c": rnd(g["temp_idle"], 1),
            "temp_load_c": rnd(g["temp_load"], 1),
            "temp_p95_c": rnd(p95([s["temp"] for s in load]), 1),
            "temp_max_c": rnd(max([s["temp"] for s in load]) if load else None, 1),
            "headroom_c": rnd(mean([s["tlimit"] for s in full]), 1),
            "power_idle_w": rnd(g["power_idle"], 2),
            "power_load_w": rnd(g["power_load"], 2),
            "power_limit_w": rnd(g["plimit"], 2),
            "ambient_c": rnd(a, 1),
            "r_c_per_w": rnd(r, 4),
            "temp_fit_sd_c": rnd(fsd, 2),
            "sm_clock_load_mhz": None if g["clock"] is None else int(round(g["clock"])),
            "sm_clock_max_mhz": int(round(max([s["smmax"] for s in ss]))),
            "thermal_slowdown_frac": rnd(g["thermal"], 3),
            "power_cap_frac": rnd(g["pcap"], 3),
            "derate": d,
            "derate_sd": dsd,
            "derate_basis": basis,
        }
        est = {k: g["est"][k] for k in ("temp_idle_c", "power_idle_w", "ambient_c",
                                         "r_c_per_w", "temp_fit_sd_c") if k in g["est"]}
        if est:
            e["estimated"] = est
        print("  GPU%d: fit T = %s + %s*P (sd %s), clock %s +- %s MHz, derate %s +- %s (%s)"
              % (g["index"], e["ambient_c"], e["r_c_per_w"], e["temp_fit_sd_c"],
                 e["sm_clock_load_mhz"], rnd(g["clock_se"], 2), d, dsd, basis),
              file=sys.stderr)
        entries.append(e)
    return {"format": "thermap.profile/1", "gpus": entries}


def nvml_bus(nvml, bus):
    for g in nvml["gpus"]:
        if g["pci_bus_id"].upper() == bus:
            return g["pci_bus_id"]
    return bus


def main(argv):
    window = None
    if len(argv) == 4 and argv[0] == "--window":
        try:
            window = (float(argv[1]), float(argv[2]))
        except ValueError:
            window = None
        argv = argv[3:] if window else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python3 scripts/derive-h200x4a.py [--window FROM TO] DIR",
              file=sys.stderr)
        return 2
    d = argv[0]
    topo = load_topo_module()
    with open(os.path.join(d, "nvml.json"), encoding="utf-8") as f:
        nvml = json.load(f)
    rows, cut = read_telemetry(os.path.join(d, "telemetry.csv"))
    print("telemetry.csv: %d complete rows, %d cut row(s) skipped" % (len(rows), cut),
          file=sys.stderr)
    if window:
        # a window cut from the recording, as `thermap profile --from +FROM
        # --to +TO` cuts it: printed, nothing written
        t0 = min(r["t"] for r in rows)
        rows = [r for r in rows
                if window[0] <= (r["t"] - t0).total_seconds() <= window[1]]
        sys.stdout.write(topo.dump_json(build_profile(rows, nvml)))
        return 0
    try:
        cluster = build_cluster(d, nvml, topo)
    except topo.TopoError as e:
        die(str(e))
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
