"""The Python module ctspmd: rules by name, layout languages, attributes, errors."""
import pickle

import numpy as np
import pytest

import ctspmd
from ctspmd import SpmdError, infer_backward, infer_forward


def dm(shape, dims_mapping=None, **extra):
    operand = {"shape": shape, **extra}
    if dims_mapping is not None:
        operand["dims_mapping"] = dims_mapping
    return operand


def replicated(mapping):
    return {"dims_mapping": mapping, "partial": [], "partial_reduce": []}


# --- answers -------------------------------------------------------------------------------

def test_matmul_forward_as_the_readme_says():
    r = infer_forward("matmul", [2, 3], [dm([64, 32], [1, 0]), dm([32, 48])])
    assert r == {
        "inputs": [replicated([1, 0]), replicated([0, -1])],
        "outputs": [{"dims_mapping": [1, -1], "partial": [0], "partial_reduce": ["sum"]}],
    }


def test_matmul_backward():
    r = infer_backward("matmul", [2, 3], [dm([64, 32], [1, 0]), dm([32, 48])], [dm([64, 48], [0, 1])])
    assert r["inputs"] == [replicated([0, -1]), replicated([-1, 1])]
    assert r["outputs"] == [replicated([0, 1])]


def test_backward_partial_output():
    out = dm([64, 48], [1, -1], partial=[0], partial_reduce=["sum"])
    r = infer_backward("matmul", [2, 3], [dm([64, 32]), dm([32, 48])], [out])
    assert r["inputs"] == [replicated([1, -1]), replicated([-1, -1])]
    assert r["outputs"] == [{"dims_mapping": [1, -1], "partial": [0], "partial_reduce": ["sum"]}]


def test_partial_input_and_reduce_types():
    r = infer_forward("relu", [2, 4], [dm([8, 16], [0, -1], partial=[1], partial_reduce=["max"])])
    # relu is not linear: the rule needs the input whole on mesh dim 1
    assert r["inputs"] == [replicated([0, -1])]
    r = infer_forward("max", [2, 4], [dm([8, 16], [-1, 1])], {"axis": [1]})
    assert r["outputs"] == [{"dims_mapping": [-1], "partial": [1], "partial_reduce": ["max"]}]


def test_operands_as_tuples_numpy_integers_and_none_fields():
    x = {"shape": np.zeros((64, 32)).shape, "dims_mapping": (np.int64(1), 0), "placements": None, "partial": None}
    r = infer_forward("matmul", (2, 3), [x, {"shape": [np.int32(32), 48]}])
    assert r["outputs"] == [{"dims_mapping": [1, -1], "partial": [0], "partial_reduce": ["sum"]}]


def test_unknown_sizes():
    r = infer_forward("matmul", [2, 3], [dm([-1, 32], [1, 0]), dm([32, 48])])
    assert r["outputs"][0]["dims_mapping"] == [1, -1]


# --- layout languages ----------------------------------------------------------------------

def round_trip(op, mesh, inputs, key, mesh_names=None, attrs=None):
    """Calls `op`, then again with the answer's layouts: the answer must not change."""
    first = infer_forward(op, mesh, inputs, attrs or {}, mesh_names=mesh_names)
    again = [{**answer, "shape": given["shape"]} for given, answer in zip(inputs, first["inputs"])]
    second = infer_forward(op, mesh, again, attrs or {}, mesh_names=mesh_names)
    assert second == first
    for operand in first["inputs"] + first["outputs"]:
        assert key in operand
    return first


def test_placements():
    r = round_trip("matmul", [2, 4], [{"shape": [8, 1024], "placements": "[Shard(0), Replicate()]"},
                                      {"shape": [1024, 4096], "placements": "[Replicate(), Shard(1)]"}], "placements")
    assert r["outputs"] == [{"placements": "[Shard(0), Shard(1)]"}]
    r = round_trip("matmul", [2, 4], [{"shape": [8, 1024], "placements": "[Shard(dim=0), Shard(1)]"},
                                      {"shape": [1024, 4096], "placements": "[Replicate(), Replicate()]"}],
                   "placements")
    assert r["inputs"][1] == {"placements": "[Replicate(), Shard(0)]"}
    assert r["outputs"] == [{"placements": "[Shard(0), Partial()]"}]


