"""A Llama-like decoder (two layers, small sizes) on a [dp, mp] mesh with Megatron's tensor
parallelism, written as a plan dict and verified as a whole training step by ctspmd.verify_plan:
which collectives the step sends, in which phase, and what it costs on H100 nodes.

Run with the module on PYTHONPATH (build/<preset>/python)."""
import sys

import ctspmd

HIDDEN, HEADS, HEAD_DIM, FFN, VOCAB, SEQ, BATCH, LAYERS = 1024, 8, 128, 2816, 32000, 2048, 4, 2
ACT = [BATCH, SEQ, HIDDEN]


def tensor(name, shape, layout=None, parameter=False, dtype="bfloat16"):
    t = {"name": name, "shape": shape, "dtype": dtype}
    if layout is not None:
        t["partition_spec"] = layout
    if parameter:
        t["parameter"] = True
    return t


def op(name, inputs, outputs, label, **attrs):
    return {"op": name, "inputs": inputs, "outputs": outputs, "label": label, "attrs": attrs}


def layer():
    """One decoder layer: RMSNorm, q/k/v column-parallel projections, flash attention, the
    row-parallel output projection; RMSNorm and a SwiGLU MLP, column- then row-parallel."""
    tensors = [
        tensor("ln1.weight", [HIDDEN], parameter=True), tensor("ln1", ACT), tensor("ln1.invvar", [BATCH, SEQ], dtype="float32"),
        tensor("wq", [HIDDEN, HIDDEN], "P(None, 'mp')", True), tensor("wk", [HIDDEN, HIDDEN], "P(None, 'mp')", True),
        tensor("wv", [HIDDEN, HIDDEN], "P(None, 'mp')", True),
        tensor("q", ACT), tensor("k", ACT), tensor("v", ACT),
        tensor("q.heads", [BATCH, SEQ, HEADS, HEAD_DIM]), tensor("k.heads", [BATCH, SEQ, HEADS, HEAD_DIM]),
        tensor("v.heads", [BATCH, SEQ, HEADS, HEAD_DIM]),
        tensor("ctx", [BATCH, SEQ, HEADS, HEAD_DIM]), tensor("probs", [BATCH, HEADS, SEQ, SEQ]),
        tensor("lse", [BATCH, HEADS, SEQ], dtype="float32"), tensor("seed", [2], dtype="int64"),
        tensor("ctx.flat", ACT), tensor("wo", [HIDDEN, HIDDEN], "P('mp', None)", True), tensor("attn.o", ACT),
        tensor("attn.out", ACT, "P('dp')"), tensor("x1", ACT),
        tensor("ln2.weight", [HIDDEN], parameter=True), tensor("ln2", ACT), tensor("ln2.invvar", [BATCH, SEQ], dtype="float32"),
        tensor("w_gate", [HIDDEN, FFN], "P(None, 'mp')", True), tensor("w_up", [HIDDEN, FFN], "P(None, 'mp')", True),
        tensor("gate", [BATCH, SEQ, FFN]), tensor("up", [BATCH, SEQ, FFN]), tensor("swiglu", [BATCH, SEQ, FFN]),
        tensor("w_down", [FFN, HIDDEN], "P('mp', None)", True), tensor("mlp.d", ACT), tensor("mlp.out", ACT, "P('dp')"),
        tensor("x2", ACT),
    ]
    heads = [BATCH, SEQ, HEADS, HEAD_DIM]
    operators = [
        op("rms_norm", ["x", "ln1.weight"], ["ln1", "ln1.invvar"], "ln1"),
        op("matmul", ["ln1", "wq"], ["q"], "attn.q"),
        op("matmul", ["ln1", "wk"], ["k"], "attn.k"),
        op("matmul", ["ln1", "wv"], ["v"], "attn.v"),
        op("reshape", ["q"], ["q.heads"], "attn.q.heads", shape=heads),
        op("reshape", ["k"], ["k.heads"], "attn.k.heads", shape=heads),
        op("reshape", ["v"], ["v.heads"], "attn.v.heads", shape=heads),
        op("flash_attention", ["q.heads", "k.heads", "v.heads"], ["ctx", "probs", "lse", "seed"], "attn.core", causal=True),
        op("reshape", ["ctx"], ["ctx.flat"], "attn.merge", shape=ACT),
        op("matmul", ["ctx.flat", "wo"], ["attn.o"], "attn.o"),
        op("assign", ["attn.o"], ["attn.out"], "attn.reduce"),
        op("add", ["x", "attn.out"], ["x1"], "attn.residual"),
        op("rms_norm", ["x1", "ln2.weight"], ["ln2", "ln2.invvar"], "ln2"),
        op("matmul", ["ln2", "w_gate"], ["gate"], "mlp.gate"),
        op("matmul", ["ln2", "w_up"], ["up"], "mlp.up"),
        op("swiglu", ["gate", "up"], ["swiglu"], "mlp.swiglu"),
        op("matmul", ["swiglu", "w_down"], ["mlp.d"], "mlp.down"),
        op("assign", ["mlp.d"], ["mlp.out"], "mlp.reduce"),
        op("add", ["x1", "mlp.out"], ["x2"], "mlp.residual"),
    ]
    return {"count": LAYERS, "source": "x0", "input": "x", "tensors": tensors, "operators": operators, "output": "x2"}


