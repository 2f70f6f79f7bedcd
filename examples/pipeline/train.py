#!/usr/bin/env python3
"""A small pipeline-parallel training program for thermap (tp=1).

Launched by torchrun, one process per GPU (see README.md in this folder):

    torchrun ... examples/pipeline/train.py --out-dir LOGDIR [--plan PLANDIR] \
        [--pp 2] [--dp 2] [--layers 8,8] [--hidden 4096] [--ffn 16384] \
        [--vocab 131072] [--seq 2048] [--micro-batch 1] [--microbatches 8] \
        [--iters 30] [--warmup 5] [--seconds S] [--lr 1e-4]

Ranks are laid out as Megatron-Core does with the order tp-cp-ep-dp-pp and
tp = cp = ep = 1: dp_rank = rank % dp, pp_rank = rank // dp. Pipeline stage
s = pp_rank holds layers[s] MLP blocks (LayerNorm, Linear hidden->ffn, GELU,
Linear ffn->hidden, residual; bf16); stage 0 also holds the token embedding,
the last stage the final LayerNorm, the LM head (hidden x vocab) and the
cross-entropy loss on synthetic tokens. The pipeline runs the 1F1B schedule
with batched NCCL point-to-point operations between neighbouring stages of
one data-parallel replica; after it, every stage all-reduces its gradients
over its data-parallel group and takes a plain SGD step.

Each rank writes LOGDIR/rank<R>.jsonl: a "start" record, one "iter" record
per iteration (forward and backward compute time of this rank, summed over
the microbatches and measured with CUDA events around the compute only; the
step wall time around the whole iteration, and its start and end on the
wall clock, t and t_end in seconds since 1970), and an "end" record with
medians. With --plan, the rank checks before any NCCL work that it runs on
the GPU that the thermap plan gives it and that the plan's job matches the
arguments, and exits with status 3 if not.

The program changes no GPU setting. It keeps NCCL_NVLS_ENABLE=0.
"""
import argparse
import json
import math
import os
import re
import socket
import statistics
import sys
import time
import uuid as uuidlib
from collections import deque

PROG = "train.py"
EXIT_PLAN = 3
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                     r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def fail(msg, code=2):
    print("%s: error: %s" % (PROG, msg), file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Pipeline-parallel (1F1B, tp=1) example for thermap; "
                    "run it under torchrun.")
    p.add_argument("--pp", type=int, default=2, help="pipeline stages")
    p.add_argument("--dp", type=int, default=2,
                   help="data-parallel replicas; WORLD_SIZE must be pp*dp")
    p.add_argument("--layers", default="8,8",
                   help="MLP blocks per stage, comma separated, one number "
                        "per stage (a single number is used for every stage)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=None,
                   help="MLP inner size (default 4*hidden)")
    p.add_argument("--vocab", type=int, default=131072)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=1, dest="micro_batch",
                   help="sequences per microbatch")
    p.add_argument("--microbatches", type=int, default=8,
                   help="microbatches per iteration")
    p.add_argument("--iters", type=int, default=30,
                   help="measured iterations after the warm-up")
    p.add_argument("--warmup", type=int, default=5,
                   help="warm-up iterations (logged with warmup=true)")
    p.add_argument("--seconds", type=float, default=None,
                   help="instead of --iters: run measured iterations until "
                        "this many seconds have passed after the warm-up")
    p.add_argument("--lr", type=float, default=1e-4, help="SGD learning rate")
    p.add_argument("--out-dir", dest="log", required=True, metavar="DIR",
                   help="directory for rank<R>.jsonl")
    p.add_argument("--plan", default=None, metavar="DIR",
                   help="a thermap plan directory (with plan.json) to check "
                        "this rank's GPU and the job against")
    a = p.parse_args(argv)
    if a.ffn is None:
        a.ffn = 4 * a.hidden
    for name in ("pp", "dp", "hidden", "ffn", "vocab", "seq", "micro_batch",
                 "microbatches"):
        if getattr(a, name) < 1:
            fail("--%s must be at least 1" % name.replace("_", "-"))
    if a.iters < 1:
        fail("--iters must be at least 1")
    if a.warmup < 0:
        fail("--warmup must be at least 0")
    if a.seconds is not None and not (a.seconds > 0 and
                                      math.isfinite(a.seconds)):
        fail("--seconds must be a number above 0")
    try:
        layers = [int(x) for x in a.layers.split(",")]
    except ValueError:
        fail("--layers %r: expected whole numbers separated by commas"
             % a.layers)
    if len(layers) == 1:
        layers = layers * a.pp
    if len(layers) != a.pp:
        fail("--layers %s has %d entries; expected one per stage (--pp %d)"
             % (a.layers, len(layers), a.pp))
    for s, n in enumerate(layers):
        if n < 0:
            fail("--layers: stage %d has %d layers" % (s, n))
        if n == 0 and 0 < s < a.pp - 1:
            fail("--layers: middle stage %d has no layers and would do "
                 "no work" % s)
    a.layer_list = layers
    return a


