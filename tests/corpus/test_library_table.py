"""The shapes table: parsing, validation, and the inputs a case generates."""

from __future__ import annotations

import textwrap

import ml_dtypes
import numpy as np
import pytest

from benchmarks.corpus.library import SHAPES_TOML, TableError, load_table, make_inputs


def table(tmp_path, text: str):
    p = tmp_path / "shapes.toml"
    p.write_text(textwrap.dedent(text))
    return load_table(p)


KERNEL = """
[[kernel]]
name = "k"
file = "src/k.py"
entry = "k"
test = "test/test_k.py"
"""


def test_cases_args_lnc_inputs_and_tolerance(tmp_path):
    (k,) = table(
        tmp_path,
        KERNEL
        + """
reference = "ref"
tolerance = { atol = 0.5 }

[[kernel.case]]
id = "one"
args = { x = "bfloat16[4,8]", n = "int32[1,1]", scale = "2.5", mode = "'fast'" }
inputs = { n = "const:3" }
lnc = 1

[[kernel.case]]
id = "two"
args = { x = "float32[2,2]" }
tolerance = { atol = 0.0, rtol = 0.0 }
""",
    )
    one, two = k.cases
    assert (k.reference, one.key, one.lnc, two.lnc) == ("ref", "k[one]", 1, 2)
    assert (one.atol, one.rtol, two.atol) == (0.5, 1e-5, 0.0)
    tensors, host = make_inputs(one)
    assert host == {"scale": 2.5, "mode": "fast"}
    assert tensors["n"].tolist() == [[3]]
    # values are exactly representable in the kernel's dtype, so both sides see the same data
    x = tensors["x"]
    assert x.shape == (4, 8)
    assert np.array_equal(x, x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert np.array_equal(x, make_inputs(one)[0]["x"])  # seeded
    given, _ = make_inputs(one, only_given=True)
    assert list(given) == ["n"]


def test_arange_and_randint_generators(tmp_path):
    (k,) = table(
        tmp_path,
        KERNEL
        + """
[[kernel.case]]
id = "c"
args = { a = "int32[2,3]", b = "int32[4]", t = "int32[100]", u = "float32[1000]" }
inputs = { a = "arange", b = "arange:16", t = "randint:0:5", u = "uniform:-0.1:0.1" }
""",
    )
    tensors, _ = make_inputs(k.cases[0])
    assert tensors["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert tensors["b"].tolist() == [0, 16, 32, 48]
    assert set(np.unique(tensors["t"])) <= {0, 1, 2, 3, 4}
    u = tensors["u"]
    assert -0.1 <= u.min() < -0.09 and 0.09 < u.max() <= 0.1  # spread over the whole range


@pytest.mark.parametrize(
    "case, message",
    [
        ('id = "c"\nargs = { x = "float32[2" }', "expected a tensor spec"),
        ('id = "c"\nargs = { x = 3 }', "must be a string spec"),
        ('args = { x = "float32[2]" }', "needs 'id' and 'args'"),
        ('id = "c"\nargs = { x = "float32[2]" }\ninputs = { y = "arange" }', "not a tensor input"),
        ('id = "c"\nargs = { x = "float32[2]" }\ninputs = { x = "zeros" }', "not const:V"),
    ],
)
def test_bad_cases_are_table_errors(tmp_path, case, message):
    with pytest.raises(TableError, match=message):
        table(tmp_path, KERNEL + "\n[[kernel.case]]\n" + case + "\n")


def test_a_kernel_needs_cases_or_a_limit(tmp_path):
    with pytest.raises(TableError, match="give cases or a 'limit'"):
        table(tmp_path, KERNEL)
    (k,) = table(tmp_path, KERNEL + 'limit = "takes a config object"\n')
    assert (k.cases, k.limit) == ((), "takes a config object")
    with pytest.raises(TableError, match="missing 'entry'"):
        table(tmp_path, KERNEL.replace('entry = "k"\n', "") + 'limit = "x"\n')
    with pytest.raises(TableError, match="duplicate kernel name"):
        table(tmp_path, (KERNEL + 'limit = "x"\n') * 2)


def test_the_committed_table_loads_and_names_its_references():
    from benchmarks.corpus.references import REFERENCES

    kernels = load_table(SHAPES_TOML)
    assert len({k.name for k in kernels}) == len(kernels)
    for k in kernels:
        assert not k.reference or k.reference in REFERENCES, k.name


def test_argument_expressions_give_inputs_named_by_place(tmp_path):
    (k,) = table(
        tmp_path,
        KERNEL
        + """
[[kernel.case]]
id = "c"
args = { W = "[float32[2,3], int32[4]]", cfg = "Cfg(x=float32[2], mode=Mode.ROW)" }
inputs = { W_1 = "arange" }
""",
    )
    tensors, host = make_inputs(k.cases[0])
    assert {n: a.shape for n, a in tensors.items()} == {"W_0": (2, 3), "W_1": (4,), "cfg_x": (2,)}
    assert tensors["W_1"].tolist() == [0, 1, 2, 3]
    assert [str(v) for v in host.values()] == [
        "[float32[2,3], int32[4]]",
        "Cfg(x=float32[2], mode=Mode.ROW)",
    ]
    from benchmarks.corpus.references import call_kwargs

    assert call_kwargs(host["cfg"]) == {"x": "float32[2]", "mode": "ROW"}
    with pytest.raises(TableError, match=r"not a tensor input \(inputs: W_0, cfg_x\)"):
        table(
            tmp_path,
            KERNEL
            + '[[kernel.case]]\nid = "c"\nargs = { W = "[float32[2]]", cfg = "Cfg(x=float32[2])" }\ninputs = { W = "arange" }\n',
        )


def test_tolerance_relative_to_max(tmp_path):
    case = '[[kernel.case]]\nid = "c"\nargs = { x = "float32[2]" }\n'
    (k,) = table(tmp_path, KERNEL + 'tolerance = { rtol = 0.01, relative_to = "max" }\n' + case)
    assert (k.cases[0].rtol, k.cases[0].relative_to) == (0.01, "max")
    with pytest.raises(TableError, match="relative_to"):
        table(tmp_path, KERNEL + 'tolerance = { relative_to = "mean" }\n' + case)


def test_a_kernel_names_the_nki_version_it_is_written_in(tmp_path, monkeypatch):
    from benchmarks.corpus import library
    from benchmarks.corpus.nkic_runs import Outcome

    case = '\n[[kernel.case]]\nid = "c"\nargs = { x = "float32[2,2]" }\n'
    (k,) = table(tmp_path, KERNEL + 'nki = "0.6"\n' + case)
    assert k.nki == "0.6"
    with pytest.raises(TableError, match="nki '0.9' is not one of 0.3, 0.4"):
        table(tmp_path, KERNEL + 'nki = "0.9"\n' + case)
    seen = []
    monkeypatch.setattr(
        library, "run_nkic", lambda argv, *a, **kw: seen.append(argv) or Outcome("diagnostics", 0)
    )
    library.run_case(tmp_path, k, k.cases[0], tmp_path, 10.0, False)
    (default,) = table(tmp_path, KERNEL + case)
    library.run_case(tmp_path, default, default.cases[0], tmp_path, 10.0, False)
    assert seen[0][seen[0].index("--nki") + 1] == "0.6" and "--nki" not in seen[1]


def test_packed_tokens_hold_each_token_index_k_times_in_the_last_two_lanes(tmp_path):
    (k,) = table(
        tmp_path,
        KERNEL
        + """
[[kernel.case]]
id = "c"
args = { x = "bfloat16[40,10]" }
inputs = { x = "packed_tokens:6:3" }
""",
    )
    tensors, _ = make_inputs(k.cases[0])
    lanes = tensors["x"].astype(ml_dtypes.bfloat16)
    ids = np.ascontiguousarray(lanes[:, -2:]).view(np.int32)[:, 0]
    used = ids >= 0
    assert sorted(ids[used].tolist()) == sorted(list(range(6)) * 3)
    assert np.all(tensors["x"][~used] == -1.0) and used.sum() == 18
    with pytest.raises(TableError, match="makes 18 rows"):
        table(
            tmp_path,
            KERNEL + '[[kernel.case]]\nid = "c"\nargs = { x = "bfloat16[10,10]" }\n'
            'inputs = { x = "packed_tokens:6:3" }\n',
        )


def test_moe_routing_tables_agree_and_round_the_block_count(tmp_path):
    # T=100 tokens to K=2 of E=4 experts in blocks of B=16: N = ceil((200-3)/16) + 3 = 16
    # blocks, rounded up to 18 with PER=3; the conditions hold N + 2 flags
    spec = "100:2:4:16:-1:3"
    (k,) = table(
        tmp_path,
        KERNEL
        + f"""
[[kernel.case]]
id = "c"
args = {{ pos = "int32[288]", blk = "int32[18]", cond = "int32[20]", te = "int32[100,4]" }}
inputs = {{ pos = "moe_token_positions:{spec}", blk = "moe_block_experts:{spec}", cond = "moe_block_conditions:{spec}", te = "moe_token_experts:{spec}" }}
""",
    )
    t, _ = make_inputs(k.cases[0])
    pos, blk, cond, te = (t[n].astype(np.int64) for n in ("pos", "blk", "cond", "te"))
    assert te.sum(axis=1).tolist() == [2] * 100  # each token routed to two experts
    blocks = pos.reshape(18, 16)
    for e in range(4):  # an expert's blocks hold exactly its tokens, in order, -1 after them
        ids = blocks[blk == e].ravel()
        assert ids[ids >= 0].tolist() == np.flatnonzero(te[:, e]).tolist()
    assert np.all(np.diff(blk) >= 0) and blk[-1] == 3  # the added blocks go to the last expert
    holds = (blocks >= 0).any(axis=1)
    assert cond[:18].tolist() == holds.astype(int).tolist() and cond[18:].tolist() == [0, 0]
    assert holds.tolist() == sorted(holds.tolist(), reverse=True)  # then only empty blocks
    with pytest.raises(TableError, match="makes 16 values"):  # PER=1: 16 blocks, not 18
        table(
            tmp_path,
            KERNEL + '[[kernel.case]]\nid = "c"\nargs = { x = "int32[18]" }\n'
            'inputs = { x = "moe_block_experts:100:2:4:16" }\n',
        )
