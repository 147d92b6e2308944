"""The PROG document's text, encoded part by part (`_ProgramWriter.text`), is exactly the JSON
encoding of the document as values (`_ProgramWriter.program`), on kernels that use every kind
of node: loops kept symbolic, dynamic loops, DMAs rotating over queues, symbolic skips,
dynamic access patterns, float attributes, immediates, call stacks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nkic import driver
from nkic.backend.neff import _dumps, _ProgramWriter, _splice
from nkic.backend.schedule import schedule
from nkic.frontend import TensorSpec

from .irkit import blocked_matmul, lowered
from .test_neff_writer import PARAMS, body
from .test_symbolic_waits import HEADER, RECURRENCE, RUNNING_SUM

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# rows [128 i, 128 i + 128) of out = 2 a for i < n (n read at run time)
DYNAMIC = """def k(a, n):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    cols = a.shape[1]

    def body(i):
        x = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a.ap([[cols, 128], [1, cols]], scalar_offset=i * 128))
        nisa.tensor_scalar(dst=x, data=x, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap([[cols, 128], [1, cols]], scalar_offset=i * 128), src=x)

    nl.fori_loop(0, nisa.scalar_load(n_sb), body)
    return out
"""


def both_encodings(kernel) -> tuple[str, str]:
    sched = schedule(kernel)
    doc, text = _ProgramWriter(sched).text()
    return _splice(doc, text), _dumps(_ProgramWriter(sched).program())


def compiled(path, name: str, args: dict, lnc: int = 1):
    res = driver.compile_file(str(path), name, args, "trn2", lnc=lnc)
    assert res.ok, res.diagnostics
    return res.cores or [res.ir]


def kernels(tmp_path) -> list:
    out = [lowered(body(), PARAMS, "%o"), lowered(*reversed(blocked_matmul()))]
    for source in (RUNNING_SUM, RECURRENCE):
        path = tmp_path / f"k{len(out)}.py"
        path.write_text(HEADER + source)
        out += compiled(path, "k", {"x": TensorSpec((16, 128, 512), "bfloat16")})
    path = tmp_path / "dyn.py"
    path.write_text(HEADER + DYNAMIC)
    out += compiled(
        path, "k", {"a": TensorSpec((512, 64), "float32"), "n": TensorSpec((1, 1), "int32")}
    )
    out += compiled(EXAMPLES / "softmax.py", "softmax", {"x": TensorSpec((256, 512), "float32")})
    mm = {"lhsT": TensorSpec((512, 256), "bfloat16"), "rhs": TensorSpec((512, 1024), "bfloat16")}
    out += compiled(EXAMPLES / "matmul_lnc.py", "matmul_lnc", mm, lnc=2)
    return out


def test_text_is_the_json_encoding_of_the_document(tmp_path):
    seen = {"loop", "dynloop", "queues", "symbolic skip", "dynamic", "float", "imm", "stack"}
    for k in kernels(tmp_path):
        text, reference = both_encodings(k)
        assert text == reference
        doc = json.loads(text)
        stack = list(doc["body"])
        while stack:
            node = stack.pop()
            if node["kind"] != "inst":
                seen.discard(node["kind"])
                stack += node["body"]
                continue
            if "queues" in node:
                seen.discard("queues")
            if any(not isinstance(skip, int) for _, skip in node["waits"]):
                seen.discard("symbolic skip")
            if node["stack"]:
                seen.discard("stack")
            if any(isinstance(v, float) for v in node["attrs"].values()):
                seen.discard("float")
            for o in node["operands"].values():
                seen.discard("dynamic" if "dynamic" in o else "imm" if "imm" in o else "")
    assert not seen, f"no kernel here has: {seen}"


@pytest.mark.parametrize(
    "value",
    [
        0.1,
        -0.0,
        1e300,
        float("inf"),
        np.float32(0.5).item(),
        'é\n"x"',
        None,
        True,
        3,
        (1, 2),
        ((1, 2), "a"),
        [1, 2.5],
    ],
)
def test_attribute_and_immediate_values_encode_as_json_does(value):
    k = lowered(body(), PARAMS, "%o")
    for op, _ in k.walk():
        if hasattr(op, "attrs"):
            op.attrs["extra"] = value
    text, reference = both_encodings(k)
    assert text == reference
