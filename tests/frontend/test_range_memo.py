"""Failed attempts at keeping a plain `range` loop symbolic are cheap: a loop site whose
attempt failed is not attempted again (in an outer unrolled loop, after a restart, on the
other core of an LNC launch), and restarts caused by values escaping plain loops are bounded."""

from __future__ import annotations

import pytest

from nkic.diagnostics import DiagnosticSink
from nkic.frontend import TensorSpec, specialise
from nkic.frontend.interp import loops, state


@pytest.fixture(autouse=True)
def _range_loops_kept_from_the_start(monkeypatch):
    """Plain `range` loops are attempted as symbolic loops only past `PLAIN_AFTER` unrolled
    iterations; these small kernels exercise that form from their first loop."""
    monkeypatch.setattr(loops, "PLAIN_AFTER", 0)


HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

NESTED = (
    HEADER
    + """@nki.jit
def k(x):
    out = nl.ndarray((128, 512), x.dtype, buffer=nl.shared_hbm)
    seen = []
    for j in range(3):  # appends: unrolled
        seen.append(j)
        count = 0
        for i in range(4):  # carries `count`: its attempt fails once, then it unrolls at once
            count += 1
            t = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[:, nl.ds(i * 128, 128)])
            nisa.dma_copy(dst=out[:, nl.ds(i * 128, 128)], src=t)
        assert count == 4
    return out
"""
)

# every loop's last tile is read after it: each read restarts specialisation
ESCAPES = (
    HEADER
    + """@nki.jit
def k(x):
    out = nl.ndarray((128, 128), x.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
{loops}
    nisa.dma_copy(dst=out, src=acc)
    return out
"""
)
ONE = """    for i in range(2):
        t{n} = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t{n}, src=x[:, nl.ds(i * 128, 128)])
    nisa.tensor_tensor(dst=acc, data1=acc, data2=t{n}, op=nl.add)"""


def attempts(monkeypatch) -> list:
    sites = []
    run = loops.Loops.run_symbolic

    def spy(self, node, rv, mode, site, pieces=0):
        sites.append((site[1], rv.kind))
        return run(self, node, rv, mode, site, pieces)

    monkeypatch.setattr(loops.Loops, "run_symbolic", spy)
    return sites


def test_a_failed_site_is_attempted_once_and_shared_by_the_cores(tmp_path, monkeypatch):
    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    sites = attempts(monkeypatch)
    memo = state.LoopMemo()
    for core in (0, 1):
        sink = DiagnosticSink()
        kernel = specialise(
            str(path), "k", {"x": TensorSpec((128, 512), "float32")}, "trn2", sink,
            core=(core, 2), memo=memo,
        )  # fmt: skip
        assert kernel is not None and not sink.has_errors, sink.items
        assert sum(1 for _ in kernel.instructions()) == 3 * 4 * 2
    # the outer loop and the inner one, once each, on core 0 only
    assert sites == [(10, "range"), (13, "range")]
    assert {s[1] for s in memo.unroll} == {10, 13}


def test_restarts_from_escaping_values_are_bounded(tmp_path, monkeypatch):
    n = state.MAX_PLAIN_RESTARTS + 3
    path = tmp_path / "escapes.py"
    path.write_text(ESCAPES.format(loops="\n".join(ONE.format(n=k) for k in range(n))))
    sites = attempts(monkeypatch)
    memo = state.LoopMemo()
    sink = DiagnosticSink()
    kernel = specialise(
        str(path), "k", {"x": TensorSpec((128, 256), "float32")}, "trn2", sink, memo=memo
    )
    assert kernel is not None and not sink.has_errors, sink.items
    assert memo.plain_off and memo.plain_restarts == state.MAX_PLAIN_RESTARTS
    # each run attempts the next loop, whose tile escapes: one attempt per run until plain
    # loops are switched off, then none
    assert len(sites) == state.MAX_PLAIN_RESTARTS
    tiles = [op for op in kernel.body if type(op).__name__ == "Alloc"]
    assert len(tiles) == 2 + 2 * n  # out, acc, then every iteration's own tile
