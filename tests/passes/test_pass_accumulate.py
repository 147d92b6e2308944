"""resolve-accumulate: the first matmul write to a PSUM location overwrites, later ones add."""

from __future__ import annotations

import pytest

from nkic.ir.core import Alloc, Loop
from nkic.passes.accumulate import ResolveAccumulate

from .irtext import at, insts, kernel, run, tile

PARAMS = """\
  param %a : hbm bfloat16[128, 512] "a"
"""
SBUF = '  %s = alloc sbuf bfloat16[128, 512] "s"\n'


def mm(dst: str, line: int = 10, attrs: str = "") -> str:
    return (
        f"nc_matmul(dst={dst}, stationary={tile('s', 128, 128, row=512)}, "
        f"moving={tile('s', 128, 512)}) {{{attrs}}} {at(line)}"
    )


def resolve(body: str) -> list:
    k = kernel(SBUF + body, PARAMS)
    assert run(ResolveAccumulate(), k) == []
    return [i.attrs["accumulate"] for i in insts(k, "nc_matmul")]


def test_k_loop_into_psum_allocated_outside_accumulates_unless_first():
    body = f"""
  %p = alloc psum float32[128, 512] "p"
  for $k = 0 to 4 step 1 affine {{
    {mm(tile("p", 128, 512))}
  }}"""
    assert resolve(body) == [("k",)]


def test_psum_allocated_inside_the_loop_is_fresh_each_iteration():
    body = f"""
  for $k = 0 to 4 step 1 affine {{
    %p = alloc psum float32[128, 512] "p"
    {mm(tile("p", 128, 512))}
  }}"""
    assert resolve(body) == [False]


def test_explicit_accumulate_is_kept():
    body = f"""
  %p = alloc psum float32[128, 512] "p"
  {mm(tile("p", 128, 512), attrs="accumulate=true")}
  for $k = 0 to 4 step 1 affine {{
    {mm(tile("p", 128, 512), attrs="accumulate=false")}
  }}"""
    assert resolve(body) == [True, False]


def test_loop_writing_distinct_locations_overwrites():
    body = f"""
  %p = alloc psum float32[128, 2048] "p"
  for $n = 0 to 4 step 1 affine {{
    {mm(tile("p", 128, 512, offset="512*$n", row=2048))}
  }}"""
    assert resolve(body) == [False]


def test_only_loops_that_rewrite_the_location_are_listed():
    body = f"""
  %p = alloc psum float32[128, 2048] "p"
  for $n = 0 to 4 step 1 affine {{
    for $k = 0 to 8 step 1 affine {{
      for $j = 0 to 2 step 1 sequential {{
        {mm(tile("p", 128, 512, offset="512*$n", row=2048))}
      }}
    }}
  }}"""
    assert resolve(body) == [("k", "j")]


def test_loops_outside_the_allocation_do_not_count():
    body = f"""
  for $m = 0 to 4 step 1 affine {{
    %p = alloc psum float32[128, 512] "p"
    for $k = 0 to 4 step 1 affine {{
      {mm(tile("p", 128, 512))}
    }}
  }}"""
    assert resolve(body) == [("k",)]


def test_second_matmul_into_the_same_region_accumulates():
    body = f"""
  %p = alloc psum float32[128, 512] "p"
  {mm(tile("p", 128, 512), 10)}
  {mm(tile("p", 128, 512), 11)}"""
    assert resolve(body) == [False, True]


def test_disjoint_regions_of_one_tile_are_separate_groups():
    body = f"""
  %p = alloc psum float32[128, 512] "p"
  for $k = 0 to 4 step 1 affine {{
    {mm(tile("p", 128, 256, row=512))}
    {mm(tile("p", 128, 256, offset="256", row=512))}
  }}"""
    assert resolve(body) == [("k",), ("k",)]


def test_later_matmul_in_the_loop_makes_the_first_accumulate_after_iteration_zero():
    body = f"""
  %p = alloc psum float32[128, 512] "p"
  for $k = 0 to 4 step 1 affine {{
    {mm(tile("p", 128, 512), 10)}
    {mm(tile("p", 128, 512), 11)}
  }}"""
    assert resolve(body) == [("k",), True]


def test_overlap_only_across_iterations():
    # iteration k writes columns [128k, 128k+256): half of it was written by iteration k-1
    body = f"""
  %p = alloc psum float32[128, 512] "p"
  for $k = 0 to 2 step 1 affine {{
    {mm(tile("p", 128, 256, offset="128*$k", row=512))}
  }}"""
    assert resolve(body) == [("k",)]


def _disagreements(k) -> list:
    """Enumerate every matmul instance: the resolved flag must overwrite exactly when no
    earlier matmul of the tensor's current lifetime wrote any of the elements it writes."""
    written: dict = {}  # (tensor, lifetime) -> element indices written by matmuls
    lifetime: dict = {}
    loops_at: dict = {}
    wrong: list = []

    def run(ops, env):
        for op in ops:
            if isinstance(op, Loop):
                loops_at[op.var] = op
                for v in range(op.start, op.stop, op.step):
                    env[op.var] = v
                    run(op.body, env)
                del env[op.var]
            elif isinstance(op, Alloc):
                lifetime[op.result] = lifetime.get(op.result, 0) + 1
            elif op.opcode == "nc_matmul":
                dst = op.operands["dst"]
                idx = {dst.offset.evaluate(env)}
                for step, num in dst.pattern:
                    idx = {i + j * step for i in idx for j in range(num)}
                seen = written.setdefault((dst.tensor, lifetime.get(dst.tensor, 0)), set())
                acc = op.attrs["accumulate"]
                if isinstance(acc, tuple):
                    overwrite = all(env[v] == loops_at[v].start for v in acc)
                else:
                    overwrite = not acc
                if overwrite != (not idx & seen):
                    wrong.append((op.loc.line, dict(env)))
                seen |= idx

    run(k.body, {})
    return wrong


CASES = {
    "k_outside": f"""
  %p = alloc psum float32[128, 512] "p"
  for $k = 0 to 3 step 1 affine {{
    {mm(tile("p", 128, 512))}
  }}""",
    "two_groups_per_iteration": f"""
  for $m = 0 to 2 step 1 affine {{
    %p = alloc psum float32[128, 1024] "p"
    for $k = 0 to 3 step 1 affine {{
      {mm(tile("p", 128, 512, row=1024))}
      {mm(tile("p", 128, 512, offset="512", row=1024))}
    }}
    for $k2 = 0 to 2 step 1 affine {{
      {mm(tile("p", 128, 512, row=1024))}
    }}
  }}""",
    "nested": f"""
  %p = alloc psum float32[128, 2048] "p"
  for $n = 0 to 2 step 1 affine {{
    for $k = 0 to 2 step 1 affine {{
      for $j = 0 to 2 step 1 sequential {{
        {mm(tile("p", 128, 512, offset="512*$n", row=2048))}
      }}
    }}
  }}""",
    "interleaved": f"""
  %p = alloc psum float32[128, 512] "p"
  for $k = 0 to 3 step 1 affine {{
    {mm(tile("p", 128, 256, row=512))}
    {mm(tile("p", 128, 256, row=512))}
  }}""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_resolution_matches_the_per_instance_rule(name):
    k = kernel(SBUF + CASES[name], PARAMS)
    run(ResolveAccumulate(), k)
    assert _disagreements(k) == []
