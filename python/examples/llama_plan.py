"""A Llama-like decoder (two layers, small sizes) on a [dp, mp] mesh with Megatron's tensor
parallelism, built from its config by the model library (ctspmd.models.plan) and verified as a
whole training step by ctspmd.verify_plan: which collectives the step sends, in which phase, and
what it costs on H100 nodes.

Run with the module on PYTHONPATH (build/<preset>/python)."""
import sys

import ctspmd

# A Hugging Face config.json's fields (models/configs/ has the published models').
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "max_position_embeddings": 2048,
}

# The plan dict: Megatron's column- and row-parallel splits over "mp", the batch over "dp"
# (2 sequences a dp rank). It may be edited before it is verified; here the training step is
# added: ZeRO over dp, fp32 gradients and master weights, on H100 nodes.
PLAN = ctspmd.models.plan(CONFIG, mesh=[2, 4], mesh_names=["dp", "mp"], layout={"dp": "dp", "tp": "mp"},
                          seq=2048, micro_batch=2)
PLAN["training"] = {"loss": "loss", "shard_optimizer_states_on": "dp", "gradient_element_bytes": 4,
                    "master_weights": True}
PLAN["cluster"] = "h100"


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