def env_int(name):
    v = os.environ.get(name)
    if v is None:
        fail("%s is not set; launch this program with torchrun" % name)
    try:
        return int(v)
    except ValueError:
        fail("%s=%r is not an integer" % (name, v))


def format_gpu_uuid(props):
    """The device's UUID as nvidia-smi writes it: GPU-xxxxxxxx-xxxx-..."""
    raw = getattr(props, "uuid", None)
    if raw is None:
        return None
    s = str(raw).strip()
    if s[:4].upper() in ("GPU-", "MIG-"):
        return s[:4].upper() + s[4:].lower()
    if UUID_RE.match(s):
        return "GPU-" + s.lower()
    b = getattr(raw, "bytes", None)
    if b is not None:
        try:
            return "GPU-" + str(uuidlib.UUID(bytes=bytes(b)))
        except (TypeError, ValueError):
            pass
    return "GPU-" + s


def uuid_key(u):
    """Compare UUIDs without case and without the GPU-/MIG- prefix."""
    u = str(u).strip().lower()
    if u[:4] in ("gpu-", "mig-"):
        u = u[4:]
    return u


class Log:
    def __init__(self, path):
        self.fh = open(path, "w")

    def write(self, obj):
        self.fh.write(json.dumps(obj) + "\n")
        self.fh.flush()

    def close(self):
        self.fh.close()


