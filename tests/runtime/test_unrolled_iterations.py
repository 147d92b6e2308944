"""Loops the compiler unrolled are named in profiles and faults as kept loops are: each
instruction copy carries its iteration, and the copies of one source instruction count as one
instruction in the costliest-instruction list and on the critical path."""

from __future__ import annotations

import json

import nkirt
import numpy as np

from nkic import driver
from nkic.frontend import TensorSpec

KERNEL = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for b in range(2):
        for i in range(3):
            t = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[b, i * 128 : (i + 1) * 128, :])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def compiled(tmp_path, source: str = KERNEL, **kw):
    path = tmp_path / "unrolled.py"
    path.write_text(source)
    spec = {"x": TensorSpec((2, 384, 256), "float32")}
    return driver.compile_file(str(path), "k", spec, "trn2", **kw)


def line_of(text: str) -> int:
    return [n for n, line in enumerate(KERNEL.splitlines(), 1) if text in line][0]


def test_each_copy_carries_its_unrolled_iteration_into_the_neff(tmp_path):
    """Each copy names its loop-name tuple in the program's table and gives the values; no
    copy repeats the names (the per-instruction [name, value] pairs of format 1.1)."""
    doc = json.loads(nkirt.load(compiled(tmp_path).neff).text)
    assert doc["unrolled_names"] == [["b", "i"]]
    body = doc["body"]
    adds = [n for n in body if n.get("op") == "tensor_tensor"]
    assert [n["unrolled"] for n in adds] == [[0, b, i] for b in range(2) for i in range(3)]
    memset = [n for n in body if n.get("op") == "memset"][0]
    assert "unrolled" not in memset  # outside every loop
    assert not any("iteration" in n for n in body)


NESTED = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for b in range(2):
        t = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[b, 0:128, :])
        for i in range(3):
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
            for i in range(2):
                nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def test_unrolled_iterations_round_trip_through_the_neff(tmp_path):
    """Copies at three depths (one reusing the name `i` of the loop around it) read back
    with the iteration the compiler unrolled them for, printed as before."""
    res = compiled(tmp_path, NESTED)
    program = nkirt.load(res.neff)
    assert program.unrolled_names == [("b",), ("b", "i"), ("b", "i", "i")]
    insts = program.compiled[1]
    envs = {}
    for inst in insts:
        envs.setdefault(inst.op, []).append(inst.unrolled_env)
    assert envs["memset"] == [{}]
    assert envs["dma_copy"] == [{"b": 0}, {"b": 1}, {}]
    assert envs["tensor_scalar"] == [{"b": b, "i": i} for b in range(2) for i in range(3)]
    # the inner `i` shadows the outer one, as a dict of the pairs always gave
    assert envs["tensor_tensor"] == [
        {"b": b, "i": i} for b in range(2) for _ in range(3) for i in range(2)
    ]
    last = [i for i in insts if i.op == "tensor_tensor"][-1]
    line = [n for n, text in enumerate(NESTED.splitlines(), 1) if "tensor_tensor" in text][0]
    assert last.describe({}) == f"tensor_tensor at unrolled.py:{line} [b=1, i=1]"


def test_the_profile_groups_the_copies_and_names_their_iterations(tmp_path):
    profile = nkirt.execute(nkirt.load(compiled(tmp_path).neff), timing_only=True).profile
    top = {(r["op"], r["loc"]): r["count"] for r in profile["top_instructions"]}
    add_loc = f"unrolled.py:{line_of('tensor_tensor')}"
    assert top[("tensor_tensor", add_loc)] == 6  # one entry for the six copies
    assert len(top) == 4  # memset, load, add, store
    path = profile["critical_path"]["by_instruction"]
    keys = [(r["op"], r["loc"]) for r in path]
    assert len(keys) == len(set(keys))  # one row per source instruction
    for row in path:
        if row["loc"] in (add_loc, f"unrolled.py:{line_of('src=x[b')}"):
            assert set(row["first_iteration"]) == set(row["last_iteration"]) == {"b", "i"}
    assert {add_loc, f"unrolled.py:{line_of('src=x[b')}"} <= {loc for _, loc in keys}


def test_kept_and_unrolled_forms_name_the_same_iterations(tmp_path):
    """The kept form (affine_range, NKI 0.6) and the unrolled one list the same critical path
    rows: same op, count and first and last iteration."""
    kept_source = KERNEL.replace("range(", "nl.affine_range(")
    path = tmp_path / "kept.py"
    path.write_text(kept_source)
    spec = {"x": TensorSpec((2, 384, 256), "float32")}
    kept = driver.compile_file(str(path), "k", spec, "trn2", nki="0.6")
    rows = []
    for res in (kept, compiled(tmp_path)):
        profile = nkirt.execute(nkirt.load(res.neff), timing_only=True).profile
        rows.append(
            sorted(
                (r["op"], r["count"], tuple(r["first_iteration"].items()),
                 tuple(r["last_iteration"].items()))
                for r in profile["critical_path"]["by_instruction"]
            )
        )  # fmt: skip
    assert rows[0] == rows[1]


def test_a_non_finite_report_in_an_unrolled_loop_names_the_iteration(tmp_path):
    """The sum overflows fp32 when block (b=1, i=2) adds 3e38 to the 3e38 of block (0, 0)."""
    x = np.ones((2, 384, 256), dtype=np.float32)
    x[0, 0:128] = x[1, 256:384] = 3e38
    result = nkirt.execute(nkirt.load(compiled(tmp_path).neff), {"x": x})
    (first,) = [w for w in result.profile["warnings"] if w.get("kind") == "non-finite"]
    line = line_of("tensor_tensor")
    assert f"tensor_tensor at unrolled.py:{line} [b=1, i=2] wrote Inf/NaN" in first["message"]