def test_placements_say_partial_themselves():
    r = infer_forward("max", [2, 4], [{"shape": [8, 16], "placements": "[Replicate(), Shard(1)]"}], {"axis": [1]})
    assert r["outputs"] == [{"placements": "[Replicate(), Partial('max')]"}]


def test_partition_spec():
    inputs = [{"shape": [8, 1024], "partition_spec": "P('dp', 'mp')"}, {"shape": [1024, 4096], "partition_spec": "P()"}]
    r = round_trip("matmul", [2, 4], inputs, "partition_spec", mesh_names=["dp", "mp"])
    assert r["inputs"][1] == {"partition_spec": "P('mp', None)", "partial": [], "partial_reduce": []}
    assert r["outputs"] == [{"partition_spec": "P('dp', None)", "partial": [1], "partial_reduce": ["sum"]}]
    r = infer_forward("relu", [2, 4], [{"shape": [8, 8], "partition_spec": "PartitionSpec('dp')", "partial": [1],
                                        "partial_reduce": ["avg"]}], mesh_names=("dp", "mp"))
    assert r["inputs"] == [{"partition_spec": "P('dp', None)", "partial": [], "partial_reduce": []}]


def test_sdy():
    inputs = [{"shape": [8, 1024], "sdy": '#sdy.sharding<@m2, [{"dp"}, {"mp"}]>'},
              {"shape": [1024, 4096], "sdy": "#sdy.sharding<@m2, [{}, {}]>"}]
    r = round_trip("matmul", [2, 4], inputs, "sdy", mesh_names=["dp", "mp"])
    assert r["outputs"] == [{"sdy": '#sdy.sharding<@m2, [{"dp"}, {}], unreduced={"mp"}>'}]
    r = infer_forward("max", [2, 4], [{"shape": [8, 16], "sdy": '#sdy.sharding<@mesh, [{}, {"mp"}]>'}],
                      {"axis": [1]}, mesh_names=["dp", "mp"])
    assert r["outputs"] == [{"sdy": "#sdy.sharding<@mesh, [{}]>", "partial": [1], "partial_reduce": ["max"]}]


def test_dims_mapping_round_trip():
    round_trip("matmul", [2, 3], [dm([64, 32], [1, 0]), dm([32, 48])], "dims_mapping")


def test_no_layout_answers_in_dims_mapping():
    r = infer_forward("relu", [2], [{"shape": [4]}], mesh_names=["dp"])
    assert r["inputs"] == [replicated([-1])]


# --- co-shard and phi ----------------------------------------------------------------------

def test_co_shard_nested_mapping():
    inputs = [dm([64, 32], [[0], [1]]), dm([32, 48], [[2], [0]])]
    r = infer_forward("matmul", [2, 2, 2], inputs, semantics="phi")
    assert r["inputs"] == [replicated([[0], [1, 2]]), replicated([[1, 2], []])]
    assert r["outputs"] == [{"dims_mapping": [0, -1], "partial": [1, 2], "partial_reduce": ["sum", "sum"]}]
    # fluid does not merge into a co-shard: the conflict is an error
    with pytest.raises(SpmdError) as e:
        infer_forward("matmul", [2, 2, 2], inputs)
    assert e.value.kind == "unimplemented"


def test_co_shard_backward_and_placements():
    r = infer_backward("matmul", [2, 2, 2], [dm([64, 32]), dm([32, 48])], [dm([64, 48], [[0, 1], [2]])],
                       semantics="phi")
    assert r["inputs"] == [replicated([[0, 1], []]), replicated([-1, 2])]
    r = infer_forward("relu", [2, 2], [{"shape": [8, 8], "placements": "[Shard(0), Shard(0)]"}], semantics="phi")
    assert r["outputs"] == [{"placements": "[Shard(0), Shard(0)]"}]
    r = infer_forward("relu", [2, 2], [dm([8, 8], [[0, 1], []])])
    assert r["outputs"] == [replicated([[0, 1], []])]


def test_phi_grad_rule():
    r = infer_forward("matmul_grad", [2, 4], [{"shape": [8, 64], "placements": "[Shard(0), Replicate()]"},
                                              {"shape": [64, 128], "placements": "[Replicate(), Shard(1)]"},
                                              {"shape": [8, 128], "placements": "[Shard(0), Shard(1)]"}],
                      semantics="phi")
    assert r["outputs"] == [{"placements": "[Shard(0), Partial()]"}, {"placements": "[Partial(), Shard(1)]"}]


