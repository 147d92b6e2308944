"""run_pipeline: checks, then lowering, verified between passes, with IR dumps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

import nkic.passes.pipeline as pipeline
from nkic.ir.core import Kernel
from nkic.ir.verifier import VerifierError
from nkic.passes.base import Pass, PassContext
from nkic.passes.pipeline import PASS_NAMES, InternalCompilerError, run_pipeline

from .irtext import at, insts, kernel, tensors

PARAMS = '  param %a : hbm float32[128, 2048] "a"\n'
OUT = '  %o = alloc shared_hbm float32[128, 2048] "out" output\n'


def add_kernel(load_offset: str = "512*$i") -> Kernel:
    body = f"""{OUT}
  for $i = 0 to 4 step 1 affine {{
    %t = alloc sbuf float32[128, 512] "t"
    dma_copy(dst=%t[0; [512, 128], [1, 512]], src=%a[{load_offset}; [2048, 128], [1, 512]]) {{}} {at(5)}
    %u = alloc sbuf float32[128, 512] "u"
    tensor_scalar(dst=%u[0; [512, 128], [1, 512]], data=%t[0; [512, 128], [1, 512]], operand0=1.0) {{op0="add"}} {at(6)}
    dma_copy(dst=%o[512*$i; [2048, 128], [1, 512]], src=%u[0; [512, 128], [1, 512]]) {{}} {at(7)}
  }}"""
    return kernel(body, PARAMS, returns="%o")


def test_pass_names_run_checks_then_bounds_then_lowering():
    names = list(PASS_NAMES)
    lowering = [
        "check-bounds",
        "apply-views",
        "hbm-offsets",
        "resolve-accumulate",
        "allocate",
        "assign-engines",
    ]
    assert names[-6:] == lowering
    assert len(set(names)) == len(names)


def test_pipeline_allocates_and_assigns_engines():
    k = add_kernel()
    ctx = PassContext("trn2")
    assert run_pipeline(k, ctx) is k
    assert ctx.sink.items == []
    assert all(t.address is not None for t in k.tensors() if t.on_chip)
    assert [i.engine for i in insts(k)] == ["dma", "vector", "dma"]


def test_dump_after_one_pass():
    dumps = []
    run_pipeline(add_kernel(), PassContext("trn2"), dump_after="allocate", dump=dumps.append)
    assert len(dumps) == 1
    head, _, text = dumps[0].partition("\n")
    assert "IR Dump After allocate" in head
    assert "address(0, " in text and "rotate($i, " in text
    assert text.startswith("kernel @k")


def test_dump_after_all_passes():
    dumps = []
    run_pipeline(add_kernel(), PassContext("trn2"), dump_after="all", dump=dumps.append)
    assert [d.splitlines()[0].split("After ")[1].split(" ")[0] for d in dumps] == list(PASS_NAMES)


def test_unknown_dump_pass_is_rejected():
    with pytest.raises(ValueError, match="known: all"):
        run_pipeline(add_kernel(), PassContext("trn2"), dump_after="nope")


def test_check_errors_stop_before_lowering_and_leave_the_kernel_unallocated():
    k = add_kernel(load_offset="512*$i + 1")
    ctx = PassContext("trn2")
    run_pipeline(k, ctx)
    assert [d.code for d in ctx.sink.items] == ["err_tensor_access_out_of_bound"]
    assert all(t.address is None for t in tensors(k).values())
    assert all(i.engine is None for i in insts(k))


def test_malformed_input_is_a_verifier_error():
    k = add_kernel()
    k.body[1].var = "bad"  # offsets still name $i
    with pytest.raises(VerifierError, match=r"\$i is not an enclosing loop variable"):
        run_pipeline(k, PassContext("trn2", verify_each=True))


@dataclass(frozen=True)
class BreaksIR(Pass):
    name: ClassVar[str] = "breaks_ir"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        kernel.body[1].step = 0


@dataclass(frozen=True)
class KeepsIR(Pass):
    name: ClassVar[str] = "keeps_ir"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        pass


def test_invalid_ir_after_a_pass_is_an_internal_compiler_error(monkeypatch):
    monkeypatch.setattr(pipeline, "lowering_passes", lambda: [BreaksIR(), KeepsIR()])
    with pytest.raises(InternalCompilerError, match="pass breaks_ir produced invalid IR"):
        run_pipeline(add_kernel(), PassContext("trn2", verify_each=True))


def test_without_verify_each_invalid_ir_is_caught_after_the_last_pass(monkeypatch):
    monkeypatch.delenv("NKIC_VERIFY_EACH", raising=False)
    monkeypatch.setattr(pipeline, "lowering_passes", lambda: [BreaksIR(), KeepsIR()])
    with pytest.raises(InternalCompilerError) as caught:
        run_pipeline(add_kernel(), PassContext("trn2"))
    message = str(caught.value)
    assert "invalid IR after the pass pipeline" in message
    assert "operand-rules .. keeps_ir made it (NKIC_VERIFY_EACH=1 tells which)" in message
    assert "step 0 must be > 0" in message


def test_environment_turns_on_verify_each(monkeypatch):
    monkeypatch.setenv("NKIC_VERIFY_EACH", "1")
    monkeypatch.setattr(pipeline, "lowering_passes", lambda: [BreaksIR(), KeepsIR()])
    with pytest.raises(InternalCompilerError, match="pass breaks_ir produced invalid IR"):
        run_pipeline(add_kernel(), PassContext("trn2"))
