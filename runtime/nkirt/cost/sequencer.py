"""Costs of the engine sequencers' own instructions: register moves, loads, stores and
arithmetic (`nisa.register_*`, NkiScalar), and the compare-and-branch of a dynamic loop.

Each engine has a sequencer that fetches, decodes and issues its instructions and runs control
instructions (register ALU, branches) on 64 private 32-bit registers
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.register_alloc.html).
No latency of a register or branch instruction is published. nkic charges each one MIN_II
engine cycles, the smallest cost of any engine instruction (Hardware §11), on the GpSimd
queue (register instructions) or on every queue (a dynamic loop's compare-and-branch,
`TargetTable.branch_ns`).
"""

from __future__ import annotations

from nkirt.cost.shapes import InstructionShape
from nkirt.cost.streaming import rule
from nkirt.cost.tables import MIN_II, TargetTable


@rule("register_move", "register_load", "register_store", "register_alu")
def _register(inst: InstructionShape, table: TargetTable) -> float:
    return MIN_II
