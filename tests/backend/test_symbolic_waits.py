"""A `sequential_range` loop kept symbolic gets waits at least as fine as the same loop
unrolled: its predicted latency is no worse (loop-carried dependencies through a tile)."""

from __future__ import annotations

import nkirt
import pytest

from nkic import driver
from nkic.frontend import TensorSpec

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\n"
RUNNING_SUM = """def k(x):
    T, P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for t in nl.sequential_range(T):
        xt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t])
        e = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=xt)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=e, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""
RECURRENCE = """def k(x):
    T, P, F = x.shape
    out = nl.ndarray((T, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    h = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=h, value=0.0)
    for t in nl.sequential_range(T):
        xt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t])
        g = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=g, data1=h, data2=xt, op=nl.add)
        nisa.activation(dst=h, op=nl.tanh, data=g)
        nisa.dma_copy(dst=out[t], src=h)
    return out
"""


def latency_ns(path, unroll: bool) -> float:
    args = {"x": TensorSpec((16, 128, 512), "bfloat16")}
    res = driver.compile_file(str(path), "k", args, "trn2", unroll_all=unroll)
    assert res.ok, res.diagnostics
    program = nkirt.load(res.neff)
    assert program.instance_count >= 16 * 3  # every iteration, either way
    return nkirt.execute(program, {}, timing_only=True).profile["total_ns"]


# Unrolled, the 16 loads are 16 instructions on 16 DMA queues whose 1.3 us fixed costs
# overlap; symbolic, the one load instruction rotates its instances over the same queues
# (docs/neff-format.md `queues`), so both take 23.69 us (on one queue: 25.63 us).
@pytest.mark.parametrize("body", [RUNNING_SUM, RECURRENCE], ids=["running_sum", "recurrence"])
def test_symbolic_loop_is_no_slower_than_unrolled(tmp_path, body):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + body)
    symbolic, unrolled = latency_ns(path, False), latency_ns(path, True)
    assert symbolic <= unrolled * 1.01, (symbolic, unrolled)