# --- attributes ----------------------------------------------------------------------------

def test_bool_attribute():
    r = infer_forward("matmul", [2, 3], [dm([32, 64], [0, 1]), dm([32, 48])], {"trans_x": True})
    assert r["outputs"] == [{"dims_mapping": [1, -1], "partial": [0], "partial_reduce": ["sum"]}]


def test_int_attribute():
    r = infer_forward("softmax", [2, 3], [dm([8, 16], [0, 1])], {"axis": 0})
    assert r["inputs"] == [replicated([-1, 1])]
    r = infer_forward("softmax", [2, 3], [dm([8, 16], [0, 1])], {"axis": np.int64(-1)})
    assert r["inputs"] == [replicated([0, -1])]


def test_float_attribute():
    for scale in (2.5, 2, np.float64(0.5)):  # an int is a valid float
        r = infer_forward("scale", [2], [dm([8], [0])], {"scale": scale, "bias": 1.0})
        assert r["outputs"] == [replicated([0])]


def test_str_attribute():
    r = infer_forward("einsum", [2, 3], [dm([4, 16, 32], [0, -1, 1]), dm([32, 64])], {"notation": "bsh,hd->bsd"})
    assert r["outputs"] == [{"dims_mapping": [0, -1, -1], "partial": [1], "partial_reduce": ["sum"]}]
    r = infer_forward("sum", [2, 3], [dm([8, 16], [-1, 1])], {"axis": [1], "reduce": "max"})
    assert r["outputs"] == [{"dims_mapping": [-1], "partial": [1], "partial_reduce": ["max"]}]


def test_int_list_attribute():
    for perm in ([1, 0], (1, 0), np.array([1, 0])):
        r = infer_forward("transpose", [2, 3], [dm([8, 16], [0, 1])], {"perm": perm})
        assert r["outputs"] == [replicated([1, 0])]
    r = infer_forward("reshape", [2, 2], [dm([4, 6, 8], [[0], [1], []])], {"shape": [192]}, semantics="phi")
    assert r["outputs"] == [replicated([[0, 1]])]


def test_attribute_alias():
    r = infer_forward("sum", [2, 2, 2], [dm([16, 32, 48], [[0, 1], [], [2]])], {"axis": [0], "keepdim": True},
                      semantics="phi")
    assert r["outputs"] == [{"dims_mapping": [-1, -1, 2], "partial": [0, 1], "partial_reduce": ["sum", "sum"]}]


def test_context_parallel_attribute():
    # Paddle's FlashAtt vector (spmd_rule_test.cc): q, k, v with the sequence on mesh dim 1; phi's
    # rule drops it, unless context parallelism is asked for.
    qkv = dm([2, 256, 2, 128], [0, 1, -1, -1])
    absent = dm([], [])
    for semantics in ("phi", "fluid"):
        r = infer_forward("flash_attention", [2, 2], [qkv, qkv, qkv, absent, absent], {"dropout": 0.5},
                          semantics=semantics)
        assert r["inputs"][:3] == [replicated([0, -1, -1, -1])] * 3
        assert r["outputs"] == [replicated([0, -1, -1, -1]), replicated([0, -1, -1, -1]), replicated([0, -1, -1]),
                                replicated([-1])]
        r = infer_forward("flash_attention", [2, 2], [qkv, qkv, qkv, absent, absent], {"context_parallel": True},
                          semantics=semantics)
        assert r["inputs"][:3] == [replicated([0, 1, -1, -1]), replicated([0, -1, -1, -1]), replicated([0, -1, -1, -1])]
        assert r["outputs"][2] == replicated([0, -1, 1])
    grad_in = [qkv, qkv, qkv, dm([2, 256, 2, 128], [0, -1, 1, -1]), dm([2, 2, 256], [0, 1, -1]), absent, absent,
               dm([2, 256, 2, 128], [-1, -1, -1, -1])]
    r = infer_forward("flash_attention_grad", [2, 2], grad_in, {"dropout": 0.5}, semantics="phi")
    assert r["outputs"] == [replicated([0, -1, 1, -1])] * 3
    r = infer_forward("flash_attention_grad", [2, 2], grad_in, {"context_parallel": True}, semantics="phi")
    assert r["outputs"][1]["partial"] == [1]


# --- the rule table ------------------------------------------------------------------------

