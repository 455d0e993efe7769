"""A generated-case loop over the Python module's entry points (fuzz/README.md, "Python").

Each case is a rule call (`infer_forward` / `infer_backward`, an operator of `ctspmd.rules()`
with random operands, layouts and attributes, some of the wrong Python type) or a plan
(`verify_plan`: a small random model with repeated blocks, training, cluster, pipeline and search
options, some fields damaged). Checked for every case:
  - only `ctspmd.SpmdError` (with a kind) or `TypeError` escapes (or `UnicodeEncodeError` for a
    str with lone surrogates), nothing else, no crash;
  - an answer has the documented shape (a rule's: one operand per input and output; a plan's:
    tensors, reshards and totals, the totals the reshards' sums);
  - the same call twice gives the same answer;
  - with --tool, the same request sent to ctspmd-infer (one batch a round) gets the same answer,
    or the same error kind and message (and, for plans, the same "at" / operator); a TypeError
    here is an error whose message says what the value "must be" there.
Usage: PYTHONPATH=build/<preset>/python python3 fuzz/fuzz_python.py --seconds 1800 \
           --tool build/<preset>/tools/ctspmd-infer [--seed N]
Prints the cases run per kind and the outcomes; exits 1 on the first violation, printing the case.
"""
import argparse
import json
import random
import re
import subprocess
import sys
import time

import ctspmd

RULES = ctspmd.rules()
NAMES = sorted(RULES)
JUNK = [None, 1.5, "x", [], {}, [[]], True, -1, 2**62, 2**63, -(2**63) - 1, [1, "a"], {"a": 1}, b"bytes", (1, 2),
        float("nan"), "\ud800"]


class Violation(Exception):
    pass


def junk(rng):
    return rng.choice(JUNK)


def size(rng):
    if rng.random() < 0.05:
        return rng.choice([-1, 0, -7, 2**62, 2**40, 3])
    return rng.choice([1, 2, 4, 8, 16, 32, 64])


def mesh(rng):
    if rng.random() < 0.03:
        return rng.choice([[], [0], [2**20, 2**20], [1, 1, 1, 1, 1], "2x2", [2, "2"]])
    return [rng.choice([1, 2, 2, 4]) for _ in range(rng.randint(1, 3))]


def layout(rng, rank, ndim):
    if rng.random() < 0.3:
        return {}
    if rng.random() < 0.1:  # co-shard
        out = [[] for _ in range(rank)]
        for m in range(ndim):
            if out and rng.random() < 0.5:
                out[rng.randrange(rank)].append(m)
        attr = {"dims_mapping": out}
    else:
        free = list(range(ndim))
        rng.shuffle(free)
        mapping = [-1] * rank
        for d in range(rank):
            if free and rng.random() < 0.4:
                mapping[d] = free.pop()
        attr = {"dims_mapping": mapping}
    if ndim and rng.random() < 0.15:
        attr["partial"] = [rng.randrange(ndim)]
        if rng.random() < 0.5:
            attr["partial_reduce"] = [rng.choice(["sum", "max", "avg", "bogus"])]
    if rng.random() < 0.03:
        attr[rng.choice(list(attr))] = junk(rng)
    return attr


def operand(rng, shape, ndim):
    o = {"shape": shape}
    o.update(layout(rng, len(shape), ndim))
    if rng.random() < 0.02:
        o["shape"] = junk(rng)
    if rng.random() < 0.01:
        o["bogus"] = 1
    return o


def attribute(rng, info):
    t = info["type"]
    if rng.random() < 0.05:
        return junk(rng)
    if t == "bool":
        return rng.random() < 0.5
    if t == "int":
        return rng.choice([-1, 0, 1, 2, 3, info["default"]])
    if t == "float":
        return rng.choice([0.0, 0.5, 1.0, -1.0])
    if t == "int list":
        return [rng.randint(-2, 3) for _ in range(rng.randint(0, 3))]
    if t == "string":
        return rng.choice(["", "NCHW", "sum", "x"])
    return rng.choice(["sum", "max", "min", "prod", "avg", "any", "all"])


def rule_case(rng):
    op = rng.choice(NAMES) if rng.random() < 0.98 else "no_such_op"
    m = mesh(rng)
    ndim = len(m) if isinstance(m, list) else 0
    base = [size(rng) for _ in range(rng.randint(0, 3))]
    inputs = []
    for _ in range(rng.randint(1, 4)):
        shape = list(base) if rng.random() < 0.7 else [size(rng) for _ in range(rng.randint(0, 3))]
        inputs.append(operand(rng, shape, ndim))
    attrs = {}
    for name, info in RULES.get(op, {}).items():
        if rng.random() < 0.3:
            attrs[name] = attribute(rng, info)
    if rng.random() < 0.02:
        attrs["bogus"] = 1
    request = {"op": op, "mesh": m, "inputs": inputs, "attrs": attrs}
    if rng.random() < 0.2:
        request["semantics"] = rng.choice(["phi", "phi", "fluid", "paddle"])
    if rng.random() < 0.3:
        request["direction"] = "backward"
        request["outputs"] = [operand(rng, list(base), ndim) for _ in range(rng.randint(1, 2))]
    return request


