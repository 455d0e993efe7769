"""The module answers as ctspmd-infer does: every request of the tool's tests (tests/tool/*.jsonl)
that a Python call can say is sent to both. CTest gives the tool's path in CTSPMD_INFER."""
import json
import os
import pathlib
import subprocess

import pytest

import ctspmd

REQUESTS = sorted((pathlib.Path(__file__).resolve().parents[2] / "tests" / "tool").glob("*.jsonl"))
CALL_FIELDS = {"op", "direction", "semantics", "mesh", "mesh_names", "inputs", "outputs", "attrs"}


def python_requests():
    """The requests a Python call can say: JSON objects of known fields with a valid direction."""
    for path in REQUESTS:
        for n, line in enumerate(path.read_text().splitlines()):
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if (isinstance(request, dict) and set(request) <= CALL_FIELDS and "op" in request
                    and request.get("direction", "forward") in ("forward", "backward")
                    and (request.get("direction") == "backward") == ("outputs" in request)):
                yield pytest.param(line, id=f"{path.stem}:{n + 1}")


def call(request):
    kwargs = {"attrs": request.get("attrs", {}), "semantics": request.get("semantics", "fluid"),
              "mesh_names": request.get("mesh_names")}
    args = [request["op"], request.get("mesh"), request.get("inputs")]
    if request.get("direction") == "backward":
        return ctspmd.infer_backward(*args, request["outputs"], **kwargs)
    return ctspmd.infer_forward(*args, **kwargs)


@pytest.mark.parametrize("line", list(python_requests()))
def test_same_answer_as_the_tool(line):
    tool = os.environ.get("CTSPMD_INFER")
    if not tool:
        pytest.skip("CTSPMD_INFER (the path of ctspmd-infer) is not set")
    expected = json.loads(subprocess.run([tool], input=line + "\n", capture_output=True, text=True).stdout)
    request = json.loads(line)
    if "error" not in expected:
        assert call(request) == expected
        return
    # The tool's type errors are TypeErrors here; anything else is the same SpmdError.
    with pytest.raises((ctspmd.SpmdError, TypeError)) as e:
        call(request)
    if isinstance(e.value, ctspmd.SpmdError):
        assert {"kind": e.value.kind, "message": e.value.message} == expected["error"]
    else:
        message = expected["error"]["message"]
        assert "must be" in message or "a string" in message, message