PLAN = {
    "mesh": [2, 4],
    "mesh_names": ["dp", "mp"],
    "tensors": [
        tensor("ids", [BATCH, SEQ], "P('dp')", dtype="int64"),
        tensor("wte", [VOCAB, HIDDEN], "P('mp', None)", True),
        tensor("emb", ACT), tensor("x0", ACT, "P('dp')"),
        tensor("norm.weight", [HIDDEN], parameter=True), tensor("norm", ACT),
        tensor("norm.invvar", [BATCH, SEQ], dtype="float32"),
        tensor("lm_head", [HIDDEN, VOCAB], "P(None, 'mp')", True), tensor("logits", [BATCH, SEQ, VOCAB]),
        tensor("labels", [BATCH, SEQ, 1], "P('dp')", dtype="int64"),
        tensor("softmax", [BATCH, SEQ, VOCAB], dtype="float32"), tensor("loss", [BATCH, SEQ, 1], dtype="float32"),
    ],
    "operators": [
        op("c_embedding", ["wte", "ids"], ["emb"], "embed", vocab_size=VOCAB),
        op("assign", ["emb"], ["x0"], "embed.reduce"),
        {"repeat": layer()},
        op("rms_norm", ["x2", "norm.weight"], ["norm", "norm.invvar"], "norm"),
        op("matmul", ["norm", "lm_head"], ["logits"], "lm_head"),
        op("c_softmax_with_cross_entropy", ["logits", "labels"], ["softmax", "loss"], "loss", nranks=4),
    ],
    "training": {"loss": "loss", "shard_optimizer_states_on": "dp", "gradient_element_bytes": 4,
                 "master_weights": True},
    "cluster": "h100",
}


def main():
    picture = sys.argv[1] if len(sys.argv) > 1 else None  # optional: write the step's picture (SVG) there
    report = ctspmd.verify_plan(PLAN, svg=picture is not None)
    print(f"{len(report['tensors'])} tensors in the training step, {len(report['reshards'])} distinct reshards")
    for phase, kinds in report["totals"].items():
        for kind, total in kinds.items():
            print(f"{phase:9} {kind:14} x{total['count']:<3} {total['bytes'] / 2**20:10.2f} MiB a device")
    for r in report["reshards"]:
        if r["phase"] == "forward" and r["collective"] != "local_slice":
            print(f"forward reshard: operator {r['op']} '{r['name']}' {r['collective']} of '{r['tensor_name']}' "
                  f"on mesh dim {r['mesh_dim']}, x{r['times']}")
    cost = report["cost"]
    memory = cost["memory"]
    print(f"memory a device: parameters {memory['parameters'] / 2**20:.1f} MiB, gradients {memory['gradients'] / 2**20:.1f}"
          f" MiB, optimizer states {memory['optimizer_states'] / 2**20:.1f} MiB, activations "
          f"{memory['activations'] / 2**20:.1f} MiB; peak {memory['peak'] / 2**30:.2f} GiB at '{memory['peak_op_name']}'"
          f" ({memory['peak_phase']})")
    print(f"step {cost['step_seconds'] * 1e3:.2f} ms (overlapped {cost['overlapped_step_seconds'] * 1e3:.2f} ms), "
          f"MFU {cost['mfu']:.1%}")
    if picture:
        with open(picture, "w", encoding="utf-8") as f:
            f.write(report["svg"])
        print(f"picture: {picture}")


if __name__ == "__main__":
    main()
