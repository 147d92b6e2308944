"""Which operands of an instruction it reads and which it writes (nki.isa parameter names)."""

from __future__ import annotations

from typing import Any

#: Instructions that meet the other cores of an LNC launch (nkirt/launch.py).
CROSS_CORE = frozenset(
    {
        "core_barrier",
        "sendrecv",
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "all_to_all_v",
        "all_gather_v",
        "collective_permute",
        "collective_permute_reduce",
    }
)
#: The metadata setup of a split `_v` collective (nkirt/launch.py runs its trigger).
PREPARES = frozenset({"all_to_all_v_prepare", "all_gather_v_prepare"})

#: Output parameters of nki.isa instructions that do not follow the `dst…`/`…_dst` naming.
_OUTPUT_NAMES = frozenset({"reduce_res"})

#: Instructions that read the current contents of their outputs: accumulating or partial writes.
_READS_OUTPUTS = frozenset({"tensor_copy_predicated", "nc_stream_shuffle"})


def is_output_operand(name: str) -> bool:
    """`dst`, `dst_idx`, `dst_scale`, `val_dst`, `idx_dst`, `reduce_res` are written."""
    return (
        name == "dst" or name.startswith("dst_") or name.endswith("_dst") or name in _OUTPUT_NAMES
    )


def operand_roles(
    op: str, operand_names: list[str], attrs: dict[str, Any], semantics=None
) -> tuple[list[str], list[str], bool]:
    """(read operands, written operands, whether written operands are also read).

    The naming convention is the reference; when the instruction's semantics are loaded their
    declared outputs count as written too. Their `reads_outputs` flag is not used here: some
    semantics ask for the destination only to learn its shape (memset, iota), which is no data
    dependence.
    """
    written = [n for n in operand_names if is_output_operand(n)]
    reads_outputs = op in _READS_OUTPUTS
    if semantics is not None:
        written += [n for n in operand_names if n in semantics.outputs and n not in written]
    if op in ("nc_matmul", "nc_matmul_mx"):
        # the compiler resolves accumulation statically: only an accumulating matmul reads PSUM
        reads_outputs = bool(attrs.get("accumulate"))
    read = [n for n in operand_names if n not in written]
    return read, written, reads_outputs
