#!/usr/bin/env python3
"""Published training runs against the time model: each run written as a model request (the GPT
builder of the model library with the run's sizes), costed by ctspmd-infer on the catalogue's
cluster with its constants unchanged, and its throughput in TFLOP/s per GPU set beside the
published one, each computed with the source's own FLOPs formula.

    python3 bench/published_runs.py build/ci-gcc/tools/ctspmd-infer            # the tables
    python3 bench/published_runs.py TOOL --check 12 28 10 16                   # and fail above
                                                                                 # mean / max % (H100, A100)

Sources and assumptions (where a source does not say, the choice is stated here):
- Megatron-LM's 2024 H100 table (seq 4096, vocab 131,072, DP 48, sequence parallelism, flash
  attention, the distributed optimizer: ZeRO-1 over dp with fp32 gradients and master weights,
  its gradient reduce-scatter and parameter all-gather overlapped (--overlap-grad-reduce,
  --overlap-param-gather), the tensor-parallel collectives overlapped with the kernels
  (--tp-comm-overlap: the source's README says the runs overlapped all three), no
  recomputation, micro-batch 1, the 1F1B schedule), throughput in model FLOPs:
  72 B s l h^2 (1 + s/6h + V/12lh).
- Narayanan et al. 2021, Table 1 (A100 80 GB, seq 2048, vocab 51,200, full recomputation, fp32
  gradients and master weights without ZeRO, no overlap of the data-parallel all-reduce,
  micro-batch 1; the interleaved schedule with 2 chunks a stage where a stage's layers are even,
  3 where they divide by 3, else 1F1B), throughput in the paper's FLOPs:
  96 B s l h^2 (1 + s/6h + V/16lh).
- The GPT builder ties the head to the embedding and uses learned positions; flash attention for
  the 2024 rows, the attention core written out (scores and probabilities materialised) for the
  2021 rows, which predate flash attention, and without sequence parallelism (Megatron added it
  in 2022).
"""
import json
import subprocess
import sys

# (billions of parameters, heads, hidden, layers, TP, PP, GPUs, global batch, published TFLOP/s)
H100_2024 = [(1.7, 16, 2048, 24, 1, 1, 48, 192, 408.8), (16, 48, 6144, 32, 4, 1, 192, 192, 489.1),
             (70, 64, 8192, 84, 8, 2, 768, 384, 419.7), (177, 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
             (462, 144, 18432, 112, 8, 16, 6144, 3072, 459.9)]
A100_2021 = [(1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
             (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
             (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
             (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148), (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
             (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163), (1008, 160, 25600, 128, 8, 64, 3072, 3072, 163)]
TABLES = [("H100", "Megatron-LM 2024 (H100 80 GB)", H100_2024, 4096, 131072, "h100", True),
          ("A100", "Narayanan et al. 2021, Table 1 (A100 80 GB)", A100_2021, 2048, 51200, "a100", False)]


def request(row, seq, vocab, cluster, megatron2024):
    _, heads, h, layers, tp, pp, gpus, batch, _ = row
    dp = gpus // (tp * pp)
    m = batch // dp
    config = {"architectures": ["GPT2LMHeadModel"], "n_embd": h, "n_head": heads, "n_layer": layers,
              "n_positions": seq, "vocab_size": vocab}
    training = {"gradient_element_bytes": 4, "master_weights": True}
    if megatron2024:
        training.update({"zero_stage": 1, "shard_optimizer_states_on": "dp"})
    else:
        training["recompute"] = "full"
    pipeline = {"mesh_dim": "pp", "micro_batches": m, "overlap_grad_reduce": megatron2024,
                "overlap_param_gather": megatron2024, "overlap_tensor_parallel": megatron2024}
    chunks = next((v for v in (2, 3) if (layers // pp) % v == 0), 1) if pp > 1 and not megatron2024 else 1
    if chunks > 1:
        pipeline.update({"schedule": "interleaved", "chunks": chunks})
    return {"model": {"config": config, "mesh": [pp, dp, tp], "mesh_names": ["pp", "dp", "tp"],
                      "layout": {"dp": "dp", "tp": "tp", "sp": tp > 1 and megatron2024, "pp": "pp"}, "seq": seq, "micro_batch": 1,
                      "flash_attention": megatron2024},
            "training": training, "pipeline": pipeline, "cluster": cluster}, dp, m, chunks


def flops(row, seq, vocab, megatron2024):
    _, _, h, layers, _, _, _, batch, _ = row
    if megatron2024:
        return 72 * batch * seq * layers * h * h * (1 + seq / (6 * h) + vocab / (12 * layers * h))
    return 96 * batch * seq * layers * h * h * (1 + seq / (6 * h) + vocab / (16 * layers * h))


def run(tool, table):
    key, title, rows, seq, vocab, cluster, megatron2024 = table
    requests = [request(row, seq, vocab, cluster, megatron2024) for row in rows]
    out = subprocess.run([tool], input="\n".join(json.dumps(r[0]) for r in requests), capture_output=True,
                         text=True, check=False).stdout.splitlines()
    results = []
    for row, (_, dp, m, chunks), line in zip(rows, requests, out):
        answer = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"{key} {row[0]}B: {answer['error']['message']}")
        p = answer["pipeline"]
        stage = max(p["stages"], key=lambda s: s["compute_seconds"] + s["communication_seconds"] + s["send_seconds"])
        step = p["step_seconds"]
        predicted = flops(row, seq, vocab, megatron2024) / step / row[6] / 1e12
        results.append({"row": row, "dp": dp, "m": m, "chunks": chunks, "step": step, "predicted": predicted,
                        "error": predicted / row[8] - 1, "compute": m * stage["compute_seconds"] / step,
                        "collectives": m * stage["communication_seconds"] / step,
                        "bubble": p["bubble_fraction"] * m * (stage["compute_seconds"] + stage["communication_seconds"] +
                                                              stage["send_seconds"]) / step,
                        "optimizer": max(s["optimizer_seconds"] for s in p["stages"]) / step})
    return results


def print_table(table, results):
    key, title, _, seq, vocab, cluster, _ = table
    print(f"\n{title}: seq {seq}, vocab {vocab}, cluster \"{cluster}\"\n")
    print("| model | TP | PP | DP | micro-batches | chunks | step s | TFLOP/s predicted | published | error "
          "| compute | TP collectives | bubble | optimizer (exposed) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        row = r["row"]
        print(f"| {row[0]}B | {row[4]} | {row[5]} | {r['dp']} | {r['m']} | {r['chunks']} | {r['step']:.3f} "
              f"| {r['predicted']:.1f} | {row[8]} | {r['error']:+.1%} | {r['compute']:.0%} | {r['collectives']:.0%} "
              f"| {r['bubble']:.0%} | {r['optimizer']:.0%} |")
    errors = [abs(r["error"]) for r in results]
    print(f"\n{key}: mean |error| {sum(errors) / len(errors):.1%}, max {max(errors):.1%}")
    return sum(errors) / len(errors), max(errors)


def main(argv):
    if len(argv) not in (2, 7) or (len(argv) == 7 and argv[2] != "--check"):
        print(__doc__)
        return 2
    bounds = [float(x) / 100 for x in argv[3:]] if len(argv) == 7 else None
    failed = False
    for i, table in enumerate(TABLES):
        mean, worst = print_table(table, run(argv[1], table))
        if bounds and (mean > bounds[2 * i] or worst > bounds[2 * i + 1]):
            print(f"{table[0]}: above the bounds {bounds[2 * i]:.0%} mean, {bounds[2 * i + 1]:.0%} max")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