def test_has_rule_and_rules():
    assert ctspmd.has_rule("matmul") and ctspmd.has_rule("lookup_table_v2")
    assert not ctspmd.has_rule("matmull")
    rules = ctspmd.rules()
    assert len(rules) > 100 and all(ctspmd.has_rule(name) for name in rules)
    assert rules["matmul"] == {"trans_x": {"type": "bool", "default": False, "alias": None},
                               "trans_y": {"type": "bool", "default": False, "alias": None}}
    assert rules["lookup_table_v2"]["padding_idx"] == {"type": "int", "default": -1, "alias": None}
    assert rules["sum"]["axis"]["default"] == [] and rules["sum"]["keep_dim"]["alias"] == "keepdim"
    assert rules["layer_norm"]["epsilon"]["default"] == pytest.approx(1e-5)
    assert rules["add"] == {}
    for name in ("flash_attention", "flash_attention_grad"):
        assert rules[name]["context_parallel"] == {"type": "bool", "default": False, "alias": None}


# --- errors: SpmdError with every kind ----------------------------------------------------

def error_of(call, *args, **kwargs):
    with pytest.raises(SpmdError) as e:
        call(*args, **kwargs)
    assert isinstance(e.value, ValueError) and str(e.value) == e.value.message
    return e.value


def test_not_found():
    e = error_of(infer_forward, "matmull", [2], [])
    assert e.kind == "not_found"
    assert e.message == "no rule is registered for operator 'matmull'; closest: matmul"


def test_unimplemented():
    e = error_of(infer_forward, "matmul", [2, 3], [dm([64, 32], [-1, 0]), dm([32, 48], [1, -1])])
    assert e.kind == "unimplemented"
    assert e.message == "matmul: tensor axis 'k' is sharded by two different mesh dims, 1 and 0"


def test_precondition_not_met():
    e = error_of(infer_forward, "embedding", [2, 3], [dm([4, 16], [0, -1]), dm([512, 768], [0, -1])])
    assert e.kind == "precondition_not_met"
    assert e.message == "embedding: tensor axes 'a' and 'j' are sharded by the same mesh dim 0"


