"""A property test: generated requests (rule calls and plans, fuzz/fuzz_python.py's generators, some
of them invalid) get the same answer, or the same error, from the module and from ctspmd-infer.
The cases come from a fixed seed, so a failure is reproducible; fuzz_python.py runs the same loop
for as long as one likes with any seed. CTest gives the tool's path in CTSPMD_INFER.

Left out of the comparison, and counted: requests JSON cannot say (bytes, a NaN, a str with lone
surrogates); rule calls with an operand field set to None, which the module takes as absent (its
documented convenience) where the tool's JSON null is a wrong value. An int outside int64 goes to
the reader as the tool's JSON parser reads it (test_ints_beyond_int64 below)."""
import json
import os
import pathlib
import random
import subprocess
import sys

import pytest

import ctspmd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "fuzz"))
import fuzz_python  # noqa: E402  (the generators, the outcome of a call, the comparison with the tool)

SEED = 20240938
CASES = 400


def tool_path():
    tool = os.environ.get("CTSPMD_INFER")
    if not tool:
        pytest.skip("CTSPMD_INFER (the path of ctspmd-infer) is not set")
    return tool


def generated_cases(seed, count):
    """(kind, request, call) for `count` cases, drawn as fuzz_python's loop draws them."""
    rng = random.Random(seed)
    for _ in range(count):
        kind = "plan" if rng.random() < 0.4 else "rule"
        request = fuzz_python.plan_case(rng) if kind == "plan" else fuzz_python.rule_case(rng)
        if kind == "plan":
            call = lambda r=request: ctspmd.verify_plan(r)  # noqa: E731
        else:
            call = lambda r=request: fuzz_python.rule_call(r)  # noqa: E731
        yield kind, request, call


def json_line(kind, request):
    """The request line the tool reads, or None if JSON cannot say the request."""
    try:
        line = json.dumps({"plan": request} if kind == "plan" else request, allow_nan=False, ensure_ascii=False)
        line.encode()
    except (TypeError, ValueError):
        return None
    return line


none_field = fuzz_python.none_field


def test_generated_requests_answer_as_the_tool_does():
    tool = tool_path()
    cases, lines, counts = [], [], {}
    for n, (kind, request, call) in enumerate(generated_cases(SEED, CASES)):
        got = fuzz_python.outcome(call)
        if got[0] == "ok":
            fuzz_python.check_answer(kind, request, got[1])
        line = json_line(kind, request)
        left_out = "not JSON" if line is None else "None field" if none_field(kind, request) else None
        key = (kind, left_out or got[0])
        counts[key] = counts.get(key, 0) + 1
        if not left_out:
            cases.append((n, got))
            lines.append(line)
    out = subprocess.run([tool], input="\n".join(lines) + "\n", capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(lines), f"the tool answered {len(out)} of {len(lines)} lines"
    differ = [f"case {i} (seed {SEED}): {line}\n  python: {got}\n  tool: {answer}"
              for (i, got), line, answer in zip(cases, lines, out)
              if not fuzz_python.same_as_tool(got, answer)]
    assert not differ, f"{len(differ)} of {len(lines)} cases differ; the first:\n" + "\n".join(differ[:3])
    # The sample reaches answers and errors of both kinds of request, and compares most cases.
    for key in [("rule", "ok"), ("rule", "error"), ("plan", "ok"), ("plan", "error")]:
        assert counts.get(key, 0) > 0, f"no {key} case among {counts}"
    assert len(lines) >= 0.9 * CASES, counts


PLAN_WITH_HUGE_INT = {"mesh": [2], "tensors": [{"name": "x", "shape": [8, 4], "dims_mapping": [2**63, -1]}],
                      "operators": []}


@pytest.mark.parametrize("value", [2**63, 2**64 + 1, -(2**63) - 1, 10**30])
def test_ints_beyond_int64(value):
    """An int outside int64 gets the tool's answer: an unsigned one and a longer one alike."""
    plan = json.loads(json.dumps(PLAN_WITH_HUGE_INT).replace(str(2**63), str(value)))
    line = json.dumps({"plan": plan})
    answer = subprocess.run([tool_path()], input=line + "\n", capture_output=True, text=True).stdout
    got = fuzz_python.outcome(lambda: ctspmd.verify_plan(plan))
    assert got[0] == "error" and fuzz_python.same_as_tool(got, answer), (got, answer)
    call = {"op": "relu", "mesh": [2], "inputs": [{"shape": [value, 4]}], "attrs": {}}
    answer = subprocess.run([tool_path()], input=json.dumps(call) + "\n", capture_output=True, text=True).stdout
    got = fuzz_python.outcome(lambda: fuzz_python.rule_call(call))
    assert got[0] != "ok" and fuzz_python.same_as_tool(got, answer), (got, answer)
