"""Loops the compiler unrolled are named in profiles and faults as kept loops are: each
instruction copy carries its iteration, and the copies of one source instruction count as one
instruction in the costliest-instruction list and on the critical path."""

from __future__ import annotations

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
    body = nkirt.load(compiled(tmp_path).neff).body
    adds = [n for n in body if n.get("op") == "tensor_tensor"]
    assert [n["iteration"] for n in adds] == [
        [["b", b], ["i", i]] for b in range(2) for i in range(3)
    ]
    memset = [n for n in body if n.get("op") == "memset"][0]
    assert "iteration" not in memset  # outside every loop


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
