#!/usr/bin/env python3
"""Writes N ctspmd-infer requests (JSON Lines) to standard output, for timing the tool:

    python3 bench/make_requests.py 100000 > /tmp/requests.jsonl
    time build/bench/tools/ctspmd-infer /tmp/requests.jsonl > /dev/null

A fixed, deterministic mix: matmul forward (with and without transposes, batch broadcast) and
backward, embedding forward, elementwise add with broadcasting, softmax, reduction (sum) and
layer_norm, on meshes [2, 3] and [2, 2, 2]; one request in 50 is an error (an unknown
operator, or a conflicting sharding), as a real stream might hold a few.
"""
import json
import random
import sys


def operand(shape, mapping=None, partial=None):
    o = {"shape": shape}
    if mapping is not None:
        o["dims_mapping"] = mapping
    if partial:
        o["partial"] = partial
    return o


def requests(rng):
    kinds = [
        lambda: {"op": "matmul", "mesh": [2, 3],
                 "inputs": [operand([512, 48, 64, 32], [0, 1, -1, -1]), operand([32, 48], [-1, -1])]},
        lambda: {"op": "matmul", "mesh": [2, 3], "attrs": {"trans_y": True},
                 "inputs": [operand([8, 64, 32], [0, -1, 1]), operand([48, 32], [-1, 1])]},
        lambda: {"op": "matmul", "direction": "backward", "mesh": [2, 3],
                 "inputs": [operand([64, 32]), operand([32, 48])],
                 "outputs": [operand([64, 48], [0, 1])]},
        lambda: {"op": "lookup_table_v2", "mesh": [2, 3],
                 "inputs": [operand([4, 16], [1, -1]), operand([512, 768], [0, -1])]},
        lambda: {"op": "add", "mesh": [2, 2, 2],
                 "inputs": [operand([8, 16, 32], [0, 1, -1]), operand([32], [2])]},
        lambda: {"op": "softmax", "mesh": [2, 3], "attrs": {"axis": -1},
                 "inputs": [operand([16, 128], [0, 1])]},
        lambda: {"op": "sum", "mesh": [2, 3], "attrs": {"axis": [1], "keep_dim": False},
                 "inputs": [operand([16, 128], [0, 1])]},
        lambda: {"op": "layer_norm", "mesh": [2, 3], "attrs": {"begin_norm_axis": 2},
                 "inputs": [operand([4, 16, 64], [0, 1, -1]), operand([64]), operand([64])]},
    ]
    errors = [
        lambda: {"op": "matmull", "mesh": [2, 3], "inputs": []},
        lambda: {"op": "matmul", "mesh": [2, 3],
                 "inputs": [operand([64, 32], [-1, 0]), operand([32, 48], [1, -1])]},
    ]
    while True:
        pick = errors if rng.randrange(50) == 0 else kinds
        yield pick[rng.randrange(len(pick))]()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    rng = random.Random(4)
    out = sys.stdout
    for _, r in zip(range(n), requests(rng)):
        out.write(json.dumps(r))
        out.write("\n")


if __name__ == "__main__":
    main()
