#!/usr/bin/env python3
"""Turn the logs of a train.py run into a thermap.job/1 document.

usage: to_job.py LOGDIR [--name NAME] [--nproc-per-node N] -o JOB.json

Reads LOGDIR/rank<R>.jsonl of every rank and writes the job that thermap
plans with: the parallel sizes of the run (tp=cp=ep=1, order
tp-cp-ep-dp-pp), the 1F1B schedule with the run's microbatches, and for
every stage s its measured times per microbatch, as thermap's model uses
them (docs/model.md, section 2):

  fwd_ms  median, over the measured (non-warm-up) iterations of the
          data-parallel ranks of stage s, of the rank's forward compute
          time in the iteration divided by the microbatches; a rank
          whose own median compute is more than 2 % above the stage's
          fastest ran on a slowed GPU (another process on it, say) and is
          left out: calibrate measures that GPU's slowness as its derate,
          relative to the stage's fastest, and the stage's time must not
          count it again
  bwd_ms  the same for the backward compute time
  act_mib the activation one microbatch sends to the next stage (MiB)
  layers  the stage's blocks (thermap only reports it)
  mem_gib the largest peak of reserved GPU memory among the stage's ranks,
          when every one of them logged it

and what the run measured, for thermap calibrate (docs/calibrate.md):

  measured.iteration_ms  the largest, over the ranks, of the median step
                         time of the measured iterations
  measured.ranks[r]      rank r's own fwd_ms and bwd_ms (medians per
                         microbatch, as above), sd_ms (the standard
                         deviation over iterations of its fwd + bwd per
                         microbatch), iterations (how many) and pid (its
                         process id, from the start record, when logged)
  measured.start_unix_s  when the job worked on its GPUs: the start of
  measured.end_unix_s    the earliest iteration of any rank, warm-up
                         included (before it, a busy GPU runs work that
                         is not the job's), and the latest end of a
                         measured iteration (seconds since 1970, from the
                         iterations' t and t_end; left out when the logs
                         have no times)

-o - writes to standard output. Standard library only; Python 3.9+.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

PROG = "to_job.py"
# a rank this much slower than its stage's fastest ran on a slowed GPU
SLOW_REL = 0.02
MAX_UNIX_S = 1e11     # what thermap's job loader accepts
MAX_PID = 2147483647
SAME = ("world", "dp", "pp", "layers", "hidden", "vocab", "seq",
        "micro_batch", "microbatches", "act_mib")


class Bad(Exception):
    pass


def is_num(x):
    return (isinstance(x, (int, float)) and not isinstance(x, bool)
            and math.isfinite(x))


def read_log(path):
    """Returns (start, measured iters, end or None)."""
    start, iters, end, first_t = None, [], None, None
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise Bad("%s: cannot open: %s" % (path, e.strerror or e))
    with fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError as e:
                raise Bad("%s:%d: not a JSON line (%s)" % (path, n, e))
            if not isinstance(o, dict):
                raise Bad("%s:%d: not a JSON object" % (path, n))
            kind = o.get("kind")
            if start is None and kind != "start":
                raise Bad("%s:%d: the first record is %r; expected a "
                          "\"start\" record" % (path, n, kind))
            if kind == "start":
                if start is not None:
                    raise Bad("%s:%d: a second \"start\" record (two runs "
                              "in one log?)" % (path, n))
                start = o
            elif kind == "error":
                raise Bad("%s:%d: the run stopped with an error: %s"
                          % (path, n, "; ".join(str(e) for e in
                                                o.get("errors") or [o])))
            elif kind == "iter":
                for k in ("fwd_ms", "bwd_ms"):
                    if not is_num(o.get(k)) or o[k] < 0:
                        raise Bad("%s:%d: %s is %r; expected a number >= 0"
                                  % (path, n, k, o.get(k)))
                if "step_ms" in o and (not is_num(o["step_ms"]) or
                                       o["step_ms"] < 0):
                    raise Bad("%s:%d: step_ms is %r; expected a number >= 0"
                              % (path, n, o["step_ms"]))
                for k in ("t", "t_end"):
                    if k in o and (not is_num(o[k]) or
                                   not 0 <= o[k] <= MAX_UNIX_S):
                        raise Bad("%s:%d: %s is %r; expected seconds since "
                                  "1970" % (path, n, k, o[k]))
                if "t" in o and "t_end" in o and o["t_end"] < o["t"]:
                    raise Bad("%s:%d: t_end %r is before t %r"
                              % (path, n, o["t_end"], o["t"]))
                if "t" in o and (first_t is None or o["t"] < first_t):
                    first_t = o["t"]
                if not o.get("warmup"):
                    iters.append(o)
            elif kind == "end":
                end = o
    if start is None:
        raise Bad("%s: empty log" % path)
    if first_t is not None:
        start = dict(start, first_t=first_t)
    return start, iters, end


def check_start(path, st):
    def need_int(k, lo):
        v = st.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise Bad("%s: start record: %s is %r; expected an integer >= %d"
                      % (path, k, v, lo))
    for k in ("world", "dp", "pp", "microbatches"):
        need_int(k, 1)
    for k in ("rank", "pp_rank", "dp_rank"):
        need_int(k, 0)
    lay = st.get("layers")
    if (not isinstance(lay, list) or len(lay) != st["pp"] or
            not all(isinstance(x, int) and x >= 0 for x in lay)):
        raise Bad("%s: start record: layers is %r; expected %d whole numbers"
                  % (path, lay, st["pp"]))
    if not is_num(st.get("act_mib")) or st["act_mib"] < 0:
        raise Bad("%s: start record: act_mib is %r; expected a number >= 0"
                  % (path, st.get("act_mib")))
    if st["world"] != st["dp"] * st["pp"]:
        raise Bad("%s: start record: world %d is not dp %d x pp %d"
                  % (path, st["world"], st["dp"], st["pp"]))
    pid = st.get("pid")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)
                            or not 1 <= pid <= MAX_PID):
        raise Bad("%s: start record: pid is %r; expected a process id"
                  % (path, pid))
    r = st["rank"]
    if st["pp_rank"] != r // st["dp"] or st["dp_rank"] != r % st["dp"]:
        raise Bad("%s: rank %d has dp_rank %d and pp_rank %d; the order "
                  "tp-cp-ep-dp-pp gives %d and %d"
                  % (path, r, st["dp_rank"], st["pp_rank"], r % st["dp"],
                     r // st["dp"]))


def r3(x):
    return round(float(x), 3)


def build_job(logdir, name, nproc):
    if not os.path.isdir(logdir):
        raise Bad("%s: not a directory" % logdir)
    files = {}
    for f in glob.glob(os.path.join(glob.escape(logdir), "rank*.jsonl")):
        m = re.match(r"^rank(\d+)\.jsonl$", os.path.basename(f))
        if m:
            files[int(m.group(1))] = f
    if not files:
        raise Bad("%s: no rank<R>.jsonl files" % logdir)

    logs = {}
    for r in sorted(files):
        st, iters, end = read_log(files[r])
        check_start(files[r], st)
        if st["rank"] != r:
            raise Bad("%s: the start record says rank %d"
                      % (files[r], st["rank"]))
        logs[r] = (st, iters, end)

    ref = logs[min(logs)][0]
    for r, (st, _, _) in sorted(logs.items()):
        for k in SAME:
            if st.get(k) != ref.get(k):
                raise Bad("%s: %s is %r but %s has %r (logs of different "
                          "runs in one directory?)"
                          % (files[r], k, st.get(k), files[min(logs)],
                             ref.get(k)))
    world, dp, pp, m = ref["world"], ref["dp"], ref["pp"], ref["microbatches"]
    extra = sorted(r for r in logs if r >= world)
    if extra:
        raise Bad("%s: rank %d is outside the world of %d ranks (a log of "
                  "another run?)" % (files[extra[0]], extra[0], world))
    missing = [r for r in range(world) if r not in logs]
    if missing:
        raise Bad("%s: no log of rank%s %s (world %d)"
                  % (logdir, "s" if len(missing) > 1 else "",
                     ",".join(str(r) for r in missing), world))
    for r, (_, _, end) in sorted(logs.items()):
        if end is None:
            print("%s: warning: %s has no \"end\" record; the run was cut "
                  "short, its measured iterations are used" % (PROG, files[r]),
                  file=sys.stderr)

    if nproc is None:
        nproc = world
    if nproc < 1 or world % nproc != 0:
        raise Bad("--nproc-per-node %d does not divide the world size %d"
                  % (nproc, world))

    stages = []
    for s in range(pp):
        ranks = [s * dp + d for d in range(dp)]
        fwd, bwd = [], []
        for r in ranks:
            if not logs[r][1]:
                raise Bad("%s: no measured (non-warm-up) iterations"
                          % files[r])
        # the stage's work is its GPUs' at full speed: a rank resolvably
        # slower than the stage's fastest (beyond the 2 % thermap
        # calibrate takes as a derate's floor) ran on a slowed GPU, and
        # calibrate measures that slowness as the GPU's derate; in the
        # stage's time too it would count twice
        own = {r: statistics.median([(it["fwd_ms"] + it["bwd_ms"]) / m
                                     for it in logs[r][1]]) for r in ranks}
        fastest = min(own.values())
        for r in ranks:
            if own[r] > fastest * (1 + SLOW_REL):
                continue
            its = logs[r][1]
            fwd += [it["fwd_ms"] / m for it in its]
            bwd += [it["bwd_ms"] / m for it in its]
        stage = {"layers": ref["layers"][s],
                 "fwd_ms": r3(statistics.median(fwd)),
                 "bwd_ms": r3(statistics.median(bwd)),
                 "act_mib": r3(ref["act_mib"])}
        if stage["fwd_ms"] + stage["bwd_ms"] <= 0:
            raise Bad("stage %d: measured no work (fwd_ms + bwd_ms is 0)" % s)
        mems = [(logs[r][2] or {}).get("peak_mem_gib") for r in ranks]
        if all(is_num(x) and x >= 0 for x in mems):
            stage["mem_gib"] = math.ceil(max(mems) * 1000) / 1000.0
        stages.append(stage)

    # what each rank measured: its own times per microbatch (thermap
    # calibrate compares the GPUs of one stage with them) and the step
    # time, whose median over the slowest rank is the iteration
    mranks, steps = [], []
    for r in range(world):
        its = logs[r][1]
        w = [(it["fwd_ms"] + it["bwd_ms"]) / m for it in its]
        mr = {"rank": r,
              "fwd_ms": r3(statistics.median(it["fwd_ms"] / m for it in its)),
              "bwd_ms": r3(statistics.median(it["bwd_ms"] / m for it in its)),
              "sd_ms": r3(statistics.stdev(w)) if len(w) > 1 else None,
              "iterations": len(its)}
        if logs[r][0].get("pid") is not None:
            mr["pid"] = logs[r][0]["pid"]
        if mr["fwd_ms"] + mr["bwd_ms"] <= 0:
            raise Bad("%s: measured no compute (fwd_ms + bwd_ms is 0)"
                      % files[r])
        mranks.append(mr)
        st = [it["step_ms"] for it in its if "step_ms" in it]
        steps.append(statistics.median(st) if len(st) == len(its) else None)
    iteration = r3(max(steps)) if None not in steps else None
    # the measured window on the wall clock, when every measured iteration
    # of every rank logged its start and end
    its_all = [it for r in range(world) for it in logs[r][1]]
    window = ""
    if (all("t" in it and "t_end" in it for it in its_all) and
            all("first_t" in logs[r][0] for r in range(world))):
        window = ('"start_unix_s": %s, "end_unix_s": %s, '
                  % (json.dumps(r3(min(logs[r][0]["first_t"]
                                       for r in range(world)))),
                     json.dumps(r3(max(it["t_end"] for it in its_all)))))

    if name is None:
        name = ("examples/pipeline: pp=%d dp=%d, layers %s, hidden %s, "
                "vocab %s, seq %s, micro-batch %s"
                % (pp, dp, ",".join(str(x) for x in ref["layers"]),
                   ref.get("hidden"), ref.get("vocab"), ref.get("seq"),
                   ref.get("micro_batch")))
    parallel = {"tp": 1, "cp": 1, "ep": 1, "dp": dp, "pp": pp, "vpp": 1,
                "order": "tp-cp-ep-dp-pp"}
    lines = ["{",
             '  "format": "thermap.job/1",',
             '  "name": %s,' % json.dumps(name),
             '  "parallel": %s,' % json.dumps(parallel),
             '  "nproc_per_node": %d,' % nproc,
             '  "schedule": %s,' % json.dumps({"kind": "1f1b",
                                               "microbatches": m}),
             '  "stages": [']
    for i, st in enumerate(stages):
        lines.append("    %s%s" % (json.dumps(st),
                                   "," if i < len(stages) - 1 else ""))
    lines += ["  ],",
              '  "measured": {"iteration_ms": %s, %s"ranks": ['
              % (json.dumps(iteration), window)]
    for i, mr in enumerate(mranks):
        lines.append("    %s%s" % (json.dumps(mr),
                                   "," if i < len(mranks) - 1 else ""))
    lines += ["  ]}", "}"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Write a thermap.job/1 from the rank*.jsonl logs of "
                    "examples/pipeline/train.py.")
    p.add_argument("logdir", metavar="LOGDIR")
    p.add_argument("--name", default=None, help="the job's name (free text)")
    p.add_argument("--nproc-per-node", type=int, default=None,
                   dest="nproc_per_node",
                   help="processes per node (default: the world size)")
    p.add_argument("-o", required=True, dest="out", metavar="JOB.json",
                   help="output file, - for standard output")
    a = p.parse_args(argv)
    try:
        text = build_job(a.logdir, a.name, a.nproc_per_node)
    except Bad as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 1
    if a.out == "-":
        sys.stdout.write(text)
        return 0
    try:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        print("%s: error: %s: cannot write: %s"
              % (PROG, a.out, e.strerror or e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
