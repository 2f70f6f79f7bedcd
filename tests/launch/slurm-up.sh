#!/bin/sh
# slurm-up.sh - start or stop a private Slurm cluster on this host for tests.
#
#   sh tests/launch/slurm-up.sh start DIR   # prints "export ..." lines for eval
#   sh tests/launch/slurm-up.sh stop DIR
#
# "start" writes everything into DIR (an empty directory the caller owns):
# a fresh munge key and its own munged (socket DIR/munge.socket), slurm.conf
# and gres.conf, then starts munged, slurmctld and slurmd and waits (at most
# 30 s) for the nodes to be idle. The nodes are this host (hostname -s), or
# the names in SLURM_UP_NODES, each a slurmd of its own on this host
# (slurmd -N), so that a plan of several hosts can be launched here; each
# has 4 GPUs backed by placeholders DIR/dev/nvidia0..3, in one partition
# "debug".
# The placeholders are links to /dev/null: slurmd drops a GPU whose file is
# not a character device, and srun then sets no CUDA_VISIBLE_DEVICES.
# Callers must export what it prints (SLURM_CONF; munge's socket is named in
# slurm.conf). "stop" kills the daemons whose pid files are in DIR.
# Call it with sh; do not source it (it exits).
#
# Needs: munged, mungekey (or dd), slurmctld, slurmd, sinfo, run as root
# (SlurmUser=root). Optional environment: SLURM_UP_NODES (node names,
# default this host's), SLURM_UP_PORT (slurmctld port; the slurmds use the
# next ones; default: free ones from 20000-39999) and
# SLURM_UP_CPUS (CPUs of the node; default: nproc, but at least 4 so that
# one task per GPU fits; slurmd is told to believe the configured value).
#
# Exit status: 0 ok, 77 this machine cannot run it (missing binary or a
# daemon refused to start for a reason of the sandbox), other: real failure.

set -u

die() { echo "slurm-up: $2" >&2; exit "$1"; }

[ $# -eq 2 ] || die 2 "usage: $0 start|stop DIR"
D=$2
[ -d "$D" ] || die 2 "no such directory: $D"
D=$(cd "$D" && pwd) || exit 2

stop() {
    ps=
    for f in "$D"/slurmd-*.pid "$D/slurmctld.pid" "$D/munged.pid"; do
        # Only a process whose command line names DIR.
        p=$(cat "$f" 2>/dev/null) && [ -n "$p" ] &&
            { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF "$D/" &&
            kill "$p" 2>/dev/null && ps="$ps $p"
        rm -f "$f"
    done
    # They exit within about 2 s; after 10 s, use force.
    i=0
    for p in $ps; do
        while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1; i=$((i + 1))
        done
        kill -9 "$p" 2>/dev/null
    done
    return 0
}

# A daemon did not come up: 77 if its log blames the sandbox, else 1.
refused() {
    line=$(grep -iE 'error|fatal' "$D/$1.log" 2>/dev/null | tail -n 1)
    [ -n "$line" ] || line=$(tail -n 1 "$D/$1.log" 2>/dev/null)
    stop
    if printf '%s\n' "$line" | grep -qiE 'not permitted|permission denied|cgroup|read-only file system|not implemented|not supported|capabilit|mlock|rlimit'
    then die 77 "$1 refused to start: $line"
    fi
    die 1 "$1 failed to start: $line"
}

# Is TCP port $1 listening (IPv4 or IPv6)?
busy() {
    h=$(printf '%04X' "$1")
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
        awk -v h=":$h" '$4 == "0A" && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }'
}

case $1 in
stop) stop; exit 0 ;;
start) ;;
*) die 2 "usage: $0 start|stop DIR" ;;
esac

for b in munged slurmctld slurmd sinfo srun hostname nproc awk; do
    command -v $b >/dev/null 2>&1 || die 77 "required program not found: $b"
done
[ "$(id -u)" -eq 0 ] || die 77 "must run as root (SlurmUser=root)"

