#!/usr/bin/env python3
"""Turn one `nvidia-smi topo -m` printout into a thermap.cluster/1 file.

A stop-gap used to derive fixture cluster files until `thermap topo` exists.
Python 3 standard library only; the output depends only on the input.

Usage:
  python3 scripts/topo-to-cluster.py --host NAME --model MODEL --memory-gib N \
      TOPO_FILE [-o OUT]

Rules:
  * ANSI escape sequences (nvidia-smi underlines the header row) are removed.
  * The header row is the first line holding a GPU<n> token; its GPU<n> tokens,
    in order, are the GPU columns. They must be GPU0..GPU<N-1> and come before
    any other column (NICs, CPU Affinity, ...), as nvidia-smi prints them.
  * Only rows whose first token is GPU<n> are kept; NIC rows and columns, the
    affinity columns and the legend are dropped.
  * Cells are split on any whitespace, so both the tab-separated original and
    copies whose tabs were turned into spaces parse; the self cell " X " is "X".
  * The matrix must be square, have "X" exactly on the diagonal and be
    symmetric; otherwise the script stops with an error naming file and line.
  * Without a GPU list the GPUs are known by index only: uuid and pci_bus_id
    are null. Model and memory are given on the command line.
"""

import argparse
import json
import re
import sys

ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
GPU_RE = re.compile(r"^GPU(\d+)$")
CODE_RE = re.compile(r"^(X|SYS|NODE|PHB|PXB|PIX|NV\d+)$")


class TopoError(Exception):
    pass


def parse_topo_m(path):
    """Return the GPU x GPU code matrix of an `nvidia-smi topo -m` file."""
    with open(path, "r", encoding="utf-8", newline="") as f:
        text = f.read()
    lines = [ANSI_RE.sub("", ln) for ln in text.splitlines()]

    ncols = None
    header_line = None
    rows = {}
    for lineno, line in enumerate(lines, 1):
        tokens = line.split()
        if not tokens:
            continue
        if ncols is None:
            gpu_cols = [t for t in tokens if GPU_RE.match(t)]
            if not gpu_cols:
                continue
            if tokens[: len(gpu_cols)] != gpu_cols:
                raise TopoError("%s:%d: GPU columns must come first in the header"
                                % (path, lineno))
            want = ["GPU%d" % i for i in range(len(gpu_cols))]
            if gpu_cols != want:
                raise TopoError("%s:%d: expected header columns %s, found %s"
                                % (path, lineno, " ".join(want), " ".join(gpu_cols)))
            ncols = len(gpu_cols)
            header_line = lineno
            continue
        m = GPU_RE.match(tokens[0])
        if not m:
            continue
        idx = int(m.group(1))
        cells = tokens[1: 1 + ncols]
        if len(cells) != ncols:
            raise TopoError("%s:%d: row GPU%d has %d GPU cells, expected %d"
                            % (path, lineno, idx, len(cells), ncols))
        for c in cells:
            if not CODE_RE.match(c):
                raise TopoError("%s:%d: unknown link code %r in row GPU%d"
                                % (path, lineno, c, idx))
        if idx in rows:
            raise TopoError("%s:%d: row GPU%d appears twice" % (path, lineno, idx))
        rows[idx] = (lineno, cells)

    if ncols is None:
        raise TopoError("%s: no header row with GPU columns found" % path)
    if sorted(rows) != list(range(ncols)):
        raise TopoError("%s:%d: header names %d GPUs but rows %s were found"
                        % (path, header_line, ncols,
                           ",".join("GPU%d" % i for i in sorted(rows))))
    matrix = [rows[i][1] for i in range(ncols)]
    for i in range(ncols):
        for j in range(ncols):
            lineno = rows[i][0]
            if (matrix[i][j] == "X") != (i == j):
                raise TopoError("%s:%d: GPU%d/GPU%d: \"X\" must be exactly on the diagonal"
                                % (path, lineno, i, j))
            if matrix[i][j] != matrix[j][i]:
                raise TopoError("%s:%d: GPU%d/GPU%d is %s but GPU%d/GPU%d is %s"
                                % (path, lineno, i, j, matrix[i][j], j, i, matrix[j][i]))
    return matrix


def dump_json(obj):
    """Two-space indented JSON whose innermost arrays of strings stay on one line."""
    return _dump(obj, 0) + "\n"


def _dump(obj, level):
    pad = "  " * level
    inner = "  " * (level + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = ["%s%s: %s" % (inner, json.dumps(k), _dump(v, level + 1))
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        if not obj:
            return "[]"
        if all(isinstance(v, str) for v in obj):
            return "[" + ", ".join(json.dumps(v) for v in obj) + "]"
        items = [inner + _dump(v, level + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj)


def cluster_doc(host, gpus, links):
    return {
        "format": "thermap.cluster/1",
        "nodes": [
            {
                "host": host,
                "gpus": gpus,
                "links": links,
                "link_gb_per_s": None,
                "net_gb_per_s": None,
                "net_group": None,
            }
        ],
        "network": None,
    }


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--memory-gib", type=int, required=True)
    ap.add_argument("topo")
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    try:
        links = parse_topo_m(args.topo)
    except (TopoError, OSError) as e:
        print("topo-to-cluster: %s" % e, file=sys.stderr)
        return 4
    gpus = [{"index": i, "uuid": None, "pci_bus_id": None,
             "model": args.model, "memory_gib": args.memory_gib}
            for i in range(len(links))]
    text = dump_json(cluster_doc(args.host, gpus, links))
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