def check_plan(plan_dir, a, rank, world, local_rank, dp_rank, pp_rank,
               gpu_uuid):
    """Returns (errors, warnings): lists of one-line strings."""
    errors, warnings = [], []
    path = os.path.join(plan_dir, "plan.json")
    try:
        with open(path) as fh:
            plan = json.load(fh)
    except (OSError, ValueError) as e:
        return ["cannot read %s: %s" % (path, e)], warnings
    if not isinstance(plan, dict):
        return ["%s: not a JSON object" % path], warnings
    fmt = plan.get("format")
    if not (isinstance(fmt, str) and fmt.startswith("thermap.plan/1")):
        errors.append("%s: format is %r; expected thermap.plan/1"
                      % (path, fmt))
        return errors, warnings

    # the plan id that the env file exports
    want_id = plan.get("id")
    got_id = os.environ.get("THERMAP_PLAN")
    if got_id != want_id:
        errors.append("THERMAP_PLAN: expected %r (plan.json id), got %r "
                      "(was the plan's env file sourced with set -a?)"
                      % (want_id, got_id))

    # the job the plan was made for
    job = plan.get("job")
    if not isinstance(job, dict):
        errors.append("%s: no job object" % path)
        return errors, warnings
    expect = [("world", world), ("dp", a.dp), ("pp", a.pp), ("tp", 1),
              ("cp", 1), ("ep", 1), ("vpp", 1)]
    for key, got in expect:
        want = job.get(key, 1 if key in ("tp", "cp", "ep", "vpp") else None)
        if want != got:
            errors.append("plan job %s: the plan has %r, this run has %r"
                          % (key, want, got))
    lws = os.environ.get("LOCAL_WORLD_SIZE")
    npn = job.get("nproc_per_node")
    if lws is not None and npn is not None and str(npn) != lws:
        errors.append("plan job nproc_per_node: the plan has %r, torchrun "
                      "runs %s processes per node" % (npn, lws))
    if job.get("microbatches") not in (None, a.microbatches):
        warnings.append("the plan's job has %r microbatches, this run %d; "
                        "the plan's predictions do not apply exactly"
                        % (job.get("microbatches"), a.microbatches))

    # this rank's entry
    entry = None
    for r in plan.get("ranks") or []:
        if isinstance(r, dict) and r.get("rank") == rank:
            entry = r
            break
    if entry is None:
        errors.append("%s: no entry for rank %d in ranks[]" % (path, rank))
        return errors, warnings
    for key, got in (("local_rank", local_rank), ("dp", dp_rank),
                     ("pp", pp_rank)):
        if entry.get(key) != got:
            errors.append("ranks[].%s: the plan has %r, this process has %r"
                          % (key, entry.get(key), got))

    # the GPU itself, by UUID when the plan knows it
    want_uuid = entry.get("uuid")
    uuid_checked = False
    if want_uuid is not None:
        if gpu_uuid is None:
            errors.append("GPU: expected %s (plan, GPU index %r), but this "
                          "PyTorch does not report the device UUID"
                          % (want_uuid, entry.get("gpu_index")))
        elif uuid_key(want_uuid) != uuid_key(gpu_uuid):
            errors.append("GPU: expected %s (plan, GPU index %r), got %s"
                          % (want_uuid, entry.get("gpu_index"), gpu_uuid))
        else:
            uuid_checked = True

    # CUDA_VISIBLE_DEVICES as the plan's env file sets it for this node: the
    # only check of the GPU when the plan has no UUID for it
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    for n in plan.get("nodes") or []:
        if isinstance(n, dict) and n.get("node_rank") == entry.get(
                "node_rank"):
            want = n.get("cuda_visible_devices")
            if want is not None and (cvd or "").strip() != str(want).strip():
                msg = ("CUDA_VISIBLE_DEVICES: expected %r (plan node rank "
                       "%r), got %r" % (want, entry.get("node_rank"), cvd))
                if uuid_checked:
                    warnings.append(msg + "; this rank's GPU is the planned "
                                    "one all the same")
                else:
                    errors.append(msg)
            break
    if want_uuid is None:
        warnings.append("the plan names no UUID for rank %d (GPU index %r); "
                        "the GPU is checked only through "
                        "CUDA_VISIBLE_DEVICES" % (rank, entry.get("gpu_index")))
    return errors, warnings


