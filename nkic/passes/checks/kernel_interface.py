"""The kernel's contract with its caller: outputs written, inputs left alone, shared HBM
allocated at kernel level.

NKI 0.3.0 allows the output-as-argument style (a kernel may write a parameter and return
nothing; the simulator writes the array back), so writing an input that is not returned is a
warning, not an error: it usually means a missing `return` or a wrong destination.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...diagnostics import Related
from ...ir.core import Alloc, Inst, Kernel
from ..base import Pass, PassContext
from ..regions import runs
from .accesses import is_write


@dataclass(frozen=True)
class KernelInterface(Pass):
    """Reports unwritten outputs, written inputs and shared HBM allocated inside loops."""

    name = "kernel-interface"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        params = {id(p) for p in kernel.params}
        returned = {id(t) for t in kernel.returns}
        written: dict[int, object] = {}  # parameter or returned tensor -> its first writer
        shared_in_loops = []
        for op, loops in kernel.walk():
            if isinstance(op, Inst) and runs(loops):
                for name, ap in op.aps():
                    t = id(ap.tensor)
                    if (t in params or t in returned) and is_write(op, name):
                        written.setdefault(t, op.loc)
            elif isinstance(op, Alloc) and op.result.buffer == "shared_hbm" and loops:
                shared_in_loops.append((op, loops))
        for t in kernel.returns:
            # in an LNC launch one core may write an output for both: the cross-core checks
            # (cross_core.py) look at the whole launch
            if id(t) not in written and id(t) not in params and kernel.cores == 1:
                ctx.sink.error(
                    "err_tensor_output_not_written_to",
                    f"`{t.label or t.name}` is returned but nothing writes it",
                    t.loc,
                    "write the output with `nisa.dma_copy(dst=...)` before returning it; a "
                    "loop with zero iterations writes nothing",
                )
        for p in kernel.params:
            if id(p) in written and id(p) not in returned:
                ctx.sink.warning(
                    "err_cannot_update_immutable_parameter",
                    f"the kernel writes its input `{p.label or p.name}` but does not return it",
                    written[id(p)],
                    "return the parameter to make the update part of the kernel's result, or "
                    "write into a new `nl.shared_hbm` tensor",
                    related=(Related(p.loc, "parameter declared here"),),
                )
        for op, loops in shared_in_loops:
            t = op.result
            ctx.sink.error(
                "err_shared_hbm_must_in_kernel_level",
                f"shared HBM tensor `{t.label or t.name}` is allocated inside a loop",
                op.loc,
                "allocate `nl.shared_hbm` tensors at the top level of the kernel and "
                "index them inside the loop",
                related=(Related(loops[-1].loc, "inside this loop"),),
            )
