"""Two cores that do not meet as they should: run-time faults naming both sides."""

from __future__ import annotations

import json
import zlib

import nkirt
import pytest
from neff_builder import Kernel, container
from nkirt import RuntimeFault


def _core(meets: list[str]) -> dict:
    """A program that fills a tile, then reaches each cross-core instruction of `meets`."""
    k = Kernel("trn2", name="meet")
    out = k.output("y", "float32", [128, 64])
    a = k.sbuf("a", "float32", [128, 64])
    b = k.sbuf("b", "float32", [128, 64], byte=256)
    fill = k.inst("memset", "vector", {"dst": k.ap(a)}, {"value": 1.0})
    last = fill
    for op in meets:
        if op == "core_barrier":
            last = k.inst(op, "gpsimd", {"data": k.ap(out)}, {}, waits=[(last, 0)])
        else:
            operands = {"src": k.ap(a), "dst": k.ap(b)}
            attrs = {"send_to_rank": 1, "recv_from_rank": 1}
            last = k.inst(op, "gpsimd", operands, attrs, waits=[(last, 0)])
    k.dma(k.ap(out), k.ap(a), waits=[(last, 0)])
    return k.program()


def _launch(core0: list[str], core1: list[str]) -> bytes:
    docs = [_core(core0), _core(core1)]
    for n, doc in enumerate(docs):
        doc.update(core=n, lnc=2)
    docs[1]["tensors"][0]["shared"] = 0
    for doc in docs[1:]:
        for op in doc["body"]:
            if op.get("op") == "sendrecv":
                op["attrs"].update(send_to_rank=0, recv_from_rank=0)
    sections = [(b"PROG", 1, zlib.compress(json.dumps(docs[0]).encode()))]
    sections.append((b"COR1", 1, zlib.compress(json.dumps(docs[1]).encode())))
    return container(sections)


def test_cores_meeting_at_the_same_barrier_run():
    result = nkirt.execute(nkirt.load(_launch(["core_barrier"], ["core_barrier"])))
    assert result.profile["lnc"] == 2


def test_a_core_that_finishes_while_the_other_waits_is_a_fault():
    with pytest.raises(RuntimeFault, match="core 0 at core_barrier at .* waits for core 1, which "
                       "finished the kernel without reaching it"):  # fmt: skip
        nkirt.execute(nkirt.load(_launch(["core_barrier"], [])))


def test_cores_at_different_instructions_are_a_fault():
    with pytest.raises(RuntimeFault, match="meet at different instructions: core 0 at "
                       "core_barrier .* and core 1 at sendrecv"):  # fmt: skip
        nkirt.execute(nkirt.load(_launch(["core_barrier"], ["sendrecv"])))