H=$(hostname -s)
NODES=${SLURM_UP_NODES:-$H}
N=$(echo "$NODES" | wc -w)
CPUS=${SLURM_UP_CPUS:-$(nproc)}
[ "$CPUS" -ge 4 ] || CPUS=4
if [ -n "${SLURM_UP_PORT:-}" ]; then
    P=$SLURM_UP_PORT
else
    P=$((20000 + $$ % 1000 * 16))
    while busy $P || busy $((P + 1)) || busy $((P + N)); do
        P=$((P + 16)); [ $P -lt 40000 ] || P=20000
    done
fi

if [ -e "$D/slurm.conf" ] || [ -e "$D/munged.pid" ]; then
    die 2 "$D already holds a cluster; give an empty directory"
fi
mkdir -p "$D/dev" "$D/state" "$D/spool" || exit 1
chmod 0700 "$D"
for i in 0 1 2 3; do ln -sf /dev/null "$D/dev/nvidia$i"; done

# munge: own key, socket, pid, log and seed files.
if command -v mungekey >/dev/null 2>&1; then
    mungekey -c -f -k "$D/munge.key" || exit 1
else
    dd if=/dev/urandom of="$D/munge.key" bs=1024 count=1 2>/dev/null || exit 1
fi
chmod 0400 "$D/munge.key"
munged -f --socket="$D/munge.socket" --key-file="$D/munge.key" \
    --pid-file="$D/munged.pid" --log-file="$D/munged.log" \
    --seed-file="$D/munged.seed" </dev/null >/dev/null 2>>"$D/munged.log" ||
    refused munged

cat > "$D/slurm.conf" <<CONF
ClusterName=slurmup
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$P
SlurmdPort=$((P + 1))
AuthType=auth/munge
AuthInfo=socket=$D/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd-%n.log
PlugStackConfig=$D/plugstack.conf
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
CONF
i=0
for n in $NODES; do
    i=$((i + 1))
    echo "NodeName=$n NodeHostname=$H NodeAddr=127.0.0.1 Port=$((P + i)) CPUs=$CPUS RealMemory=1000 Gres=gpu:4 State=UNKNOWN" >> "$D/slurm.conf"
    mkdir -p "$D/spool/$n"
done
echo "PartitionName=debug Nodes=$(echo "$NODES" | tr ' ' ,) Default=YES MaxTime=INFINITE State=UP" >> "$D/slurm.conf"
cat > "$D/gres.conf" <<CONF
AutoDetect=off
Name=gpu File=$D/dev/nvidia[0-3]
CONF
: > "$D/plugstack.conf"

SLURM_CONF=$D/slurm.conf
export SLURM_CONF
slurmctld -f "$SLURM_CONF" </dev/null >/dev/null 2>>"$D/slurmctld.log" ||
    refused slurmctld
for n in $NODES; do
    slurmd -N "$n" -f "$SLURM_CONF" </dev/null >/dev/null \
        2>>"$D/slurmd-$n.log" || refused "slurmd-$n"
done

# Wait for the node to be idle; give up after 30 s, or 2 s after a
# daemon has died.
t0=$(date +%s)
until [ "$(sinfo -h -N -o %T 2>/dev/null | grep -cx idle)" = "$N" ]; do
    t=$(($(date +%s) - t0))
    for n in slurmctld $(for m in $NODES; do echo "slurmd-$m"; done); do
        p=$(cat "$D/$n.pid" 2>/dev/null)
        [ -n "$p" ] && kill -0 "$p" 2>/dev/null || [ $t -lt 2 ] || refused "$n"
    done
    if [ $t -ge 30 ]; then
        s=$(sinfo -h -N -o '%T %E' 2>&1 | head -n 1)
        stop; die 1 "nodes $NODES not idle after 30 s: $s"
    fi
    sleep 0.2
done
echo "export SLURM_CONF=$SLURM_CONF"
