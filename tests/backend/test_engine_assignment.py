"""Engine assignment defaults and DMA queue round-robin."""

from __future__ import annotations

import pytest

from nkic.backend.engines import AssignEngines
from nkic.backend.schedule import schedule
from nkic.passes.base import PassContext

from .irkit import kernel

SBUF = """\
  %f = alloc sbuf float32[128, 64] "f"
  %i = alloc sbuf int32[128, 64] "i"
  %u = alloc sbuf uint32[128, 64] "u"
  %p = alloc psum int32[128, 64] "p"
  %q = alloc psum float32[128, 128] "q"
  %b = alloc sbuf bfloat16[128, 128] "b"
"""


def T(name: str, f: int = 64) -> str:
    return f"%{name}[0; [{f}, 128], [1, {f}]]"


def engine_of(line: str) -> str:
    k = kernel(SBUF + "  " + line)
    AssignEngines().run(k, PassContext("trn2"))
    return next(k.instructions()).engine


@pytest.mark.parametrize(
    ("line", "engine"),
    [
        (f'tensor_tensor(dst={T("i")}, data1={T("i")}, data2={T("u")}) {{op="add"}}', "gpsimd"),
        (f'tensor_tensor(dst={T("i")}, data1={T("i")}, data2={T("p")}) {{op="add"}}', "vector"),
        (f'tensor_tensor(dst={T("f")}, data1={T("i")}, data2={T("i")}) {{op="add"}}', "vector"),
        (f"nc_transpose(dst={T('q', 128)}, data={T('b', 128)}) {{}}", "tensor"),
        (f"nc_transpose(dst={T('b', 128)}, data={T('b', 128)}) {{}}", "vector"),
        (f"tensor_copy(dst={T('f')}, src={T('i')}) {{}}", "vector"),
        (f"memset(dst={T('f')}) {{value=0.0}}", "vector"),
        (f'activation(dst={T("f")}, data={T("f")}) {{op="exp"}}', "scalar"),
        (f'tensor_copy(dst={T("f")}, src={T("i")}) {{engine="gpsimd"}}', "gpsimd"),
        (f'tensor_copy(dst={T("f")}, src={T("i")}) {{engine="tensor"}}', "vector"),
        (f'tensor_copy(dst={T("f")}, src={T("i")}) {{engine="unknown"}}', "vector"),
        (f"memset[gpsimd](dst={T('f')}) {{value=0.0}}", "gpsimd"),
    ],
)
def test_engine_choice(line, engine):
    assert engine_of(line) == engine


def test_dma_instructions_round_robin_over_sixteen_queues():
    loads = "\n".join(
        f"  dma_copy(dst={T('f')}, src=%a[{64 * i}; [64, 128], [1, 64]]) {{}}" for i in range(18)
    )
    k = kernel(SBUF + loads, '  param %a : hbm float32[128, 1152] "a"')
    AssignEngines().run(k, PassContext("trn2"))
    queues = [s.queue for s in schedule(k).insts]
    assert queues == [f"dma{i % 16}" for i in range(18)]
