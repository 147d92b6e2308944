"""Races between iterations of affine_range loops that the frontend had to unroll.

The same kernels compiled with every loop unrolled (`unroll_all`, the reference semantics of
symbolic loops) must report the same races as compiled normally."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkic.diagnostics import DiagnosticSink
from nkic.driver import check_file
from nkic.frontend import TensorSpec, specialise
from nkic.passes.base import PassContext
from nkic.passes.checks.races import AffineRaces
from tests.deprecations import without_loop_deprecations

KERNELS = Path(__file__).parent / "kernels" / "unrolled_races.py"
X = {"x": TensorSpec((128, 512), "float32")}
MATMUL = {"lhsT": TensorSpec((128, 128), "bfloat16"), "rhs": TensorSpec((512, 512), "bfloat16")}
RACE = "err_unexpected_output_dependencies"


def races(kernel: str, args: dict, unroll_all: bool = False) -> list:
    sink = DiagnosticSink()
    ir = specialise(str(KERNELS), kernel, args, "trn2", sink, unroll_all=unroll_all)
    found = without_loop_deprecations(sink.items)
    assert ir is not None and not found, [d.message for d in found]
    ctx = PassContext(target="trn2", sink=DiagnosticSink())
    AffineRaces().run(ir, ctx)
    return ctx.sink.items


def line(text: str) -> int:
    return next(n for n, src in enumerate(KERNELS.read_text().splitlines(), 1) if text in src)


def test_every_unrolled_iteration_writing_one_tile_is_a_race():
    (d,) = races("same_block", X)
    assert d.code == RACE
    assert d.message == "memset: iteration i=0 and i=1 both write t[0:128, 0:512]"
    assert d.loc.line == line("nisa.memset(dst=t, value=i * 1.0)")
    assert [r.message for r in d.related] == [
        "iterations of this `affine_range` loop may run in any order"
    ]
    assert d.related[0].loc.line == line("for i in nl.affine_range(4):")


def test_a_write_and_a_neighbours_read_collide():
    (d,) = races("reads_a_neighbour", X)
    assert d.message == (
        "memset: iteration i=1 writes t[0:128, 128:256] while iteration i=0 reads t[0:128, 64:192]"
    )


def test_own_blocks_shared_reads_and_psum_accumulation_are_not_races():
    assert races("own_blocks", X) == []
    assert races("shared_reads_and_accumulation", MATMUL) == []


def test_an_unrolled_loop_inside_a_symbolic_one_is_checked_per_outer_iteration():
    (d,) = races("inside_a_symbolic_loop", X)
    assert d.message == "memset: iteration i=0 and i=1 both write t[0:128, 0:128]"


@pytest.mark.parametrize(
    "kernel, args",
    [
        ("same_block", X),
        ("own_blocks", X),
        ("shared_reads_and_accumulation", MATMUL),
        ("reads_a_neighbour", X),
        ("inside_a_symbolic_loop", X),
    ],
)
def test_fully_unrolled_compilation_reports_the_same_races(kernel, args):
    def found(unroll_all):
        return [(d.code, d.loc.line, d.message) for d in races(kernel, args, unroll_all)]

    assert found(True) == found(False)


def test_nkic_check_reports_the_race():
    diags = without_loop_deprecations(
        check_file(str(KERNELS), "same_block", {"x": TensorSpec((128, 512), "float32")})
    )
    assert [d.code for d in diags] == [RACE]