@pytest.mark.parametrize("call, message", [
    (lambda: infer_forward("embedding", [2, 3], [dm([4, 16]), dm([512, 768], [1, -1])], {"padding_idx": 3}),
     "embedding: row-wise parallel of the embedding table does not support padding_idx (padding_idx = 3), but the "
     "table's row axis is sharded by mesh dim 1"),
    (lambda: infer_forward("matmul", [2, 3], [dm([4, 4]), dm([4, 4])], {"trans_x": 1}),
     "matmul: attribute 'trans_x' must be bool, not int"),
    (lambda: infer_forward("matmul", [2, 3], [dm([4, 4]), dm([4, 4])], {"transpose": True}),
     "matmul: unknown attribute 'transpose'; accepted: trans_x, trans_y"),
    (lambda: infer_forward("matmul", [2, 3], [{"shape": [4, 4], "dims": [0, 1]}, dm([4, 4])]),
     "unknown field 'dims' in inputs[0]; accepted: shape, dims_mapping, placements, partition_spec, sdy, partial, "
     "partial_reduce"),
    (lambda: infer_forward("matmul", [2, 3], [{"dims_mapping": [0, 1]}, dm([4, 4])]), 'inputs[0] has no "shape"'),
    (lambda: infer_forward("matmul", [2, 3], [dm([4, -2]), dm([4, 4])]),
     "inputs[0]: dist_tensor_spec: tensor dim 1 has size -2; a size is >= 0, or -1 when unknown"),
    (lambda: infer_forward("matmul", [2, 3], [dm([4, 4], [2, -1]), dm([4, 4])]),
     "inputs[0]: tensor_dist_attr: dims mapping entry 2 of tensor dim 0 is not -1 or a mesh dim in [0, 2)"),
    (lambda: infer_forward("matmul", [2, 3], [dm([4, 4], [0]), dm([4, 4])]),
     "inputs[0]: dist_tensor_spec: the dims mapping has 1 entries but the tensor has rank 2"),
    (lambda: infer_forward("matmul", [2, 3], [dm([4, 4], partial=[5]), dm([4, 4])]),
     "inputs[0]: tensor_dist_attr: partial dim 5 is not a mesh dim in [0, 2)"),
    (lambda: infer_forward("relu", [2], [dm([4], partial=[0], partial_reduce=["mean"])]),
     "inputs[0].partial_reduce[0] must be one of sum, max, min, prod, avg, any, all"),
    (lambda: infer_forward("relu", [2], [dm([4], partial=[0], partial_reduce=["sum", "max"])]),
     "inputs[0].partial_reduce must have one reduce type per partial dim"),
    (lambda: infer_forward("relu", [2], [dm([4], partial_reduce=["sum"])]),
     'inputs[0] has "partial_reduce" but no "partial"'),
    (lambda: infer_forward("relu", [2, 2], [dm([4, 4], [[0], 1])]),
     "inputs[0].dims_mapping mixes lists and integers: nested, every entry is a list of mesh dims ([[0, 1], []])"),
    (lambda: infer_forward("relu", [2, 2], [dm([4, 4], [[0, 1, 0, 1, 0], []])]),
     "inputs[0].dims_mapping[0] has 5 entries, above max_mesh_ndim = 4"),
    (lambda: infer_forward("relu", [2], [dm([1] * 10)]), "inputs[0].shape has 10 entries, above max_rank = 9"),
    (lambda: infer_forward("relu", [2], [dm([4])] * 17), "inputs has 17 operands, above max_operands = 16"),
    (lambda: infer_forward("relu", [2], [dm([2**63])]), "inputs[0].shape[0] is outside the 64-bit integer range"),
    (lambda: infer_forward("relu", [2], [dm([4])], semantics="quantum"),
     '"semantics" must be "fluid" or "phi", not "quantum"'),
    (lambda: infer_forward("relu", [2, 4], [{"shape": [8, 8], "placements": "[Shard(0), Partial('max')]",
                                             "partial": [1]}]),
     'inputs[0] gives "partial" beside "placements", which say partial themselves (Partial())'),
    (lambda: infer_forward("relu", [2, 4], [{"shape": [8, 8], "placements": "[Shard(0), Shard(0)]",
                                             "dims_mapping": [0, 1]}]),
     'inputs[0] gives both "dims_mapping" and "placements": one layout per operand'),
    (lambda: infer_forward("matmul", [2, 4], [{"shape": [8, 8], "sdy": '#sdy.sharding<@m, [{"dp"}, {"mp"}]>'},
                                              {"shape": [8, 8], "partition_spec": "P()"}], mesh_names=["dp", "mp"]),
     'inputs[1] gives "partition_spec", but inputs[0] gave "sdy": a request uses one layout form for all its operands'),
    (lambda: infer_forward("matmul", [2, 4], [{"shape": [8, 8], "partition_spec": "P('dp', 'mp')"}, dm([8, 8])]),
     "inputs[0]: partition_spec: column 3: a mesh axis name, but the mesh's dims have no names (give a named_mesh, "
     'or "mesh_names" to the tool)'),
    (lambda: infer_forward("matmul", [2, 4], [{"shape": [8, 8], "partition_spec": "P('dp', 'tp')"}, dm([8, 8])],
                           mesh_names=["dp", "mp"]),
     "inputs[0]: partition_spec: column 9: no dim of the mesh (2 dims) has this name"),
    (lambda: infer_forward("relu", [2, 4], [dm([8, 8])], mesh_names=["dp", "dp"]),
     "named_mesh: mesh dims 0 and 1 have the same name"),
    (lambda: infer_forward("relu", [2, 4], [dm([8, 8])], mesh_names=["dp"]),
     "mesh_names has 1 names, but the mesh has 2 dims: give one name per mesh dim"),
    (lambda: infer_backward("matmul", [2, 3], [dm([64, 32]), dm([32, 48])], [dm([64, 48], [0, 1]), dm([1])]),
     None),
    (lambda: infer_forward("relu", [], [dm([8, 8])]),
     "process_mesh: a mesh has at least one dim (a single device: [1])"),
])
def test_invalid_argument(call, message):
    with pytest.raises(SpmdError) as e:
        call()
    assert e.value.kind == "invalid_argument"
    if message is not None:
        assert e.value.message == message


def test_spmd_error_class():
    assert issubclass(SpmdError, ValueError)
    e = SpmdError("m", "not_found")
    assert (e.kind, e.message, str(e)) == ("not_found", "m", "m")
    assert SpmdError("m").kind == "invalid_argument"
    copy = pickle.loads(pickle.dumps(e))
    assert (copy.kind, copy.message) == ("not_found", "m")
    with pytest.raises(ValueError):  # caught as a ValueError too
        infer_forward("matmull", [2], [])


