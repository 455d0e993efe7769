"""ctspmd.models: models built from their Hugging Face config.json (include/ctspmd/models/)."""
import json
import os
import pathlib

import pytest

import ctspmd

CONFIGS = pathlib.Path(__file__).resolve().parents[2] / "models" / "configs"

# The published models' counts (exact; the C++ static tests check the same figures).
COUNTS = {
    "gpt2": (124_439_808, 124_439_808),
    "llama3_8b": (8_030_261_248, 8_030_261_248),
    "llama3_70b": (70_553_706_496, 70_553_706_496),
    "llama3_1_405b": (405_853_388_800, 405_853_388_800),
    "qwen2_7b": (7_615_616_512, 7_615_616_512),
    "qwen2_72b": (72_706_203_648, 72_706_203_648),
    "mixtral_8x7b": (46_702_792_704, 12_879_925_248),
    "mixtral_8x22b": (140_630_071_296, 39_161_468_928),
    "deepseek_v3": (671_026_419_200, 37_552_297_472),
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_parameters_of_the_shipped_configs(name):
    path = CONFIGS / f"{name}.json"
    counts = ctspmd.models.parameters(path)  # a path (os.PathLike)
    assert (counts["parameters"], counts["active_parameters"]) == COUNTS[name]
    assert ctspmd.models.parameters(str(path)) == counts  # a str
    assert ctspmd.models.parameters(json.loads(path.read_text())) == counts  # a dict


def test_plan_is_a_plan_dict_that_verify_plan_takes():
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1001}
    plan = ctspmd.models.plan(config, mesh=[2, 2], mesh_names=["dp", "tp"],
                              layout={"dp": "dp", "tp": "tp", "sp": True}, seq=16)
    assert plan["mesh_names"] == ["dp", "tp"]
    assert any(t["name"] == "loss" for t in plan["tensors"])
    plan["training"] = {"loss": "loss"}
    report = ctspmd.verify_plan(plan)
    # Megatron's sequence parallelism: per layer two all-gathers and two reduce-scatters forward,
    # and the head's all-gather, the embedding's reduce-scatter (2 layers).
    forward = report["totals"]["forward"]
    assert forward["all_gather"]["count"] == 5 and forward["reduce_scatter"]["count"] == 5
    # The vocabulary, 1001, is padded to 1024 (a multiple of 128 x 2) in the plan.
    wte = next(t for t in plan["tensors"] if t["name"] == "wte")
    assert wte["shape"] == [1024, 64]


def test_errors_name_what_is_wrong():
    with pytest.raises(ctspmd.SpmdError, match='unknown architecture "FalconForCausalLM"'):
        ctspmd.models.parameters({"architectures": ["FalconForCausalLM"]})
    with pytest.raises(ctspmd.SpmdError, match='has no "intermediate_size"'):
        ctspmd.models.parameters({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})
    with pytest.raises(TypeError, match="config must be a dict or the path of a config.json"):
        ctspmd.models.parameters(3)
    with pytest.raises(FileNotFoundError):
        ctspmd.models.parameters(CONFIGS / "no_such_model.json")
    with pytest.raises(ctspmd.SpmdError, match='names mesh dim "mp"'):
        ctspmd.models.plan(CONFIGS / "llama3_8b.json", mesh=[2, 8], mesh_names=["dp", "tp"], layout={"tp": "mp"})
