#!/bin/sh
# The same bf16 8192x8192 matrix load on GPUs of this machine (the load the
# example scripts profile with). Three ways:
#
#   sh examples/gpu-load.sh SECONDS
#       every GPU for SECONDS, returning when all have finished;
#
#   sh examples/gpu-load.sh --gpus LIST SECONDS
#       only the GPUs of LIST (nvidia-smi indices, comma-separated, e.g.
#       2 or 0,3), e.g. a foreign "noisy neighbour" beside a job; one line
#       on standard error gives each GPU's process id;
#
#   sh examples/gpu-load.sh --phases FILE [--idle S] [--all S] [--each S]
#                           [--tail S]
#       the coupling schedule, which separates each GPU's own heating from
#       the heat its neighbours give it. One worker process per GPU starts
#       first and allocates its matrices; when every worker is ready, all
#       of them follow one schedule of absolute times, decided by one
#       clock: idle for --idle S (default 30), every GPU loaded for --all S
#       (default 40), then for each GPU i in index order every GPU but i
#       for --each S (default 30), then idle for --tail S (default 0). A
#       worker runs the products only while its GPU is in the current
#       phase's loaded set and sleeps in short steps otherwise, so every
#       GPU switches within a few tens of milliseconds of the boundary.
#       With N GPUs the schedule lasts IDLE + ALL + N*EACH + TAIL seconds
#       after the workers' start-up. A phase of 0 s is left out; one of
#       21 s or less never counts in `thermap profile --phases`, which
#       takes a phase's samples from 20 s after it starts (a real run with
#       --idle 20 lost its idle phase so, and with it the coupling fit:
#       fixtures/real/README.md). FILE gets
#       the phases, each line written when its phase has ended; standard
#       error gets, per GPU, the share of each phase its products ran and
#       how late it switched.
#
# The phases file (read by `thermap profile --phases FILE`): text, one
# phase per line, in time order; a line that starts with # is a comment.
# Each line is
#
#   START END LABEL
#
# separated by blanks: START and END in seconds since 1970 (UTC) with three
# decimals, END > START, the boundaries the workers switched at (the
# clock of the process that ran the schedule); LABEL one word naming what
# ran: idle (no GPU loaded; the workers hold their CUDA contexts and
# matrices), all (every GPU loaded), all-but-I (every GPU loaded but the
# one of nvidia-smi index I). For example, on 2 GPUs:
#
#   # thermap phases: start end label (gpu-load.sh --phases)
#   1764072000.000 1764072020.000 idle
#   1764072020.000 1764072060.000 all
#   1764072060.000 1764072090.000 all-but-0
#   1764072090.000 1764072120.000 all-but-1
#   1764072120.000 1764072130.000 idle
#
# When a worker fails during the schedule, the phase it failed in and the
# ones after it are not written (a comment line says why), the other
# workers are stopped and the exit status is 1.
#
# PYTHON names the Python that has PyTorch (default python3). GPUs are
# named by nvidia-smi index (CUDA_DEVICE_ORDER=PCI_BUS_ID). It changes no
# GPU setting: no power limit, clock or reset.
set -eu
PY=${PYTHON:-python3}
USAGE='usage: gpu-load.sh SECONDS | --gpus LIST SECONDS | --phases FILE [--idle S] [--all S] [--each S] [--tail S]'
export CUDA_DEVICE_ORDER=PCI_BUS_ID

# the products of one GPU for S seconds (the first two ways)
load() {  # INDEX SECONDS
	CUDA_VISIBLE_DEVICES=$1 "$PY" -c "
import time, torch
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
t = time.time()
while time.time() - t < $2:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
" &
}

is_seconds() {  # a number of seconds: digits, at most one point
	case $1 in
	'' | . | *[!0-9.]* | *.*.*) return 1 ;;
	esac
	return 0
}