def linear(rng, plan, x, rows, width, i, ndim, annotate):
    """x [rows, width] -> relu(x @ w) [rows, out], the weight a parameter."""
    out = rng.choice([width, 2 * width])
    w = {"name": f"w{i}", "shape": [width, out], "parameter": True}
    if annotate:
        w.update(layout(rng, 2, ndim))
    y, a = f"y{i}", f"a{i}"
    plan["tensors"] += [w, {"name": y, "shape": [rows, out]}, {"name": a, "shape": [rows, out]}]
    plan["operators"] += [{"op": "matmul", "inputs": [x, w["name"]], "outputs": [y]},
                          {"op": rng.choice(["relu", "gelu", "scale", "softmax"]), "inputs": [y], "outputs": [a]}]
    return a, out


def plan_case(rng):
    m = mesh(rng)
    ndim = len(m) if isinstance(m, list) else 0
    names = ["dp", "tp", "pp"][:ndim]
    plan = {"mesh": m, "tensors": [], "operators": []}
    if rng.random() < 0.5:
        plan["mesh_names"] = names
    if rng.random() < 0.2:
        plan["semantics"] = rng.choice(["phi", "fluid"])
    search = rng.random() < 0.15
    rows, width = rng.choice([4, 8, 16]), rng.choice([8, 16])
    x = {"name": "x", "shape": [rows, width], "dtype": rng.choice(["float32", "bfloat16", "float16"])}
    if not search:
        x.update(layout(rng, 2, ndim))
    plan["tensors"].append(x)
    cur, i = "x", 0
    for _ in range(rng.randint(1, 3)):
        cur, width = linear(rng, plan, cur, rows, width, i, ndim, not search)
        i += 1
    if rng.random() < 0.4:  # a repeated block of square layers
        count = rng.choice([1, 2, 4, 8]) if rng.random() < 0.95 else rng.choice([0, -1, 2**62])
        inner = {"mesh": m, "tensors": [], "operators": []}
        out, _ = linear(rng, inner, "h", rows, width, 100, ndim, not search)
        inner["tensors"][-1]["shape"] = [rows, width]
        inner["tensors"][-2]["shape"] = [rows, width]
        inner["tensors"][0]["shape"] = [width, width]
        plan["operators"].append({"repeat": {"count": count, "source": cur, "input": "h", "tensors": inner["tensors"],
                                             "operators": inner["operators"], "output": out}})
        cur = out
    if rng.random() < 0.7 or search:
        plan["training"] = {"loss": cur}
        t = plan["training"]
        if rng.random() < 0.3:
            t["zero_stage"] = rng.randint(0, 3)
            t["shard_optimizer_states_on"] = rng.choice([0, "dp", -1])
        if rng.random() < 0.3:
            t["recompute"] = rng.choice(["none", "selective", "full", "most"])
        if rng.random() < 0.1:
            t["gradient_element_bytes"] = rng.choice([2, 4, 0, 17, 2**40])
    if rng.random() < 0.3:
        plan["cluster"] = "h100" if rng.random() < 0.5 else {
            "links": [{"bandwidth": rng.choice([1e10, 5e10, 0.0]), "latency": 1e-6} for _ in range(ndim)],
            "peak_flops": rng.choice([1e15, -1.0]), "compute_efficiency": rng.choice([0.5, 1.0, 1.5])}
    if rng.random() < 0.2 and ndim:
        plan["pipeline"] = {"mesh_dim": rng.choice([0, ndim - 1, "pp", 7]),
                            "micro_batches": rng.choice([1, 2, 4, 0, 2**62]),
                            "schedule": rng.choice(["1f1b", "gpipe", "interleaved", "zigzag"])}
        if rng.random() < 0.3:
            plan["pipeline"]["chunks"] = rng.choice([1, 2, 3])
    if search:
        plan["search"] = {"max_states": rng.randint(1, 8), "candidates": rng.randint(1, 4), "max_work": 100000,
                          "co_shard": rng.random() < 0.3}
        if rng.random() < 0.2:
            plan["search"]["zero_dim"] = rng.choice([0, -1, "dp", 9])
    if rng.random() < 0.05:  # damage one field somewhere
        target = rng.choice([plan] + plan["tensors"] + [o for o in plan["operators"] if "op" in o])
        target[rng.choice(list(target))] = junk(rng)
    return plan


def rule_call(request):
    kwargs = {"attrs": request.get("attrs", {}), "semantics": request.get("semantics", "fluid"),
              "mesh_names": request.get("mesh_names")}
    args = [request["op"], request["mesh"], request["inputs"]]
    if request.get("direction") == "backward":
        return ctspmd.infer_backward(*args, request["outputs"], **kwargs)
    return ctspmd.infer_forward(*args, **kwargs)


