"""SBUF/PSUM access ports that two engines share on NeuronCore-v2 (Hardware §8, ARCH2).

On v2 VectorE and GpSimd cannot access SBUF at the same time, and VectorE and ScalarE cannot
access PSUM at the same time; the compiler serialises them. v3 lifts both restrictions
(ARCH3), PSUM being parallel "if different banks": VectorE and ScalarE still take turns on one
PSUM bank.
An instruction that uses a shared port may only run while the rival engine is off that port:
it starts at the earliest time from its ready time on at which its whole busy interval fits in
a gap of the rival's port intervals (an instruction is not split). Each engine's own port
intervals never overlap (its queue is in order), so only the rival's intervals are searched.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable

from nkirt.cost.tables import TargetTable

PRUNE_AT = 64

#: (port, engine) pairs that exclude each other, per target flag.
SBUF_PORT = "sbuf"
PSUM_PORT = "psum"
PSUM_RIVALS = {"vector": "scalar", "scalar": "vector"}


def port_claims(engine: str, buffers: set[str], table: TargetTable) -> tuple[tuple, ...]:
    """The (own key, rival key) pairs of an instruction of `engine` touching `buffers`."""
    claims = []
    if table.sbuf_vector_gpsimd_exclusive and "sbuf" in buffers:
        rival = {"vector": "gpsimd", "gpsimd": "vector"}.get(engine)
        if rival:
            claims.append(((SBUF_PORT, engine), (SBUF_PORT, rival)))
    if table.psum_vector_scalar_exclusive and "psum" in buffers:
        rival = {"vector": "scalar", "scalar": "vector"}.get(engine)
        if rival:
            claims.append(((PSUM_PORT, engine), (PSUM_PORT, rival)))
    return tuple(claims)


def bank_claims(engine: str, banks: set[int]) -> tuple[tuple, ...]:
    """v3+: the (own key, rival key) pairs of a VectorE/ScalarE instruction on PSUM `banks`."""
    rival = PSUM_RIVALS[engine]
    return tuple(((PSUM_PORT, bank, engine), (PSUM_PORT, bank, rival)) for bank in sorted(banks))


def per_bank(engine: str, buffers: set[str], table: TargetTable) -> bool:
    """Whether the instruction's PSUM port claims depend on the banks it touches (v3+)."""
    return (
        table.psum_vector_scalar_same_bank_exclusive and engine in PSUM_RIVALS and "psum" in buffers
    )


class PortArbiter:
    """Busy intervals of every (port, engine) pair, as sorted starts and ends."""

    def __init__(self, horizon: Callable[[], float]):
        self.horizon = horizon
        self.starts: dict[tuple, list[float]] = {}
        self.ends: dict[tuple, list[float]] = {}

    def place(self, claims: tuple[tuple, ...], ready: float, busy: float) -> float:
        """The earliest start >= ready at which [start, start + busy) overlaps no rival's
        interval on any claimed port; the interval is recorded for the instruction's engine."""
        start = ready
        moved = True
        while moved:
            moved = False
            for _, rival in claims:
                starts, ends = self.starts.get(rival), self.ends.get(rival)
                if not starts:
                    continue
                # the rival interval that ends first after `start` and begins before our end
                i = bisect_right(ends, start)
                while i < len(starts) and starts[i] < start + busy:
                    start = ends[i]
                    moved = True
                    i += 1
        for own, _ in claims:
            starts = self.starts.setdefault(own, [])
            ends = self.ends.setdefault(own, [])
            if busy > 0:
                at = bisect_right(starts, start)
                starts.insert(at, start)
                insort(ends, start + busy)
                if len(starts) > PRUNE_AT:
                    self._prune(own)
        return start

    def _prune(self, key: tuple) -> None:
        done = bisect_right(self.ends[key], self.horizon())
        del self.starts[key][:done]
        del self.ends[key][:done]