if [ "${1:-}" = --phases ]; then
	[ $# -ge 2 ] || { echo "$USAGE" >&2; exit 2; }
	FILE=$2
	shift 2
	IDLE=30 ALL=40 EACH=30 TAIL=0
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || { echo "gpu-load.sh: $1: expected a value" >&2; exit 2; }
		is_seconds "$2" || { echo "gpu-load.sh: $1 $2: expected seconds" >&2; exit 2; }
		case $1 in
		--idle) IDLE=$2 ;;
		--all) ALL=$2 ;;
		--each) EACH=$2 ;;
		--tail) TAIL=$2 ;;
		*) echo "gpu-load.sh: unknown option $1; $USAGE" >&2; exit 2 ;;
		esac
		shift 2
	done
	# the schedule runs in one Python process (no PyTorch there), which
	# starts the workers (PyTorch, one per GPU) and handles TERM and INT
	PHASES_PY=$(cat <<'PYEOF'
import json, os, re, shutil, signal, subprocess, sys, tempfile, time

PROG = "gpu-load.sh"
LEAD_S = 2.0          # from the last worker's "ready" to the first phase
READY_TIMEOUT_S = 180 # start-up of every worker (imports, CUDA, matrices)

# One worker per GPU: allocate, say ready, then follow the schedule.
WORKER = r'''
import json, os, sys, time
gpu, sched_path, ready_path, done_path = (int(sys.argv[1]), sys.argv[2],
                                          sys.argv[3], sys.argv[4])
ppid = os.getppid()
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = a @ a
torch.cuda.synchronize()
uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
with open(ready_path + ".tmp", "w") as fh:
    fh.write(json.dumps({"pid": os.getpid(),
                         "uuid": None if uuid is None else str(uuid)}) + "\n")
os.replace(ready_path + ".tmp", ready_path)
while not os.path.exists(sched_path):
    if os.getppid() != ppid:
        sys.exit(3)  # the schedule's process is gone
    time.sleep(0.02)
with open(sched_path) as fh:
    sched = json.load(fh)
ph = [(p["start"], p["end"], gpu in p["loaded"]) for p in sched["phases"]]
busy = [0.0] * len(ph)
late = [0.0] * len(ph)
k = 0
while True:
    now = time.time()
    if now >= sched["end"] or os.getppid() != ppid:
        break
    while k < len(ph) and now >= ph[k][1]:
        k += 1
    if k >= len(ph):
        break
    start, end, on = ph[k]
    if now >= start and on:
        if busy[k] == 0.0:
            late[k] = now - start
        for _ in range(10):
            b = a @ a
        torch.cuda.synchronize()
        busy[k] += time.time() - now
    else:
        # a loaded phase's products ended after its end: that lag
        if k > 0 and ph[k - 1][2] and not on and late[k] == 0.0:
            late[k] = max(0.0, now - start)
        nxt = start if now < start else end
        time.sleep(max(0.001, min(0.05, nxt - now)))
with open(done_path + ".tmp", "w") as fh:
    fh.write(json.dumps({"busy": [round(x / (p[1] - p[0]), 4)
                                  for x, p in zip(busy, ph)],
                         "late": [round(x, 4) for x in late]}) + "\n")
os.replace(done_path + ".tmp", done_path)
'''


class Stop(Exception):
    pass


def on_signal(sig, frame):
    raise Stop("signal %d" % sig)


def say(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


def hexkey(u):
    """The 32 hex digits of a GPU UUID, or None."""
    s = str(u).strip().lower()
    if s[:4] in ("gpu-", "mig-"):
        s = s[4:]
    s = re.sub(r"[^0-9a-f]", "", s)
    return s if len(s) == 32 else None


def gpus():
    """[(index, uuid)] as nvidia-smi lists them."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid",
                          "--format=csv,noheader"], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True)
    res = []
    for line in out.stdout.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 2 and f[0].isdigit():
            res.append((int(f[0]), f[1]))
    if not res:
        raise SystemExit("%s: error: nvidia-smi lists no GPU" % PROG)
    return sorted(res)


def main():
    out_path = sys.argv[1]
    idle, all_s, each, tail = (float(x) for x in sys.argv[2:6])
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # the phases file first: a path that cannot be written fails before
    # any GPU work
    try:
        out = open(out_path, "w")
    except OSError as e:
        say("error: %s: cannot write: %s" % (out_path, e.strerror or e))
        return 2
    out.write("# thermap phases: start end label (gpu-load.sh --phases)\n")
    out.flush()
    tmp = tempfile.mkdtemp(prefix="gpu-load-")
    sched_path = os.path.join(tmp, "schedule.json")
    procs = {}
    failed = False
    try:
        listed = gpus()
        env = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID")
        for i, _ in listed:
            env["CUDA_VISIBLE_DEVICES"] = str(i)
            procs[i] = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(i), sched_path,
                 os.path.join(tmp, "ready-%d" % i),
                 os.path.join(tmp, "done-%d" % i)], env=env)
        say("%d worker(s) started (GPU %s); waiting until each is ready"
            % (len(procs), ",".join(str(i) for i, _ in listed)))
        t_wait = time.time()
        while True:
            for i, p in procs.items():
                if p.poll() is not None:
                    raise SystemExit("%s: error: the worker of GPU %d exited "
                                     "with status %s before it was ready"
                                     % (PROG, i, p.returncode))
            if all(os.path.exists(os.path.join(tmp, "ready-%d" % i))
                   for i in procs):
                break
            if time.time() - t_wait > READY_TIMEOUT_S:
                raise SystemExit("%s: error: the workers were not ready "
                                 "after %d s" % (PROG, READY_TIMEOUT_S))
            time.sleep(0.1)
        for i, uuid in listed:
            with open(os.path.join(tmp, "ready-%d" % i)) as fh:
                r = json.load(fh)
            got = hexkey(r.get("uuid"))
            if got is None:
                say("GPU %d: worker pid %s; PyTorch gave no UUID to check "
                    "(%r)" % (i, r.get("pid"), r.get("uuid")))
            elif got != hexkey(uuid):
                raise SystemExit("%s: error: the worker for nvidia-smi GPU %d "
                                 "(%s) runs on GPU %s" % (PROG, i, uuid,
                                                          r.get("uuid")))
            else:
                say("GPU %d: worker pid %s on %s" % (i, r.get("pid"), uuid))
        say("ready after %.1f s" % (time.time() - t_wait))

        every = [i for i, _ in listed]
        plan = [("idle", idle, []), ("all", all_s, every)]
        plan += [("all-but-%d" % i, each, [g for g in every if g != i])
                 for i in every]
        plan += [("idle", tail, [])]
        t = round(time.time() + LEAD_S, 3)
        phases = []
        for label, sec, loaded in plan:
            if sec > 0:
                phases.append({"label": label, "start": t,
                               "end": round(t + sec, 3), "loaded": loaded})
                t = round(t + sec, 3)
        if not phases:
            raise SystemExit("%s: error: every phase lasts 0 s" % PROG)
        end = phases[-1]["end"]
        with open(sched_path + ".tmp", "w") as fh:
            json.dump({"phases": phases, "end": end}, fh)
        os.replace(sched_path + ".tmp", sched_path)
        say("schedule: %s; %.0f s from %s UTC"
            % (", ".join("%s %gs" % (p["label"], p["end"] - p["start"])
                         for p in phases), end - phases[0]["start"],
               time.strftime("%H:%M:%S", time.gmtime(phases[0]["start"]))))

        for p in phases:
            while time.time() < p["end"]:
                # a worker ends with status 0 only at the schedule's end
                dead = [i for i, q in procs.items() if q.poll() is not None
                        and (q.returncode != 0 or time.time() < end - 0.5)]
                if dead:
                    i = dead[0]
                    out.write("# the worker of GPU %d exited with status %s "
                              "at %.3f, during this phase: %.3f %.3f %s; "
                              "the schedule stopped there\n"
                              % (i, procs[i].returncode, time.time(),
                                 p["start"], p["end"], p["label"]))
                    out.flush()
                    raise SystemExit("%s: error: the worker of GPU %d exited "
                                     "with status %s during phase %s"
                                     % (PROG, i, procs[i].returncode,
                                        p["label"]))
                time.sleep(max(0.0, min(0.2, p["end"] - time.time())))
            out.write("%.3f %.3f %s\n" % (p["start"], p["end"], p["label"]))
            out.flush()
            say("phase %s done" % p["label"])

        deadline = time.time() + 60
        for i, q in procs.items():
            try:
                rc = q.wait(max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                say("the worker of GPU %d did not exit; stopping it" % i)
                failed = True
                continue
            if rc != 0:
                say("the worker of GPU %d exited with status %d" % (i, rc))
                failed = True
        for i in procs:
            try:
                with open(os.path.join(tmp, "done-%d" % i)) as fh:
                    d = json.load(fh)
            except (OSError, ValueError):
                say("GPU %d: no report from its worker" % i)
                failed = True
                continue
            say("GPU %d: share of each phase busy: %s; switched late by at "
                "most %.3f s"
                % (i, ", ".join("%s %.2f" % (p["label"], b)
                                for p, b in zip(phases, d["busy"])),
                   max(d["late"] or [0.0])))
    except Stop as e:
        out.write("# stopped by %s at %.3f\n" % (e, time.time()))
        say("stopped by %s" % e)
        failed = True
    except SystemExit as e:
        if e.code not in (None, 0):
            print(e.code, file=sys.stderr, flush=True)
        failed = True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for q in procs.values():
            if q.poll() is None:
                q.terminate()
        for q in procs.values():
            try:
                q.wait(15)
            except subprocess.TimeoutExpired:
                q.kill()
                q.wait()
        out.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


sys.exit(main())
PYEOF
)
	exec "$PY" -c "$PHASES_PY" "$FILE" "$IDLE" "$ALL" "$EACH" "$TAIL"
fi

PIDS=
# a TERM or INT (the caller stopping a background load) stops the loads too
# shellcheck disable=SC2317  # (called by the traps)
stop() {  # the exit status of a shell stopped by signal $1
	trap - TERM INT
	# shellcheck disable=SC2086
	[ -z "$PIDS" ] || kill $PIDS 2>/dev/null
	exit "$1"
}
trap 'stop 143' TERM
trap 'stop 130' INT
if [ "${1:-}" = --gpus ]; then
	[ $# -eq 3 ] || { echo "$USAGE" >&2; exit 2; }
	LIST=$2
	S=$3
	NGPU=$(nvidia-smi -L | grep -c '^GPU ')
	case $LIST in
	'' | ,* | *, | *,,* | *[!0-9,]*)
		echo "gpu-load.sh: --gpus $LIST: expected nvidia-smi indices separated by commas" >&2
		exit 2 ;;
	esac
	GPUS=$(echo "$LIST" | tr ',' ' ')
	for i in $GPUS; do
		[ "$i" -lt "$NGPU" ] || {
			echo "gpu-load.sh: --gpus $LIST: GPU $i, but nvidia-smi lists $NGPU GPU(s)" >&2
			exit 2
		}
	done
else
	[ $# -eq 1 ] || { echo "$USAGE" >&2; exit 2; }
	S=$1
	NGPU=$(nvidia-smi -L | grep -c '^GPU ')
	GPUS=
	i=0
	while [ $i -lt "$NGPU" ]; do
		GPUS="$GPUS $i"
		i=$((i + 1))
	done
fi
is_seconds "$S" || { echo "gpu-load.sh: $S: expected seconds; $USAGE" >&2; exit 2; }
for i in $GPUS; do
	load "$i" "$S"
	PIDS="$PIDS $!"
	[ "${1:-}" != --gpus ] || echo "gpu-load.sh: GPU $i: pid $!" >&2
done
rc=0
for p in $PIDS; do
	wait "$p" || rc=1
done
exit $rc