# --- wrong Python types: TypeError, never a crash -----------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: infer_forward(3, [2], []), None),
    (lambda: infer_forward("relu", 2, [dm([4])]), "mesh must be a list of ints, not int"),
    (lambda: infer_forward("relu", "2", [dm([4])]), "mesh must be a list of ints, not str"),
    (lambda: infer_forward("relu", [2.0], [dm([4])]), "mesh[0] must be an int, not float"),
    (lambda: infer_forward("relu", [2], dm([4])), "inputs must be a list of operands (dicts), not dict"),
    (lambda: infer_forward("relu", [2], None), "inputs must be a list of operands (dicts), not NoneType"),
    (lambda: infer_forward("relu", [2], [[4]]), "inputs[0] must be a dict, not list"),
    (lambda: infer_forward("relu", [2], [{1: [4]}]), "a key of inputs[0] must be a str, not int"),
    (lambda: infer_forward("relu", [2], [dm(4)]), "inputs[0].shape must be a list of ints, not int"),
    (lambda: infer_forward("relu", [2], [dm([4.0])]), "inputs[0].shape[0] must be an int, not float"),
    (lambda: infer_forward("relu", [2], [dm([True])]), "inputs[0].shape[0] must be an int, not bool"),
    (lambda: infer_forward("relu", [2], [dm([4], "0")]), "inputs[0].dims_mapping must be a list of ints, not str"),
    (lambda: infer_forward("relu", [2, 2], [dm([4, 4], [0, [1]])]), "inputs[0].dims_mapping[1] must be an int, not list"),
    (lambda: infer_forward("relu", [2], [{"shape": [4], "placements": 3}]),
     "inputs[0].placements (the language's own text) must be a str, not int"),
    (lambda: infer_forward("relu", [2], [dm([4], partial=0)]), "inputs[0].partial must be a list of ints, not int"),
    (lambda: infer_forward("relu", [2], [dm([4], partial=[0], partial_reduce="sum")]),
     "inputs[0].partial_reduce must be a list of str, not str"),
    (lambda: infer_forward("relu", [2], [dm([4], partial=[0], partial_reduce=[0])]),
     "inputs[0].partial_reduce[0] must be a str, not int"),
    (lambda: infer_forward("relu", [2], [dm([4])], [("axis", 0)]), "attrs must be a dict, not list"),
    (lambda: infer_forward("relu", [2], [dm([4])], {0: 1}), "an attribute name must be a str, not int"),
    (lambda: infer_forward("softmax", [2], [dm([4])], {"axis": None}),
     "attrs['axis'] must be a bool, int, float, str or list of ints, not NoneType"),
    (lambda: infer_forward("softmax", [2], [dm([4])], {"axis": {"a": 1}}),
     "attrs['axis'] must be a bool, int, float, str or list of ints, not dict"),
    (lambda: infer_forward("transpose", [2], [dm([4])], {"perm": [0.5]}), "attrs['perm'][0] must be an int, not float"),
    (lambda: infer_forward("relu", [2], [dm([4])], semantics=1), "semantics must be a str, not int"),
    (lambda: infer_forward("relu", [2], [dm([4])], mesh_names="dp"), "mesh_names must be a list of str, not str"),
    (lambda: infer_forward("relu", [2], [dm([4])], mesh_names=[1]), "mesh_names[0] must be a str, not int"),
    (lambda: infer_backward("relu", [2], [dm([4])], None), "outputs must be a list of operands (dicts), not NoneType"),
    (lambda: infer_backward("relu", [2], [dm([4])], [object()]), "outputs[0] must be a dict, not object"),
    (lambda: ctspmd.has_rule(None), None),
])
def test_wrong_types(call, message):
    with pytest.raises(TypeError) as e:
        call()
    if message is not None:
        assert str(e.value) == message


def test_deep_and_strange_values_do_not_crash():
    deep = [0]
    for _ in range(10000):
        deep = [deep]
    with pytest.raises((TypeError, SpmdError)):
        infer_forward("relu", [2], [dm([4], deep)])

    class NoLength:
        def __getitem__(self, i):
            raise IndexError

    with pytest.raises(TypeError):
        infer_forward("relu", NoLength(), [dm([4])])
    with pytest.raises(UnicodeEncodeError):
        infer_forward("relu", [2], [{"shape": [4], "placements": "\udc80"}])
