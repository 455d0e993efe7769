"""ctspmd.verify_plan: whole plans as dicts, answered as ctspmd-infer answers {"plan": ...}."""
import json
import os
import subprocess
from xml.etree import ElementTree

import pytest

import ctspmd


def mlp(**extra):
    plan = {
        "mesh": [2, 4], "mesh_names": ["dp", "mp"],
        "tensors": [
            {"name": "x", "shape": [8, 1024], "placements": "[Shard(0), Replicate()]"},
            {"name": "w1", "shape": [1024, 4096], "placements": "[Replicate(), Shard(1)]", "parameter": True},
            {"name": "h", "shape": [8, 4096]},
            {"name": "w2", "shape": [4096, 1024], "placements": "[Replicate(), Shard(0)]", "parameter": True},
            {"name": "y", "shape": [8, 1024]},
            {"name": "z", "shape": [8, 1024], "placements": "[Shard(0), Replicate()]"},
        ],
        "operators": [
            {"op": "matmul", "inputs": ["x", "w1"], "outputs": ["h"], "label": "fc1"},
            {"op": "matmul", "inputs": ["h", "w2"], "outputs": ["y"], "label": "fc2"},
            {"op": "assign", "inputs": ["y"], "outputs": ["z"], "label": "fc2.reduce"},
        ],
    }
    plan.update(extra)
    return plan


