"""Repeated loads in the profile's `hbm_traffic`: per input load line, the bytes of the
transfers that load the same elements as an earlier one, and the loops they come again in,
for unrolled and kept loops, helpers called twice, inputs the kernel writes and indices known
only at run time. Expected bytes are worked out from the shapes."""

from __future__ import annotations

from pathlib import Path

import nkirt
import numpy as np
import pytest
from click.testing import CliRunner

import nkic
from nkic import driver
from nkic.cli import cli
from nkic.frontend import TensorSpec

ROOT = Path(__file__).resolve().parents[2]
K, M, N = 256, 256, 1536  # 2 m tiles of 128, 3 n tiles of 512, 2 k tiles of 128
BF16 = 2


def traffic_of(path: Path, kernel: str, specs: dict) -> dict:
    res = driver.compile_file(str(path), kernel, specs, "trn2")
    assert res.ok, res.diagnostics
    return nkirt.execute(nkirt.load(res.neff), timing_only=True).profile["hbm_traffic"]


def by_tensor(traffic: dict) -> dict:
    return {site["tensor"]: site for site in traffic["input_loads_by_source"]}


@pytest.mark.parametrize(
    "path",
    [ROOT / "examples" / "matmul_tiled.py", ROOT / "tests" / "cli" / "kernels" / "kept_loops.py"],
    ids=["unrolled", "kept"],
)
def test_a_tiled_matmul_loads_lhsT_again_over_n_and_rhs_again_over_m(path, tmp_path):
    """lhsT[k, m] does not depend on n: each of the 3 n iterations loads it again (2 of
    3 loads repeat); rhs[k, n] does not depend on m: the second m iteration repeats it."""
    specs = {"lhsT": TensorSpec((K, M), "bfloat16"), "rhs": TensorSpec((K, N), "bfloat16")}
    sites = by_tensor(traffic_of(path, "matmul_tiled", specs))
    lhsT_bytes, rhs_bytes = K * M * BF16, K * N * BF16
    assert sites["lhsT"]["bytes"] == 3 * lhsT_bytes
    assert sites["lhsT"]["repeated_bytes"] == 2 * lhsT_bytes
    assert sites["lhsT"]["repeats_along"] == ["n"]
    assert sites["rhs"]["bytes"] == 2 * rhs_bytes
    assert sites["rhs"]["repeated_bytes"] == rhs_bytes
    assert sites["rhs"]["repeats_along"] == ["m"]


HELPER_TWICE = """import nki
import nki.isa as nisa
import nki.language as nl


def scaled(w, x, out_rows):
    w_t = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_t, src=w)
    x_t = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_t, src=x[out_rows, :])
    nisa.tensor_tensor(dst=x_t, data1=x_t, data2=w_t, op=nl.multiply)
    return x_t


@nki.jit
def k(w, x):
    out = nl.ndarray((256, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    for half in range(2):
        rows = slice(half * 128, (half + 1) * 128)
        nisa.dma_copy(dst=out[rows, :], src=scaled(w, x, rows))
    first = scaled(w, x, slice(0, 128))
    nisa.dma_copy(dst=out[0:128, :], src=first)
    return out
"""


def test_a_helper_called_again_repeats_its_loads_at_the_same_iteration(tmp_path):
    """`scaled` loads all of `w` at three calls: two in iterations 0 and 1 of `half`, one
    after the loop. The loop's second load repeats the first over `half`; the call after the
    loop repeats both, at a call of its own. x's rows 0..127 are loaded twice too."""
    path = tmp_path / "helper.py"
    path.write_text(HELPER_TWICE)
    specs = {"w": TensorSpec((128, 128), "float32"), "x": TensorSpec((256, 128), "float32")}
    sites = by_tensor(traffic_of(path, "k", specs))
    tile = 128 * 128 * 4
    assert (sites["w"]["bytes"], sites["w"]["repeated_bytes"]) == (3 * tile, 2 * tile)
    assert sites["w"]["repeats_along"] == ["half", "(another call)"]
    assert (sites["x"]["bytes"], sites["x"]["repeated_bytes"]) == (3 * tile, tile)
    assert sites["x"]["repeats_along"] == ["(another call)"]


