"""Backend tests on IR text: compile through the pipeline and look at queues and waits."""

from __future__ import annotations

from nkic.ir.core import Kernel
from nkic.ir.parser import parse_kernel
from nkic.ir.verifier import verify
from nkic.passes.base import PassContext
from nkic.passes.pipeline import lowering_passes


def at(line: int) -> str:
    return f"@0:{line}:5-{line}:40"


def kernel(body: str, params: str = "", returns: str = "", target: str = "trn2") -> Kernel:
    return parse_kernel(
        f'kernel @k target={target} {{\n  file 0 "kernel.py"\n{params}\n{body}\n  return {returns}\n}}\n'
    )


def lowered(body: str, params: str = "", returns: str = "", target: str = "trn2") -> Kernel:
    """The kernel after the lowering passes (independent of the semantic checks)."""
    k = kernel(body, params, returns, target)
    ctx = PassContext(target)
    for p in lowering_passes():
        p.run(k, ctx)
        assert verify(k) == []
    assert ctx.sink.items == [], ctx.sink.items
    return k


def blocked_matmul(kt: int = 4, p: int = 128, tm: int = 128, tn: int = 512) -> tuple[str, str]:
    """(params, body): matmul_blocked with TILES_M = TILES_N = 2 and `kt` K tiles of `p` rows,
    tiles of `tm` x `tn`; the lhsT and rhs blocks are single-buffered (fixed addresses)."""
    m4, n4, lrow, rrow = 4 * tm, 4 * tn, 2 * kt * tm, 2 * kt * tn
    params = (
        f'  param %a : hbm bfloat16[{kt * p}, {m4}] "lhsT"\n'
        f'  param %b : hbm bfloat16[{kt * p}, {n4}] "rhs"\n'
    )
    body = f"""
  %o = alloc shared_hbm bfloat16[{m4}, {n4}] "o" output
  for $m = 0 to 2 step 1 affine {{
    %l = alloc sbuf bfloat16[{p}, {lrow}] "lhsT_tiles" address(0, 0) fixed
    for $bm = 0 to 2 step 1 affine {{
      for $k = 0 to {kt} step 1 affine {{
        dma_copy(dst=%l[{kt * tm}*$bm + {tm}*$k; [{lrow}, {p}], [1, {tm}]], src=%a[{p * m4}*$k + {2 * tm}*$m + {tm}*$bm; [{m4}, {p}], [1, {tm}]]) {{}}
      }}
    }}
    for $n = 0 to 2 step 1 affine {{
      %r = alloc sbuf bfloat16[{p}, {rrow}] "rhs_tiles" address(0, {2 * lrow}) fixed
      for $bn = 0 to 2 step 1 affine {{
        for $k2 = 0 to {kt} step 1 affine {{
          dma_copy(dst=%r[{kt * tn}*$bn + {tn}*$k2; [{rrow}, {p}], [1, {tn}]], src=%b[{p * n4}*$k2 + {2 * tn}*$n + {tn}*$bn; [{n4}, {p}], [1, {tn}]]) {{}}
        }}
      }}
      for $bm2 = 0 to 2 step 1 affine {{
        for $bn2 = 0 to 2 step 1 affine {{
          %acc = alloc psum float32[{tm}, {tn}] "acc"
          for $k3 = 0 to {kt} step 1 affine {{
            nc_matmul(dst=%acc[0; [{tn}, {tm}], [1, {tn}]], stationary=%l[{kt * tm}*$bm2 + {tm}*$k3; [{lrow}, {p}], [1, {tm}]], moving=%r[{kt * tn}*$bn2 + {tn}*$k3; [{rrow}, {p}], [1, {tn}]]) {{}}
          }}
          %s = alloc sbuf bfloat16[{tm}, {tn}] "out_tile"
          tensor_copy(dst=%s[0; [{tn}, {tm}], [1, {tn}]], src=%acc[0; [{tn}, {tm}], [1, {tn}]]) {{}}
          dma_copy(dst=%o[{2 * tm * n4}*$m + {tm * n4}*$bm2 + {2 * tn}*$n + {tn}*$bn2; [{n4}, {tm}], [1, {tn}]], src=%s[0; [{tn}, {tm}], [1, {tn}]]) {{}}
        }}
      }}
    }}
  }}"""
    return params, body