def main():
    # before anything touches NCCL
    nvls = os.environ.get("NCCL_NVLS_ENABLE")
    if nvls is None:
        os.environ["NCCL_NVLS_ENABLE"] = "0"
    elif nvls.strip() != "0":
        print("%s: warning: NCCL_NVLS_ENABLE=%s in the environment; this "
              "example expects NCCL_NVLS_ENABLE=0" % (PROG, nvls),
              file=sys.stderr, flush=True)

    a = parse_args()
    rank = env_int("RANK")
    world = env_int("WORLD_SIZE")
    local_rank = env_int("LOCAL_RANK")
    if not (0 <= rank < world) or local_rank < 0:
        fail("RANK %d, LOCAL_RANK %d and WORLD_SIZE %d do not fit together"
             % (rank, local_rank, world))
    if world != a.pp * a.dp:
        fail("WORLD_SIZE is %d but --pp %d x --dp %d = %d"
             % (world, a.pp, a.dp, a.pp * a.dp))
    dp_rank = rank % a.dp
    pp_rank = rank // a.dp
    first = pp_rank == 0
    last = pp_rank == a.pp - 1
    prev_rank = rank - a.dp if not first else None
    next_rank = rank + a.dp if not last else None

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        fail("rank %d: CUDA is not available" % rank)
    ndev = torch.cuda.device_count()
    if local_rank >= ndev:
        fail("rank %d: LOCAL_RANK %d but only %d visible CUDA devices "
             "(CUDA_VISIBLE_DEVICES=%r)"
             % (rank, local_rank, ndev,
                os.environ.get("CUDA_VISIBLE_DEVICES")))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    props = torch.cuda.get_device_properties(dev)
    gpu_uuid = format_gpu_uuid(props)
    dtype = torch.bfloat16
    act_bytes = a.micro_batch * a.seq * a.hidden * 2  # bf16
    act_mib = act_bytes / float(1 << 20)

    os.makedirs(a.log, exist_ok=True)
    log = Log(os.path.join(a.log, "rank%d.jsonl" % rank))
    log.write({
        "kind": "start", "rank": rank, "world": world,
        "local_rank": local_rank, "dp_rank": dp_rank, "pp_rank": pp_rank,
        "stage": pp_rank, "dp": a.dp, "pp": a.pp, "layers": a.layer_list,
        "stage_layers": a.layer_list[pp_rank], "hidden": a.hidden,
        "ffn": a.ffn, "vocab": a.vocab, "seq": a.seq,
        "micro_batch": a.micro_batch, "microbatches": a.microbatches,
        "warmup_iters": a.warmup,
        "iters": None if a.seconds is not None else a.iters,
        "seconds": a.seconds, "gpu_uuid": gpu_uuid,
        "gpu_name": str(props.name),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "thermap_plan": os.environ.get("THERMAP_PLAN"),
        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
        "host": socket.gethostname(), "act_mib": act_mib,
        "torch": str(torch.__version__), "pid": os.getpid(),
    })

    if a.plan is not None:
        errors, warnings = check_plan(a.plan, a, rank, world, local_rank,
                                      dp_rank, pp_rank, gpu_uuid)
        for w in warnings:
            print("%s: warning: rank %d: %s" % (PROG, rank, w),
                  file=sys.stderr, flush=True)
        if errors:
            for e in errors:
                print("%s: PLAN MISMATCH: rank %d (local rank %d, GPU %s): %s"
                      % (PROG, rank, local_rank, gpu_uuid, e),
                      file=sys.stderr, flush=True)
            log.write({"kind": "error", "rank": rank, "plan": a.plan,
                       "errors": errors})
            log.close()
            sys.exit(EXIT_PLAN)
        log.write({"kind": "plan", "rank": rank, "plan": a.plan,
                   "id": os.environ.get("THERMAP_PLAN"), "ok": True,
                   "warnings": warnings})

    dist.init_process_group(backend="nccl", device_id=dev)
    if dist.get_rank() != rank or dist.get_world_size() != world:
        fail("the process group says rank %d of %d; RANK/WORLD_SIZE say "
             "%d of %d" % (dist.get_rank(), dist.get_world_size(), rank,
                           world))
    # one data-parallel group per stage; every rank creates all of them in
    # the same order
    dp_group = None
    if a.dp > 1:
        for s in range(a.pp):
            ranks = [s * a.dp + d for d in range(a.dp)]
            g = dist.new_group(ranks=ranks)
            if s == pp_rank:
                dp_group = g
    # a first collective over everybody, so that the batched P2P calls that
    # follow (each between two ranks only) are not the first NCCL call
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    if int(t.item()) != world:
        fail("rank %d: warm-up all_reduce gave %r, expected %d"
             % (rank, t.item(), world))

    # ----- model of this stage -----
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(a.hidden, device=dev, dtype=dtype)
            self.fc1 = nn.Linear(a.hidden, a.ffn, device=dev, dtype=dtype)
            self.fc2 = nn.Linear(a.ffn, a.hidden, device=dev, dtype=dtype)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(self.norm(x))))

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = (nn.Embedding(a.vocab, a.hidden, device=dev,
                                       dtype=dtype) if first else None)
            self.blocks = nn.ModuleList(
                [Block() for _ in range(a.layer_list[pp_rank])])
            self.final_norm = (nn.LayerNorm(a.hidden, device=dev, dtype=dtype)
                               if last else None)
            self.head = (nn.Linear(a.hidden, a.vocab, bias=False, device=dev,
                                   dtype=dtype) if last else None)

        def forward(self, x):
            if self.embed is not None:
                x = self.embed(x)
            for b in self.blocks:
                x = b(x)
            if self.head is not None:
                x = self.head(self.final_norm(x))
            return x

    torch.manual_seed(1234 + pp_rank)  # the same weights in every replica
    model = Stage()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=a.lr)

    # synthetic tokens, the same for every iteration; one fixed seed per
    # replica, so that the first and the last stage of a replica agree
    m = a.microbatches
    gen = torch.Generator(device=dev)
    gen.manual_seed(1000 + dp_rank)
    data = torch.randint(0, a.vocab, (m, a.micro_batch, a.seq + 1),
                         generator=gen, device=dev, dtype=torch.long)
    tokens = data[:, :, :-1].contiguous()
    targets = data[:, :, 1:].contiguous()
    del data
    act_shape = (a.micro_batch, a.seq, a.hidden)

    # ----- point-to-point between neighbouring stages -----
    def p2p(send_prev=None, recv_prev=False, send_next=None, recv_next=False):
        ops = []
        got_prev = got_next = None
        if send_prev is not None:
            send_prev = send_prev.contiguous()
            ops.append(dist.P2POp(dist.isend, send_prev, prev_rank))
        if recv_prev:
            got_prev = torch.empty(act_shape, dtype=dtype, device=dev)
            ops.append(dist.P2POp(dist.irecv, got_prev, prev_rank))
        if send_next is not None:
            send_next = send_next.contiguous()
            ops.append(dist.P2POp(dist.isend, send_next, next_rank))
        if recv_next:
            got_next = torch.empty(act_shape, dtype=dtype, device=dev)
            ops.append(dist.P2POp(dist.irecv, got_next, next_rank))
        if ops:
            for req in dist.batch_isend_irecv(ops):
                req.wait()  # the current stream waits; the CPU goes on
        return got_prev, got_next

    def recv_forward():
        if first:
            return None
        x, _ = p2p(recv_prev=True)
        return x.requires_grad_()

    def send_forward(out):
        if not last:
            p2p(send_next=out.detach())

    def send_forward_recv_backward(out):
        if last:
            return None
        _, g = p2p(send_next=out.detach(), recv_next=True)
        return g

    def send_backward_recv_forward(grad_in):
        if first:
            return None
        x, _ = p2p(send_prev=grad_in, recv_prev=True)
        return x.requires_grad_()

    def send_backward(grad_in):
        if not first:
            p2p(send_prev=grad_in)

    def recv_backward():
        if last:
            return None
        _, g = p2p(recv_next=True)
        return g

    def event():
        return torch.cuda.Event(enable_timing=True)

    def run_pipeline():
        """One iteration of 1F1B. Returns (fwd events, bwd events, losses)."""
        fwd_ev, bwd_ev, losses = [], [], []
        inputs, outputs = deque(), deque()
        count = [0]

        def forward_step(inp):
            k = count[0]
            count[0] += 1
            s, e = event(), event()
            s.record()
            x = model(tokens[k] if first else inp)
            if last:
                out = F.cross_entropy(x.float().view(-1, a.vocab),
                                      targets[k].view(-1)) / m
            else:
                out = x
            e.record()
            fwd_ev.append((s, e))
            inputs.append(inp)
            outputs.append(out)
            if last:
                losses.append(out.detach())
            return out

        def backward_step(grad_out):
            inp = inputs.popleft()
            out = outputs.popleft()
            s, e = event(), event()
            s.record()
            if last:
                torch.autograd.backward(out)
            else:
                torch.autograd.backward(out, grad_tensors=grad_out)
            e.record()
            bwd_ev.append((s, e))
            return None if inp is None else inp.grad

        warm = min(a.pp - pp_rank - 1, m)
        steady = m - warm
        for _ in range(warm):
            out = forward_step(recv_forward())
            send_forward(out)
        inp = recv_forward() if steady > 0 else None
        for i in range(steady):
            out = forward_step(inp)
            grad_out = send_forward_recv_backward(out)
            grad_in = backward_step(grad_out)
            if i == steady - 1:
                inp = None
                send_backward(grad_in)
            else:
                inp = send_backward_recv_forward(grad_in)
        for _ in range(warm):
            grad_in = backward_step(recv_backward())
            send_backward(grad_in)
        return fwd_ev, bwd_ev, losses

    def train_step():
        fwd_ev, bwd_ev, losses = run_pipeline()
        if a.dp > 1:
            for p in params:
                if p.grad is not None:
                    dist.all_reduce(p.grad, op=dist.ReduceOp.SUM,
                                    group=dp_group)
                    p.grad.div_(a.dp)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return fwd_ev, bwd_ev, losses

    # ----- iterations -----
    fwd_all, bwd_all, step_all = [], [], []
    it = 0
    measured = 0
    t_measure = None
    last_loss = None
    while True:
        warm_it = it < a.warmup
        if not warm_it and a.seconds is None and measured >= a.iters:
            break
        if not warm_it and t_measure is None:
            t_measure = time.perf_counter()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        wall0 = time.time()
        fwd_ev, bwd_ev, losses = train_step()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        wall1 = time.time()
        fwd_ms = sum(s.elapsed_time(e) for s, e in fwd_ev)
        bwd_ms = sum(s.elapsed_time(e) for s, e in bwd_ev)
        step_ms = (t1 - t0) * 1000.0
        rec = {"kind": "iter", "iter": it, "fwd_ms": round(fwd_ms, 4),
               "bwd_ms": round(bwd_ms, 4), "step_ms": round(step_ms, 4),
               "warmup": warm_it, "t": round(wall0, 3),
               "t_end": round(wall1, 3)}
        if last:
            last_loss = float(sum(l.item() for l in losses))
            rec["loss"] = last_loss
        log.write(rec)
        if not warm_it:
            fwd_all.append(fwd_ms)
            bwd_all.append(bwd_ms)
            step_all.append(step_ms)
            measured += 1
        if rank == 0 and (it < a.warmup + 1 or it % 10 == 0):
            print("%s: iter %d%s: step %.1f ms, fwd %.1f ms, bwd %.1f ms "
                  "(rank 0)" % (PROG, it, " (warm-up)" if warm_it else "",
                                step_ms, fwd_ms, bwd_ms), flush=True)
        it += 1
        if a.seconds is not None and not warm_it:
            # every rank must stop after the same iteration: agree on it
            done = time.perf_counter() - t_measure >= a.seconds
            flag = torch.tensor([1 if done else 0], dtype=torch.int32,
                                device=dev)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if int(flag.item()) != 0:
                break

    wall_s = time.perf_counter() - t_measure if t_measure else 0.0

    def med(xs):
        return round(statistics.median(xs), 4) if xs else None

    end = {"kind": "end", "rank": rank, "stage": pp_rank, "iters": measured,
           "measured_s": round(wall_s, 3),
           "fwd_ms": med(fwd_all), "bwd_ms": med(bwd_all),
           "step_ms": med(step_all),
           "fwd_ms_per_microbatch": med([x / m for x in fwd_all]),
           "bwd_ms_per_microbatch": med([x / m for x in bwd_all]),
           "peak_mem_gib": round(torch.cuda.max_memory_reserved(dev)
                                 / float(1 << 30), 3),
           "peak_alloc_gib": round(torch.cuda.max_memory_allocated(dev)
                                   / float(1 << 30), 3)}
    if last:
        end["loss"] = last_loss
    log.write(end)
    log.close()
    if rank == 0:
        print("%s: done: %d measured iterations in %.1f s; rank 0 median "
              "step %.1f ms, fwd %.1f ms, bwd %.1f ms; logs in %s"
              % (PROG, measured, wall_s, end["step_ms"] or 0.0,
                 end["fwd_ms"] or 0.0, end["bwd_ms"] or 0.0, a.log),
              flush=True)

    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