WRITES_ITS_INPUT = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(3):
        t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
        nisa.dma_copy(dst=a, src=acc)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def test_an_input_the_kernel_writes_has_no_repeated_loads(tmp_path):
    """Each load of `a` reads what the previous iteration stored: the same elements, not the
    same data, so nothing is said to repeat."""
    path = tmp_path / "inout.py"
    path.write_text(WRITES_ITS_INPUT)
    sites = by_tensor(traffic_of(path, "k", {"a": TensorSpec((128, 64), "float32")}))
    assert sites["a"]["bytes"] == 3 * 128 * 64 * 4
    assert sites["a"]["repeated_bytes"] is None and sites["a"]["repeats_along"] == []


DYNAMIC = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(a, n):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    count = nisa.scalar_load(n_sb)
    acc = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)

    def body(i):
        t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[0:128, :])
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)

    nl.fori_loop(0, count, body)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def test_a_load_in_a_loop_counted_at_run_time_is_not_judged(tmp_path):
    """The loop runs n times, n read at run time: whether its loads repeat is not known from
    the program, so `repeated_bytes` is null rather than a guess."""
    path = tmp_path / "dyn.py"
    path.write_text(DYNAMIC)
    a, n = np.ones((128, 64), np.float32), np.full((1, 1), 3, np.int32)
    k = nkic.compile(path, a, n)
    np.testing.assert_array_equal(k(a, n), 3 * a)
    traffic = k.profile["hbm_traffic"]
    site = by_tensor(traffic)["a"]
    assert site["transfers"] == 3
    assert site["repeated_bytes"] is None and site["repeats_along"] == []


def test_nkic_run_names_the_repeated_loads_and_their_loops(tmp_path):
    """The summary line: each repeating load line with its bytes and loops, most first."""
    neff = tmp_path / "mm.neff"
    example = str(ROOT / "examples" / "matmul_tiled.py")
    args = ["compile", example, "--arg", f"lhsT=bfloat16[{K},{M}]"]
    args += ["--arg", f"rhs=bfloat16[{K},{N}]", "--target", "trn2", "-o", str(neff)]
    runner = CliRunner()
    assert runner.invoke(cli, args, catch_exceptions=False).exit_code == 0
    result = runner.invoke(cli, ["run", str(neff), "--timing-only"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "repeated loads" in x)
    rhs, lhsT = K * N * BF16 / 1e6, 2 * K * M * BF16 / 1e6
    assert line.endswith(
        f"matmul_tiled.py:36 rhs {rhs:,.3f} MB over m; matmul_tiled.py:32 lhsT {lhsT:,.3f} MB over n"
    )


HELPER_TWICE_NO_LOOP = """import nki
import nki.isa as nisa
import nki.language as nl


def loaded(w):
    w_t = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_t, src=w)
    return w_t


@nki.jit
def k(w):
    out = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.shared_hbm)
    a = loaded(w)
    b = loaded(w)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def test_a_helper_called_twice_outside_loops_repeats_at_another_call(tmp_path):
    """Two calls of `loaded` with no loop around them load all of `w` twice: the second
    transfer repeats the first, at another call."""
    path = tmp_path / "twice.py"
    path.write_text(HELPER_TWICE_NO_LOOP)
    sites = by_tensor(traffic_of(path, "k", {"w": TensorSpec((128, 128), "float32")}))
    tile = 128 * 128 * 4
    assert (sites["w"]["bytes"], sites["w"]["repeated_bytes"]) == (2 * tile, tile)
    assert sites["w"]["repeats_along"] == ["(another call)"]
