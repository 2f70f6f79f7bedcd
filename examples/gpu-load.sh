#!/bin/sh
# The same bf16 matrix load on every GPU of this machine for SECONDS,
# returning when all have finished (the load the example scripts profile
# with):
#
#   sh examples/gpu-load.sh SECONDS
#
# PYTHON names the Python that has PyTorch (default python3). It changes
# no GPU setting.
set -eu
S=${1:?usage: gpu-load.sh SECONDS}
PY=${PYTHON:-python3}
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
i=0
PIDS=
while [ $i -lt "$NGPU" ]; do
	CUDA_VISIBLE_DEVICES=$i "$PY" -c "
import time, torch
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
t = time.time()
while time.time() - t < $S:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
" &
	PIDS="$PIDS $!"
	i=$((i + 1))
done
# shellcheck disable=SC2086
wait $PIDS
