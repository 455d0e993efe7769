"""A Llama-style decoder layer's sharding, rule by rule, with PyTorch DTensor placements.

The mesh is [2, 4]: mesh dim 0 data parallel, mesh dim 1 tensor parallel (Megatron-LM: q/k/v,
gate and up projections split by column, o and down projections by row). Each call gives the
operands' shapes and placements and prints what the rule says: the inputs as the operator needs
them (a difference from what was given is a reshard) and the outputs.

Run from the repository, after building the module (README.md, "Python module"):
    PYTHONPATH=build/ci-gcc/python python3 python/examples/rules.py
"""
import ctspmd

MESH = [2, 4]
BATCH, SEQ, HIDDEN, HEADS, HEAD_DIM, FFN = 4, 2048, 4096, 32, 128, 11008

DP = "[Shard(0), Replicate()]"  # activations: batch split over data parallel
COLUMN = "[Replicate(), Shard(1)]"  # column-parallel weight
ROW = "[Replicate(), Shard(0)]"  # row-parallel weight
REPLICATED = "[Replicate(), Replicate()]"
HEADS_SPLIT = "[Shard(0), Shard(2)]"  # batch over dp, heads (or hidden features) over tp


def tensor(shape, placements):
    return {"shape": shape, "placements": placements}


def call(label, op, inputs, attrs=None, outputs=None, semantics="fluid"):
    """Runs `op`'s rule, prints its answer, and returns its output placements."""
    if outputs is None:
        answer = ctspmd.infer_forward(op, MESH, inputs, attrs or {}, semantics=semantics)
    else:
        answer = ctspmd.infer_backward(op, MESH, inputs, outputs, attrs or {}, semantics=semantics)
    print(f"{label} ({op}):")
    for i, (given, needed) in enumerate(zip(inputs, answer["inputs"])):
        reshard = outputs is None and given["placements"] != needed["placements"]
        print(f"  input {i}  {needed['placements']}" + (f"   reshard from {given['placements']}" if reshard else ""))
    for i, out in enumerate(answer["outputs"]):
        print(f"  output {i} {out['placements']}")
    return [out["placements"] for out in answer["outputs"]]


x = tensor([BATCH, SEQ, HIDDEN], DP)
norm, _ = call("attention norm", "rms_norm", [x, tensor([HIDDEN], REPLICATED)], {"epsilon": 1e-6})
q, = call("q projection", "matmul", [tensor([BATCH, SEQ, HIDDEN], norm), tensor([HIDDEN, HIDDEN], COLUMN)])
heads, = call("split heads", "reshape", [tensor([BATCH, SEQ, HIDDEN], q)],
              {"shape": [BATCH, SEQ, HEADS, HEAD_DIM]})
qkv = tensor([BATCH, SEQ, HEADS, HEAD_DIM], heads)  # k and v are laid out as q
context, *_ = call("attention", "flash_attention", [qkv, qkv, qkv], {"causal": True})
merged, = call("merge heads", "reshape", [tensor([BATCH, SEQ, HEADS, HEAD_DIM], context)],
               {"shape": [BATCH, SEQ, HIDDEN]})
attn, = call("o projection", "matmul", [tensor([BATCH, SEQ, HIDDEN], merged), tensor([HIDDEN, HIDDEN], ROW)])
# The o projection's output is Partial() over tensor parallel: the residual add needs it whole,
# which is Megatron's all-reduce.
h, = call("residual", "add", [x, tensor([BATCH, SEQ, HIDDEN], attn)])

gate, = call("gate projection", "matmul", [tensor([BATCH, SEQ, HIDDEN], h), tensor([HIDDEN, FFN], COLUMN)])
act, = call("swiglu", "swiglu", [tensor([BATCH, SEQ, FFN], gate), tensor([BATCH, SEQ, FFN], gate)])
down, = call("down projection", "matmul", [tensor([BATCH, SEQ, FFN], act), tensor([FFN, HIDDEN], ROW)])
call("residual", "add", [tensor([BATCH, SEQ, HIDDEN], h), tensor([BATCH, SEQ, HIDDEN], down)])

# Backward: the gate projection's gradients (phi's matmul_grad: inputs x, w, out_grad). The
# input gradient is Partial() over tensor parallel, the weight gradient over data parallel:
# the data-parallel gradient all-reduce.
call("gate projection gradients", "matmul_grad",
     [tensor([BATCH, SEQ, HIDDEN], h), tensor([HIDDEN, FFN], COLUMN), tensor([BATCH, SEQ, FFN], gate)],
     semantics="phi")
# And the other way: which layouts the inputs need for the output to come out split by heads.
call("q projection, from its output", "matmul",
     [tensor([BATCH, SEQ, HIDDEN], REPLICATED), tensor([HIDDEN, HIDDEN], REPLICATED)],
     outputs=[tensor([BATCH, SEQ, HIDDEN], HEADS_SPLIT)])