def outcome(call):
    """("ok", answer) | ("error", {kind, message, details}) | ("type", message); anything else raises."""
    try:
        return "ok", call()
    except ctspmd.SpmdError as e:
        if not isinstance(e.kind, str) or not e.kind or not e.message:
            raise Violation(f"an SpmdError without kind or message: {e!r}")
        return "error", {"kind": e.kind, "message": e.message, **(e.details or {})}
    except TypeError as e:
        return "type", str(e)
    except UnicodeEncodeError as e:  # a str with lone surrogates: not UTF-8 (documented by the module)
        return "unicode", str(e)


def check_answer(kind, request, answer):
    if kind == "rule":
        n_out = len(answer.get("outputs", []))
        if set(answer) != {"inputs", "outputs"} or len(answer["inputs"]) != len(request["inputs"]) or (
                request.get("direction") == "backward" and n_out != len(request["outputs"])):
            raise Violation("a rule answer without one operand per input and output")
        return
    if not {"tensors", "reshards", "totals"} <= set(answer):
        raise Violation("a plan answer without tensors, reshards or totals")
    totals = {}
    for r in answer["reshards"]:
        t = totals.setdefault(r["phase"], {}).setdefault(r["collective"], {"count": 0, "bytes": 0})
        t["count"] = min(t["count"] + r["times"], 2**63 - 1)  # the library's sums saturate
        t["bytes"] = min(t["bytes"] + r["bytes"] * r["times"], 2**63 - 1)
    if totals != answer["totals"]:
        raise Violation("a plan answer's totals are not its reshards' sums")


def none_field(kind, request):
    """A rule call with an operand field set to None: absent to the module (its documented
    convenience), a wrong value (JSON null) to the tool, so not compared."""
    operands = [o for k in ("inputs", "outputs") if isinstance(request.get(k), list) for o in request[k]]
    return kind == "rule" and any(isinstance(o, dict) and None in o.values() for o in operands)


def pythonic(message):
    """The tool's message in the module's words: attribute `x` is attrs['x'] there, attrs.x here."""
    return re.sub(r"attrs\.([A-Za-z_0-9]+)", r"attrs['\1']", message)


def same_as_tool(got, tool_line):
    tool = json.loads(tool_line)
    if "error" in tool and "message" in tool["error"]:
        tool["error"]["message"] = pythonic(tool["error"]["message"])
    if got[0] == "ok":
        return tool == got[1]
    if "error" not in tool:
        return False
    if got[0] == "unicode":
        return True  # JSON text cannot carry the same str
    if got[0] == "type":
        return "must be" in tool["error"]["message"] or "a string" in tool["error"]["message"]
    return got[1] == tool["error"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--tool", default=None, help="ctspmd-infer, to compare every answer with")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--last", default=None, help="a file that holds the case being run (to find a hang)")
    a = parser.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    counts = {"rule": {}, "plan": {}}
    start = time.time()
    rounds = compared = 0
    while time.time() - start < a.seconds:
        cases = []
        for _ in range(a.batch):
            kind = "plan" if rng.random() < 0.4 else "rule"
            request = plan_case(rng) if kind == "plan" else rule_case(rng)
            call = (lambda r=request: ctspmd.verify_plan(r)) if kind == "plan" else (lambda r=request: rule_call(r))
            if a.last:
                with open(a.last, "w") as f:
                    f.write(repr(request))
            got = outcome(call)
            if got[0] == "ok":
                check_answer(kind, request, got[1])
            if outcome(call) != got:
                raise Violation(f"the same call twice, two answers: {json.dumps(request)}")
            counts[kind][got[0]] = counts[kind].get(got[0], 0) + 1
            cases.append((kind, request, got))
        if a.tool:
            lines, sent = [], []
            for case in cases:  # not every Python value has a JSON text (bytes, NaN): those stay here
                kind, request, got = case
                if none_field(kind, request):
                    continue
                try:
                    lines.append(json.dumps({"plan": request} if kind == "plan" else request, allow_nan=False))
                    sent.append(case)
                except (TypeError, ValueError):
                    pass
            compared += len(sent)
            out = subprocess.run([a.tool], input="\n".join(lines) + "\n", capture_output=True, text=True).stdout
            answers = out.splitlines()
            if len(answers) != len(sent):
                raise Violation(f"the tool answered {len(answers)} of {len(sent)} lines")
            for (kind, request, got), line, answer in zip(sent, lines, answers):
                if not same_as_tool(got, answer):
                    raise Violation(f"Python and the tool differ on {line}\n  python: {got}\n  tool: {answer}")
        rounds += 1
    total = sum(sum(c.values()) for c in counts.values())
    print(f"seed {seed}: {total} cases in {time.time() - start:.0f} s ({rounds} rounds), "
          f"rule calls {counts['rule']}, plans {counts['plan']}; compared with the tool: {compared}")


if __name__ == "__main__":
    try:
        main()
    except Violation as v:
        print(f"VIOLATION: {v}", file=sys.stderr)
        sys.exit(1)