def test_forward_plan_reshards_and_layouts():
    report = ctspmd.verify_plan(mlp())
    assert [t["name"] for t in report["tensors"]] == ["x", "w1", "h", "w2", "y", "z"]
    assert report["tensors"][4]["placements"] == "[Shard(0), Partial()]"
    (r,) = report["reshards"]
    assert (r["op"], r["name"], r["input"], r["collective"], r["mesh_dim"], r["bytes"]) == \
        (2, "fc2.reduce", 0, "all_reduce", 1, 2 * 3 * 8 * 1024 * 4 // 2 // 4)
    assert report["totals"] == {"forward": {"all_reduce": {"count": 1, "bytes": r["bytes"]}}}
    assert "cost" not in report


def test_training_step_with_cost():
    report = ctspmd.verify_plan(mlp(training={"loss": "z", "shard_optimizer_states_on": "dp"}, cluster="h100"))
    totals = report["totals"]
    assert totals["optimizer"]["reduce_scatter"]["count"] == 2
    assert totals["optimizer"]["all_gather"]["count"] == 2
    cost = report["cost"]
    assert cost["memory"]["parameters"] == 2 * 1024 * 4096 * 4 // 4
    assert cost["flops"]["model"] == cost["flops"]["forward"] + cost["flops"]["backward"]
    assert 0 < cost["mfu"] <= 1
    assert any(t.get("role") == "gradient" for t in report["tensors"])


def svg_bars(svg):
    """The bars of a picture: (group, data attributes) per <rect> that carries a figure."""
    root = ElementTree.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    bars = []
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        for rect in group.iter("{http://www.w3.org/2000/svg}rect"):
            assert float(rect.get("width")) >= 1
            bars.append((group.get("class"), {k[5:]: v for k, v in rect.attrib.items() if k.startswith("data-")}))
    return bars


def test_simulate_proves_the_step():
    small = {"x": [8, 16], "w1": [16, 32], "h": [8, 32], "w2": [32, 16], "y": [8, 16], "z": [8, 16]}
    plan = mlp(training={"loss": "z", "shard_optimizer_states_on": "dp", "zero_stage": 2})
    for t in plan["tensors"]:
        t["shape"] = small[t["name"]]
    sim = ctspmd.verify_plan(plan, simulate=True)["simulation"]
    assert sim["matches"] and sim["bytes_match"] and sim["unnecessary"] == []
    assert sim["devices"] == 8 and sim["collectives"] > 0
    assert sim["max_relative_error"] < 1e-9 and 0 <= sim["gradient_error"] < 1e-6
    assert "simulation" not in ctspmd.verify_plan(plan)
    assert ctspmd.verify_plan(plan, simulate={"load_balanced_context": True})["simulation"]["matches"]
    with pytest.raises(TypeError, match="simulate"):
        ctspmd.verify_plan(plan, simulate="yes")
    big = mlp(training={"loss": "z"})
    with pytest.raises(ctspmd.SpmdError, match="more than the simulator's"):
        ctspmd.verify_plan(big, simulate=True)


def test_svg_picture_carries_the_cost():
    plan = mlp(training={"loss": "z", "shard_optimizer_states_on": "dp", "recompute": "full"}, cluster="h100")
    plan["operators"][2]["label"] = "fc2.reduce <&\"'>"  # the peak's operator: its name escaped in the picture
    report = ctspmd.verify_plan(plan, svg=True)
    bars = svg_bars(report["svg"])
    cost = report["cost"]
    # Collectives: one bar per phase, collective and mesh dim, the cost's figures exactly.
    expected = {(ph, k, d["mesh_dim"]): (d["count"], d["bytes"], d["seconds"])
                for ph, kinds in cost["collectives"].items() for k, t in kinds.items() for d in t["mesh_dims"]
                if not k.startswith("local")}
    drawn = {(a["phase"], a["collective"], int(a["mesh-dim"])): (int(a["count"]), int(a["bytes"]), float(a["seconds"]))
             for g, a in bars if g == "collectives"}
    assert drawn == expected and len(drawn) >= 3
    for ph, kinds in cost["collectives"].items():  # the mesh dims sum to the totals
        for k, t in kinds.items():
            assert sum(d["bytes"] for d in t["mesh_dims"]) == t["bytes"]
            assert sum(d["count"] for d in t["mesh_dims"]) == t["count"]
    memory = {a["category"]: int(a["bytes"]) for g, a in bars if g == "memory"}
    assert memory == {k: cost["memory"][k] for k in ("parameters", "gradients", "optimizer_states", "activations", "peak")}
    times = {a["time"]: float(a["seconds"]) for g, a in bars if g == "time"}
    assert times == {k: cost[k] for k in ("compute_seconds", "communication_seconds", "step_seconds",
                                          "overlapped_step_seconds")}
    assert cost["memory"]["peak_op_name"] == plan["operators"][2]["label"]
    assert "at operator 2 &apos;fc2.reduce &lt;&amp;&quot;&apos;&gt;&apos; (forward)" in report["svg"]
    assert "svg" not in ctspmd.verify_plan(plan)


def test_svg_picture_of_a_forward_plan_draws_its_reshards():
    report = ctspmd.verify_plan(mlp(), svg=True)
    bars = svg_bars(report["svg"])
    (r,) = report["reshards"]
    assert bars == [("collectives", {"phase": "forward", "collective": "all_reduce", "mesh-dim": "1", "count": "1",
                                     "bytes": str(r["bytes"])})]


def test_svg_picture_from_the_tool():
    tool = os.environ.get("CTSPMD_INFER")
    if not tool:
        pytest.skip("CTSPMD_INFER not set (CTest sets it)")
    request = {"plan": mlp(training={"loss": "z"}), "svg": True}
    out = subprocess.run([tool], input=json.dumps(request) + "\n", capture_output=True, text=True, check=True).stdout
    answer = json.loads(out)
    assert answer["svg"] == ctspmd.verify_plan(mlp(training={"loss": "z"}), svg=True)["svg"]
    svg_bars(answer["svg"])
    bad = subprocess.run([tool], input=json.dumps({"plan": mlp(), "svg": "yes"}) + "\n", capture_output=True,
                         text=True).stdout
    assert json.loads(bad)["error"]["message"] == '"svg" must be true or false'


def test_errors_name_the_operator_and_operand():
    plan = mlp()
    plan["operators"][1]["inputs"] = ["h", "w3"]
    with pytest.raises(ctspmd.SpmdError) as e:
        ctspmd.verify_plan(plan)
    assert e.value.kind == "invalid_argument"
    assert "operators[1].inputs[1]: no tensor named 'w3'" in str(e.value)
    assert e.value.details["operator"] == 1 and e.value.details["operand"] == "inputs"

    plan = mlp()
    plan["operators"][0]["op"] = "matmull"
    with pytest.raises(ctspmd.SpmdError) as e:
        ctspmd.verify_plan(plan)
    assert e.value.kind == "not_found" and "closest: matmul" in str(e.value)

    with pytest.raises(ctspmd.SpmdError, match="unknown field 'colour'"):
        ctspmd.verify_plan(mlp(colour="red"))
    with pytest.raises(TypeError):
        ctspmd.verify_plan([1, 2])
    with pytest.raises(TypeError):
        ctspmd.verify_plan(mlp(mesh=[2, object()]))


@pytest.mark.skipif("CTSPMD_INFER" not in os.environ, reason="needs the tool (CTest gives CTSPMD_INFER)")
def test_same_answer_as_the_tool():
    for plan in (mlp(), mlp(training={"loss": "z", "zero_stage": 2, "shard_optimizer_states_on": 0}),
                 mlp(tensors=[])):
        line = json.dumps({"plan": plan})
        out = subprocess.run([os.environ["CTSPMD_INFER"]], input=line + "\n", capture_output=True, text=True)
        answer = json.loads(out.stdout)
        if "error" in answer:
            with pytest.raises(ctspmd.SpmdError) as e:
                ctspmd.verify_plan(plan)
            assert str(e.value) == answer["error"]["message"]
        else:
            assert ctspmd.verify_plan(plan) == answer


def layers(count=4, **extra):
    """`count` bf16 linear layers on a [pp 2, dp 2] mesh, the batch over dp, as a training step."""
    plan = {
        "mesh": [2, 2], "mesh_names": ["pp", "dp"],
        "tensors": [{"name": "x", "shape": [8, 64], "partition_spec": "P('dp')", "dtype": "bfloat16"},
                    {"name": "out", "shape": [8, 64]}],
        "operators": [
            {"repeat": {"count": count, "source": "x", "input": "h",
                        "tensors": [{"name": "w", "shape": [64, 64], "parameter": True, "dtype": "bfloat16"},
                                    {"name": "b", "shape": [8, 64], "dtype": "bfloat16"}],
                        "operators": [{"op": "matmul", "inputs": ["h", "w"], "outputs": ["b"]}], "output": "b"}},
            {"op": "relu", "inputs": ["b"], "outputs": ["out"]},
        ],
        "training": {"loss": "out"},
    }
    plan.update(extra)
    return plan


def test_pipeline_places_a_parameter_where_it_is_read():
    # A head declared first but read after the block is the last stage's; an embedding read before
    # the block and after it (tied) is held by both, updated by both, its gradient sent once a step.
    def plan(tied):
        p = layers(pipeline={"mesh_dim": "pp", "micro_batches": 2})
        p["tensors"] = [{"name": "emb", "shape": [64, 64], "parameter": True, "dtype": "bfloat16"},
                        {"name": "x0", "shape": [8, 64], "dtype": "bfloat16"},
                        {"name": "y", "shape": [8, 64], "dtype": "bfloat16"}] + p["tensors"]
        if not tied:
            p["tensors"].insert(0, {"name": "head", "shape": [64, 64], "parameter": True, "dtype": "bfloat16"})
        p["operators"][0]["repeat"]["source"] = "x0"
        p["operators"] = [{"op": "matmul", "inputs": ["x", "emb"], "outputs": ["x0"]}, p["operators"][0],
                          {"op": "matmul", "inputs": ["b", "emb" if tied else "head"], "outputs": ["y"]},
                          {"op": "relu", "inputs": ["y"], "outputs": ["out"]}]
        return ctspmd.verify_plan(p)["pipeline"]["stages"]
    first, last = plan(tied=False)
    weight = 64 * 64 * 2
    for k in ("parameters", "gradients"):
        assert last[k] - first[k] == 0 and first[k] == 2 * weight + weight  # two layers and emb / head
    assert first["tied_gradient_bytes"] == last["tied_gradient_bytes"] == 0
    first, last = plan(tied=True)
    for k in ("parameters", "gradients", "optimizer_states"):
        assert first[k] == last[k] == (3 * weight if k != "optimizer_states" else first[k])
    assert first["tied_gradient_bytes"] == last["tied_gradient_bytes"] == weight  # the head's part, partial over dp
    assert first["optimizer_seconds"] == pytest.approx(last["optimizer_seconds"])  # the same update, the same send
    assert first["reduction_seconds"] == pytest.approx(last["reduction_seconds"]) and last["reduction_seconds"] > 0


def test_zero_over_a_product_group_is_checked():
    plan = layers(training={"loss": "out", "shard_optimizer_states_on": "dp", "shard_optimizer_states_also_on": "dp"})
    with pytest.raises(ctspmd.SpmdError, match="the same as shard_optimizer_states_on"):
        ctspmd.verify_plan(plan)
    plan["training"]["shard_optimizer_states_also_on"] = "pp"
    assert ctspmd.verify_plan(plan)["cost"]["memory"]["optimizer_states"] > 0


def test_pipeline_stages():
    report = ctspmd.verify_plan(layers(pipeline={"mesh_dim": "pp", "micro_batches": 4}))
    pipe = report["pipeline"]
    stages = pipe["stages"]
    assert [s["layers"] for s in stages] == [2, 2] and [s["first_layer"] for s in stages] == [0, 2]
    # the stages hold the step's parameters, gradients and optimizer states between them
    for field in ("parameters", "gradients", "optimizer_states"):
        assert sum(s[field] for s in stages) == report["cost"]["memory"][field]
    assert stages[0]["parameters"] == 2 * 64 * 64 * 2  # two layers' bf16 weights
    assert pipe["boundary_bytes"] == 8 // 2 * 64 * 2  # a dp rank's rows of a layer's output
    assert [s["sends"] for s in stages] == [1, 1] and [s["in_flight"] for s in stages] == [2, 1]
    # the sends are a stage's send_recv collectives
    for s in stages:
        assert s["collectives"] == {"send_recv": {"count": s["sends"], "bytes": s["send_bytes"],
                                                  "seconds": s["send_seconds"]}}
    # weights split over dp (gathered before use, forward and backward): each stage's two layers
    # gather theirs, and the stages' collectives add up to the step's forward and backward ones
    sharded = layers(pipeline={"mesh_dim": "pp", "micro_batches": 4})
    sharded["operators"][0]["repeat"]["tensors"][0]["partition_spec"] = "P('dp')"
    answer = ctspmd.verify_plan(sharded)
    step = answer["cost"]["collectives"]
    for s in answer["pipeline"]["stages"]:
        assert s["collectives"]["all_gather"]["count"] == 2 * 2 and set(s["collectives"]) == {"all_gather", "send_recv"}
    for field in ("count", "bytes"):
        assert sum(s["collectives"]["all_gather"][field] for s in answer["pipeline"]["stages"]) == \
            step["forward"]["all_gather"][field] + step["backward"]["all_gather"][field]
    assert pipe["bubble_fraction"] == 1 / 4
    slowest = max(s["compute_seconds"] + s["communication_seconds"] + s["send_seconds"] for s in stages)
    assert pipe["step_seconds"] - pipe["ideal_seconds"] == pytest.approx(slowest)
    uneven = ctspmd.verify_plan(layers(pipeline={"mesh_dim": 0, "micro_batches": 2, "schedule": "gpipe",
                                                  "stage_layers": [1, 3]}))["pipeline"]["stages"]
    assert [s["layers"] for s in uneven] == [1, 3] and [s["in_flight"] for s in uneven] == [2, 2]


def test_svg_picture_of_a_pipeline_schedule():
    for schedule, v in (("1f1b", 1), ("gpipe", 1), ("interleaved", 2)):
        m = 4
        report = ctspmd.verify_plan(layers(8, pipeline={"mesh_dim": "pp", "micro_batches": m, "schedule": schedule,
                                                        "chunks": v}), svg=True)
        pipe = report["pipeline"]
        p = len(pipe["stages"])
        t = [s["compute_seconds"] + s["exposed_communication_seconds"] + s["send_seconds"] for s in pipe["stages"]]
        bars = svg_bars(report["svg"])
        # each stage's memory and time, and the one step time, as the answer has them
        assert [int(a["bytes"]) for g, a in bars if g == "stage-memory" and "stage" in a] == \
            [s["memory"] for s in pipe["stages"]]
        times = [float(a["seconds"]) for g, a in bars if g == "stage-time" and "stage" in a]
        assert times == pytest.approx([m * x + s["optimizer_seconds"] for x, s in zip(t, pipe["stages"])])
        assert [float(a["seconds"]) for g, a in bars if g == "stage-time" and "time" in a] == [pipe["step_seconds"]]
        passes = [a for g, a in bars if g == "pipeline"]
        assert len(passes) == 2 * p * m * v  # every micro-batch forward and backward through every chunk
        ends = {}
        for a in passes:
            start, end, stage = float(a["start"]), float(a["end"]), int(a["stage"])
            share = (1 / 3 if a["pass"] == "forward" else 2 / 3) * max(t) / v  # the slowest stage's time, 1 : 2
            assert end - start == pytest.approx(share)
            ends[(a["pass"], int(a["micro-batch"]), int(a["chunk"]) * p + stage)] = end
        for a in passes:  # each pass starts after the pass it waits for
            mb, vs, start = int(a["micro-batch"]), int(a["chunk"]) * p + int(a["stage"]), float(a["start"])
            if a["pass"] == "forward" and vs > 0:
                assert start >= ends[("forward", mb, vs - 1)]
            if a["pass"] == "backward":
                assert start >= ends[("forward", mb, vs)]
                assert vs + 1 == p * v or start >= ends[("backward", mb, vs + 1)]
        for stage in range(p):  # a stage runs one pass at a time
            spans = sorted((float(a["start"]), float(a["end"])) for a in passes if int(a["stage"]) == stage)
            assert all(b[0] >= a[1] - 1e-12 * a[1] for a, b in zip(spans, spans[1:]))
            # the micro-batches a stage keeps (interleaved: chunk passes, each a v-th): as the report says
            started = ended = most = 0
            events = sorted((float(a["start"] if a["pass"] == "forward" else a["end"]), a["pass"] == "forward")
                            for a in passes if int(a["stage"]) == stage)
            for _, forward in events:
                started, ended = started + forward, ended + (not forward)
                most = max(most, started - ended)
            assert most / v == pipe["stages"][stage]["in_flight"]
        makespan = max(float(a["end"]) for a in passes)  # the report's step time, less the optimizer step
        assert makespan == pytest.approx((m + (p - 1) / v) * max(t))
        assert makespan + max(s["optimizer_seconds"] for s in pipe["stages"]) == pytest.approx(pipe["step_seconds"])
        assert f"Pipeline schedule ({schedule}, 4 micro-batches)" in report["svg"]
    assert 'class="pipeline"' not in ctspmd.verify_plan(layers(training={"loss": "out"}), svg=True)["svg"]
    many = ctspmd.verify_plan(layers(pipeline={"mesh_dim": "pp", "micro_batches": 2**62}), svg=True)["svg"]
    assert 'class="pipeline"' not in many and "not drawn: more than 4096 passes" in many


def test_pipeline_errors():
    with pytest.raises(ctspmd.SpmdError, match="micro_batches \\(3\\) a multiple of the stages \\(2\\)"):
        ctspmd.verify_plan(layers(pipeline={"mesh_dim": "pp", "micro_batches": 3, "schedule": "interleaved", "chunks": 2}))
    with pytest.raises(ctspmd.SpmdError, match="no mesh dim is named \"tp\""):
        ctspmd.verify_plan(layers(pipeline={"mesh_dim": "tp"}))
    with pytest.raises(ctspmd.SpmdError, match="the block's 3 layers are fewer than 4 stages x chunks"):
        ctspmd.verify_plan(layers(3, pipeline={"mesh_dim": "pp", "micro_batches": 2, "schedule": "interleaved",
                                               "chunks": 2}))
    # layers that do not divide into the stages: the one left over on the last stage
    uneven = ctspmd.verify_plan(layers(3, pipeline={"mesh_dim": "pp"}))
    assert [s["layers"] for s in uneven["pipeline"]["stages"]] == [1, 2]


def unannotated_mlp():
    """Alpa's six-layer MLP (examples/search/search_plans.hpp) with nothing annotated."""
    bf16 = {"dtype": "bfloat16"}
    act = [16384, 4096]
    return {
        "mesh": [2, 2], "mesh_names": ["dp", "mp"],
        "tensors": [{"name": "x", "shape": act, **bf16}],
        "operators": [{"repeat": {
            "count": 3, "source": "x", "input": "h", "output": "a2",
            "tensors": [{"name": "w1", "shape": [4096, 4096], "parameter": True, **bf16},
                        {"name": "y", "shape": act, **bf16}, {"name": "a", "shape": act, **bf16},
                        {"name": "w2", "shape": [4096, 4096], "parameter": True, **bf16},
                        {"name": "y2", "shape": act, **bf16}, {"name": "a2", "shape": act, **bf16}],
            "operators": [{"op": "matmul", "inputs": ["h", "w1"], "outputs": ["y"]},
                          {"op": "relu", "inputs": ["y"], "outputs": ["a"]},
                          {"op": "matmul", "inputs": ["a", "w2"], "outputs": ["y2"]},
                          {"op": "relu", "inputs": ["y2"], "outputs": ["a2"]}]}}],
        "training": {"loss": "a2"},
        # dp across nodes (InfiniBand), mp inside one (NVLink)
        "cluster": {"links": [{"bandwidth": 5e10, "latency": 1e-5}, {"bandwidth": 4.5e11, "latency": 5e-6}],
                    "peak_flops": 9.894e14},
    }


def test_search_lays_out_an_unannotated_plan():
    report = ctspmd.verify_plan(unannotated_mlp() | {"search": {"keep": 2, "zero_dim": "dp"}})
    found = report["search"]
    best = found["plans"][0]
    assert best["layouts"]["x"]["dims_mapping"] == [0, -1]     # the batch over the slow dim
    assert best["layouts"]["w1"]["dims_mapping"] == [-1, 1]    # Megatron's split over the fast one
    assert best["layouts"]["w2"]["dims_mapping"] == [1, -1]
    assert [p["step_seconds"] for p in found["plans"]] == sorted(p["step_seconds"] for p in found["plans"])
    assert found["greedy"]["step_seconds"] > 1.5 * best["step_seconds"]
    # 17 candidates, without ZeRO and with stages 1 to 3; then (tier 3) from the two best, each
    # other layout of x, w1 and w2 under their options, and the other options: none faster
    assert found["evaluations"] >= 17 * 4 + 2 * (3 * 6 + 3)
    assert found["improvements"] == []
    # The answer is the best plan's: its layouts, reshards and cost.
    assert report["cost"]["step_seconds"] == pytest.approx(best["step_seconds"], rel=1e-12)
    assert report["totals"]["forward"] == {"all_reduce": {"count": 3, "bytes": 3 * 16384 // 2 * 4096 * 2}}
    with pytest.raises(ctspmd.SpmdError, match="needs \"training\""):
        plan = unannotated_mlp()
        del plan["training"]
        ctspmd.verify_plan(plan | {"search": {}})
