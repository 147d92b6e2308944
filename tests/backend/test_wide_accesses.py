"""Accesses that meet every bucket of their memory (a DMA at a run-time offset counts as
touching its whole tensor) are kept once in the scheduler's access index, not once per
bucket: the waits are the same as with them in every bucket, and the kernel computes the
same values as numpy."""

from __future__ import annotations

import numpy as np
import pytest

import nkic
from nkic.backend import schedule as sched
from nkic.driver import compile_file
from nkic.frontend import TensorSpec

# Rounds of scatters (run-time rows: whole-tensor writes), plain row copies (exact writes
# that hide what came before them in their buckets) and gathers (whole-tensor reads) on one
# HBM tensor of 19 buckets, in a Python range loop compiled unrolled (`unroll_all`).
KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rounds(table, ids, values):
    R, D = table.shape
    P = ids.shape[0]
    out = nl.ndarray((R, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    idx = nl.ndarray((P, 1), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids)
    got = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.shared_hbm)
    for r in range(4):
        v = nl.ndarray((P, D), dtype=values.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=v, src=values[r * P : (r + 1) * P, :])
        nisa.dma_copy(dst=out.ap([[D, P], [1, D]], vector_offset=idx), src=v)
        row = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=row, src=out[r * P : (r + 1) * P, :])
        nisa.dma_copy(dst=out[(r + 1) * P : (r + 2) * P, :], src=row)
        g = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=g, src=out.ap([[D, P], [1, D]], vector_offset=idx))
        nisa.dma_copy(dst=got, src=g)
    return out, got
"""

R, D, P = 300, 32, 16


def reference(table, ids, values):
    out = table.copy()
    got = None
    for r in range(4):
        out[ids[:, 0]] = values[r * P : (r + 1) * P]
        out[(r + 1) * P : (r + 2) * P] = out[r * P : (r + 1) * P]
        got = out[ids[:, 0]].copy()
    return out, got


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    path = tmp_path_factory.mktemp("wide") / "rounds.py"
    path.write_text(KERNEL)
    args = {
        "table": TensorSpec((R, D), "float32"),
        "ids": TensorSpec((P, 1), "int32"),
        "values": TensorSpec((4 * P, D), "float32"),
    }
    res = compile_file(str(path), "rounds", args, "trn2", unroll_all=True)
    assert res.neff is not None, [d.message for d in res.diagnostics]
    return res


def _waits(kernel) -> list:
    return [
        (s.id, s.inst.opcode, s.queue, [tuple(w) for w in s.waits])
        for s in sched.schedule(kernel).insts
    ]


def test_whole_tensor_accesses_get_the_waits_they_get_in_every_bucket(compiled, monkeypatch):
    wide = []
    is_wide = sched._Index._is_wide

    def spy(self, a, first, last):
        found = is_wide(self, a, first, last)
        wide.append(found)
        return found

    monkeypatch.setattr(sched._Index, "_is_wide", spy)
    kept_once = _waits(compiled.ir)
    assert sum(wide) == 8  # the 4 scatters and the 4 gathers
    monkeypatch.setattr(sched._Index, "_is_wide", lambda self, a, first, last: False)
    in_every_bucket = _waits(compiled.ir)
    assert kept_once == in_every_bucket
    assert any(w for *_, w in kept_once)


def test_the_kernel_computes_what_numpy_does(compiled):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((R, D)).astype(np.float32)
    ids = rng.permutation(R)[:P].reshape(P, 1).astype(np.int32)
    values = rng.standard_normal((4 * P, D)).astype(np.float32)
    out, got = nkic.CompiledKernel(compiled.neff)(table, ids, values)
    want_out, want_got = reference(table, ids, values)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(got, want_got)
