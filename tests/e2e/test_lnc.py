"""LNC=2 launches: two simulated physical cores sharing HBM, and the checks across them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import nkic
from tests.deprecations import without_loop_deprecations

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).parent / "lnc"
MATMUL = ROOT / "examples" / "matmul_lnc.py"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_sharded_matmul_on_two_cores_matches_numpy():
    rng = np.random.default_rng(1)
    lhsT = rng.standard_normal((256, 512), dtype=np.float32)
    rhs = rng.standard_normal((256, 512), dtype=np.float32)
    kernel = nkic.compile(MATMUL, lhsT, rhs, lnc=2)
    got = kernel(lhsT, rhs)
    np.testing.assert_allclose(got, lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    cores = kernel.profile["cores"]
    assert kernel.profile["lnc"] == 2 and len(cores) == 2
    # each core does half the matmuls of the LNC=1 program
    single = nkic.compile(MATMUL, lhsT, rhs)
    single(lhsT, rhs)
    matmuls = single.profile["engines"]["tensor"]["instructions"]
    assert [c["engines"]["tensor"]["instructions"] for c in cores] == [matmuls // 2] * 2
    assert kernel.profile["total_ns"] < single.profile["total_ns"]


def test_sharded_softmax_on_two_cores_matches_numpy():
    x = np.random.default_rng(2).standard_normal((512, 256), dtype=np.float32)
    kernel = nkic.compile(KERNELS / "softmax_lnc.py", x, lnc=2)
    np.testing.assert_allclose(kernel(x), _softmax(x), rtol=1e-5, atol=1e-6)


def test_kernel_bracket_sets_the_launch_degree():
    sys.path.insert(0, str(KERNELS))
    try:
        from softmax_lnc import softmax_lnc
    finally:
        sys.path.remove(str(KERNELS))
    x = np.random.default_rng(3).standard_normal((256, 128), dtype=np.float32)
    kernel = nkic.compile(softmax_lnc[2], x)
    np.testing.assert_allclose(kernel(x), _softmax(x), rtol=1e-5, atol=1e-6)
    assert kernel.profile["lnc"] == 2
    with pytest.raises(nkic.CompileError, match="kernel\\[2\\]\\) differs.*lnc=1"):
        nkic.compile(softmax_lnc[2], x, lnc=1)
    with pytest.warns(UserWarning, match="NKI 0.6 does not check it"):
        single = nkic.compile(softmax_lnc[2], x, lnc=1, nki="0.6")  # the check is 0.7's
    np.testing.assert_allclose(single(x), _softmax(x), rtol=1e-5, atol=1e-6)
    assert single.profile.get("lnc", 1) == 1  # a one-core launch
    with pytest.raises(ValueError, match="LNC\\) degree, 1 or 2"):
        softmax_lnc[2, 2]


def test_program_ndim_is_the_launch_grids_rank():
    # LNC=2 is the one-axis grid [2] (rank 1, size 2: rows x3, half per core); one core is
    # the launch without a grid (rank 0, one program: rows x1)
    a = np.random.default_rng(4).standard_normal((512, 64), dtype=np.float32)
    two = nkic.compile(KERNELS / "grid_rank.py", a, lnc=2)
    np.testing.assert_array_equal(two(a), a * 3)
    assert [c["engines"]["vector"]["instructions"] for c in two.profile["cores"]] == [2, 2]
    one = nkic.compile(KERNELS / "grid_rank.py", a)
    np.testing.assert_array_equal(one(a), a)


def test_lnc2_is_refused_where_the_target_has_one_core_per_launch():
    x = np.zeros((256, 128), np.float32)
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(KERNELS / "softmax_lnc.py", x, lnc=2, target="trn1")
    assert [d.code for d in e.value.diagnostics] == ["nkic_lnc_degree"]


def test_check_finds_the_second_cores_out_of_bounds_read():
    q = nkic.TensorSpec((128, 192), "float32")
    diags = nkic.check(KERNELS / "head_split.py", q=q)
    oob = [d for d in diags if d.code == "err_tensor_access_out_of_bound"]
    assert oob and all(d.message.endswith("[LNC=2 core 1]") for d in oob)
    assert {d.loc.line for d in oob} == {19, 20}
    # told to check LNC=1 only, the kernel is clean
    assert without_loop_deprecations(nkic.check(KERNELS / "head_split.py", lnc=1, q=q)) == []


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kernel.py"
    path.write_text("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n" + body)
    return path


RACE = """
@nki.jit
def kernel(a):
    half = a.shape[1] // nl.num_programs()
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[:, core * half:(core + 1) * half])
    nisa.dma_copy(dst=out[:, {dst}], src=t)
    return out
"""


def test_two_cores_writing_the_same_shared_bytes_is_a_race(tmp_path):
    path = _write(tmp_path, RACE.format(dst="0:half"))
    a = nkic.TensorSpec((128, 256), "float32")
    diags = nkic.check(path, a=a)
    assert [d.code for d in diags] == ["nkic_lnc_shared_hbm_race"]
    d = diags[0]
    # both cores write columns 0..127: the overlap is that whole box
    assert "elements [0:128, 0:128]" in d.message
    assert f"bytes 0..{(127 * 256 + 127) * 4 + 3}" in d.message
    assert d.loc.line == 13 and d.related[0].loc.line == 13
    assert "core 1" in d.related[0].message
    with pytest.raises(nkic.CompileError):
        nkic.compile(path, a, lnc=2)


def test_disjoint_halves_are_not_a_race(tmp_path):
    path = _write(tmp_path, RACE.format(dst="core * half:(core + 1) * half"))
    assert nkic.check(path, a=nkic.TensorSpec((128, 256), "float32")) == []


READ_RACE = """
@nki.jit
def kernel(a):
    half = a.shape[1] // nl.num_programs()
    core = nl.program_id()
    other = (core + 1) % nl.num_programs()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[:, core * half:(core + 1) * half])
    nisa.dma_copy(dst=out[:, core * half:(core + 1) * half], src=t)
{between}
    u = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=out[:, {src}])
    res = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=res[:, core * half:(core + 1) * half], src=u)
    return res
"""


@pytest.mark.parametrize(
    ("between", "src", "codes"),
    [
        ("", "other * half:(other + 1) * half", ["nkic_lnc_shared_hbm_read_race"] * 2),
        ("    nisa.core_barrier(data=out, cores=(0, 1))", "other * half:(other + 1) * half", []),
        ("", "core * half:(core + 1) * half", []),  # its own part, written by itself
    ],
)
def test_a_core_reading_what_the_other_core_writes_unordered_is_a_race(
    tmp_path, between, src, codes
):
    """Each core copies its half of `a` to a shared scratch, then reads the scratch back: the
    other core's half is a race unless a barrier orders it; the core's own half is not."""
    path = _write(tmp_path, READ_RACE.format(between=between, src=src))
    a = nkic.TensorSpec((128, 256), "float32")
    diags = nkic.check(path, a=a)
    assert [d.code for d in diags] == codes, [d.message for d in diags]
    if codes:
        d = diags[0]
        assert d.message.startswith("core 0 reads elements [0:128, 128:256], bytes 512..")
        assert "which core 1 writes" in d.message and d.loc.line == 17  # the read
        assert d.related[0].loc.line == 14 and "core 1 writes" in d.related[0].message


def test_loops_that_differ_between_cores_are_divergent_control_flow(tmp_path):
    path = _write(
        tmp_path,
        """
@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(2 + core):
        t = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
        rows = core * 256 + i * 128
        nisa.dma_copy(dst=t, src=a[rows:rows + 128, :])
        nisa.dma_copy(dst=out[rows:rows + 128, :], src=t)
    return out
""",
    )
    diags = without_loop_deprecations(nkic.check(path, a=nkic.TensorSpec((640, 128), "float32")))
    assert [d.code for d in diags] == ["nkic_lnc_divergent_control_flow"]
    assert "core 0 runs a loop of 2 iteration(s)" in diags[0].message
    assert "core 1 runs a loop of 3 iteration(s)" in diags[0].message
    assert diags[0].loc.line == 10


def test_cli_compiles_and_runs_both_cores(tmp_path):
    from click.testing import CliRunner

    from nkic.cli import cli

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    neff = tmp_path / "softmax.neff"
    x = np.random.default_rng(4).standard_normal((256, 128), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    src = str(KERNELS / "softmax_lnc.py")
    made = invoke("compile", src, "--arg", "x=float32[256,128]", "--lnc", "2", "-o", str(neff))
    assert made.exit_code == 0, made.output
    trace = tmp_path / "trace.json"
    run = invoke("run", str(neff), "--in", f"x={tmp_path / 'x.npy'}", "--out-dir", str(tmp_path),
                 "--trace", str(trace))  # fmt: skip
    assert run.exit_code == 0 and "core 1 of LNC=2" in run.output
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {1: "softmax_lnc (trn2) core 0", 2: "softmax_lnc (trn2) core 1"}
    slices = [e for e in events if e.get("ph") == "X"]
    assert {e["pid"] for e in slices} == {1, 2}
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _softmax(x), rtol=1e-5, atol=1e-6)
    wrong = invoke("run", str(neff), "--lnc", "1", "--out-dir", str(tmp_path))
    assert wrong.exit_code == 2 and "compiled for LNC=2" in wrong.output
    refused = invoke("compile", src, "--arg", "x=float32[256,128]", "--lnc", "2", "--target",
                     "trn1", "-o", str(neff))  # fmt: skip
    assert refused.exit_code == 1 and "nkic_lnc_degree" in refused.output


EXCHANGE = KERNELS / "exchange.py"


def test_an_all_reduce_through_shared_hbm_ordered_by_a_barrier():
    a = np.random.default_rng(5).standard_normal((256, 512), dtype=np.float32)
    kernel = nkic.compile(EXCHANGE, a, kernel="all_reduce_hbm", lnc=2)
    total = a[:128] + a[128:]
    np.testing.assert_array_equal(kernel(a), np.concatenate([total, total]))
    # the read of the other core's half waits for the barrier, which waits for both cores
    cores = kernel.profile["cores"]
    assert all(c["total_ns"] > 1300 for c in cores)


def test_a_barrier_on_a_kernel_input_orders_the_cores_writes_to_it():
    # the launch's inputs are the HBM both cores share, as nl.shared_hbm tensors are
    a = np.random.default_rng(7).standard_normal((256, 64), dtype=np.float32)
    kernel = nkic.compile(EXCHANGE, a, kernel="doubled_in_place", lnc=2)
    total = 2 * a[:128] + 2 * a[128:]
    np.testing.assert_array_equal(kernel(a.copy()), np.concatenate([total, total]))


def test_a_barrier_on_a_cores_private_hbm_is_refused(tmp_path):
    path = _write(
        tmp_path,
        """
@nki.jit
def kernel(a):
    private = nl.ndarray(a.shape, a.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=private, src=a)
    nisa.core_barrier(data=private, cores=(0, 1))
    return a
""",
    )
    diags = nkic.check(path, lnc=2, a=nkic.TensorSpec((128, 64), "float32"))
    assert [d.code for d in diags] == ["err_unsupported_memory"]
    assert "`data` is in HBM; it must be in shared HBM" in diags[0].message


def test_a_sendrecv_ring_matches_numpy():
    a = np.random.default_rng(6).standard_normal((256, 512), dtype=np.float32)
    kernel = nkic.compile(EXCHANGE, a, kernel="ring_sum", lnc=2)
    x, y = a[:128], a[128:]
    for _ in range(3):
        x, y = x + y, y + x
    np.testing.assert_array_equal(kernel(a), np.concatenate([x, y]))
    assert without_loop_deprecations(nkic.check(EXCHANGE, kernel="ring_sum", a=a)) == []


def test_meeting_the_other_core_needs_lnc2():
    a = nkic.TensorSpec((256, 512), "float32")
    diags = without_loop_deprecations(nkic.check(EXCHANGE, kernel="ring_sum", lnc=1, a=a))
    assert [d.code for d in diags] == ["nkic_lnc_degree"]
    assert "nisa.sendrecv meets the other core" in diags[0].message
    with pytest.raises(nkic.CompileError):
        nkic.compile(EXCHANGE, a, kernel="ring_sum")


def test_a_barrier_only_one_core_reaches_is_divergent(tmp_path):
    path = _write(
        tmp_path,
        """
@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[core * 128:(core + 1) * 128, :])
    nisa.dma_copy(dst=out[core * 128:(core + 1) * 128, :], src=t)
    if core == 0:
        nisa.core_barrier(data=out, cores=(0, 1))
    return out
""",
    )
    diags = nkic.check(path, a=nkic.TensorSpec((256, 128), "float32"))
    assert [d.code for d in diags] == ["nkic_lnc_divergent_control_flow"]
    assert "core 0 reaches nisa.core_barrier here" in diags[0].message
    assert "core 1 reaches nothing" in diags[0].message
    assert diags[0].loc.line == 14


def test_writes_separated_by_a_barrier_are_not_a_race(tmp_path):
    path = _write(
        tmp_path,
        """
@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray((128, 128), a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[core * 128:(core + 1) * 128, :])
    if core == 0:
        nisa.dma_copy(dst=out, src=t)
    nisa.core_barrier(data=out, cores=(0, 1))
    if core == 1:
        nisa.dma_copy(dst=out, src=t)
    return out
""",
    )
    a = np.random.default_rng(7).standard_normal((256, 128), dtype=np.float32)
    assert nkic.check(path, a=a) == []
    np.testing.assert_array_equal(nkic.compile(path, a, lnc=2)(a), a[128:])


COLLECTIVES = KERNELS / "collectives.py"


def _run_collective(name: str, a: np.ndarray) -> np.ndarray:
    kernel = nkic.compile(COLLECTIVES, a, kernel=name, lnc=2)
    assert without_loop_deprecations(nkic.check(COLLECTIVES, kernel=name, a=a)) == []
    return kernel(a)


def test_all_reduce_collective():
    a = np.random.default_rng(8).standard_normal((256, 256), dtype=np.float32)
    top = np.maximum(a[:128], a[128:])
    np.testing.assert_array_equal(_run_collective("all_reduce_max", a), np.concatenate([top, top]))


def test_all_gather_collective():
    a = np.random.default_rng(9).standard_normal((256, 128), dtype=np.float32)
    both = np.concatenate([a[:128], a[128:]], axis=1)
    np.testing.assert_array_equal(
        _run_collective("all_gather_cols", a), np.concatenate([both, both])
    )


def test_reduce_scatter_collective():
    a = np.random.default_rng(10).standard_normal((512, 128), dtype=np.float32)
    total = a[:256] + a[256:]
    np.testing.assert_allclose(_run_collective("reduce_scatter_rows", a), total, rtol=1e-6)


def test_all_to_all_collective():
    a = np.random.default_rng(11).standard_normal((512, 64), dtype=np.float32)
    blocks = [a[:256], a[256:]]
    want = np.concatenate([blocks[0][:128], blocks[1][:128], blocks[0][128:], blocks[1][128:]])
    np.testing.assert_array_equal(_run_collective("all_to_all_rows", a), want)


def test_a_gather_into_the_wrong_shape_is_reported(tmp_path):
    path = _write(
        tmp_path,
        """import nki.collectives as ncc


@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray((256, 128), a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[core * 128:(core + 1) * 128, :])
    both = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
    ncc.all_gather(srcs=[mine], dsts=[both], replica_group=ncc.ReplicaGroup([[0, 1]]), collective_dim=1)
    nisa.dma_copy(dst=out[core * 128:(core + 1) * 128, :], src=both)
    return out
""",
    )
    diags = nkic.check(path, a=nkic.TensorSpec((256, 128), "float32"))
    assert [d.code for d in diags] == ["err_shape_mismatch"]
    assert "gives [128, 256]" in diags[0].message


def test_interleaved_columns_are_not_a_race(tmp_path):
    # core c writes columns c, c + 2, c + 4, ...: the hulls overlap, the elements never do
    path = _write(tmp_path, RACE.format(dst="core:a.shape[1]:nl.num_programs()"))
    assert nkic.check(path, a=nkic.TensorSpec((128, 256), "float32")) == []
    racy = _write(tmp_path, RACE.format(dst="0:a.shape[1]:nl.num_programs()"))
    assert [d.code for d in nkic.check(racy, a=nkic.TensorSpec((128, 256), "float32"))] == [
        "nkic_lnc_shared_hbm_race"
    ]


def test_tool_nkic_lnc_is_the_default_degree(tmp_path):
    from click.testing import CliRunner

    from nkic.cli import cli

    (tmp_path / "pyproject.toml").write_text("[tool.nkic]\nlnc = 2\n")
    src = tmp_path / "softmax_lnc.py"
    src.write_text((KERNELS / "softmax_lnc.py").read_text())
    neff = tmp_path / "s.neff"
    res = CliRunner().invoke(
        cli, ["compile", str(src), "--arg", "x=float32[256,128]", "-o", str(neff)]
    )
    assert res.exit_code == 0, res.output
    import nkirt

    assert nkirt.load(neff).lnc == 2
    res = CliRunner().invoke(
        cli, ["compile", str(src), "--arg", "x=float32[256,128]", "-o", str(neff), "--lnc", "1"]
    )
    assert res.exit_code == 0 and nkirt.load(neff).lnc == 1  # the command line wins


def test_an_output_one_core_writes_is_written_for_the_launch():
    a = np.random.default_rng(4).standard_normal((128, 64), dtype=np.float32)
    kernel = nkic.compile(KERNELS / "first_core_stores.py", a, lnc=2)
    np.testing.assert_array_equal(kernel(a), 2 * a)
    assert nkic.check(KERNELS / "first_core_stores.py", a=a) == []


def test_an_output_no_core_writes_is_reported_once():
    a = nkic.TensorSpec((128, 64), "float32")
    diags = nkic.check(KERNELS / "first_core_stores.py", a=a, write=False, lnc=2)
    (d,) = [d for d in diags if d.severity == "error"]
    assert d.code == "err_tensor_output_not_written_to" and d.loc.line == 11
    assert "no core of the LNC=2 launch writes it" in d.message


@pytest.mark.parametrize(("rows", "lnc"), [(1, 2), (7, 2), (7, 1)])
def test_an_lnc2_launch_is_a_one_dimensional_grid(rows, lnc):
    """`program_ndim()` is 1 under LNC=2: each core updates its own rows in place (were it 0,
    both cores would exponentiate every row, one after the other's result)."""
    x = np.random.default_rng(5).standard_normal((rows, 64), dtype=np.float32)
    kernel = nkic.compile(KERNELS / "exp_in_place.py", x, lnc=lnc)
    np.testing.assert_allclose(kernel(x.copy()), np.exp(x), rtol=1e-5)


SAME_PROGRAM = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a):
    cores = nl.num_programs(axes=0)
    core = nl.program_id(axis=0) if a.shape[0] > 1 else 0  # one row: not worth sharding
    rows = a.shape[0] // cores if a.shape[0] > 1 else 1
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, a.shape[1]), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[core * rows:(core + 1) * rows, :])
    nisa.dma_copy(dst=out[0:rows, :], src=t)
    return out
"""


def test_cores_running_the_same_program_write_the_same_values(tmp_path):
    """Both cores write row 0 of a one-row output: the programs they run are the same, so
    the values are too (no race); with two rows the programs differ and both write rows 0.."""
    path = _write(tmp_path, SAME_PROGRAM)
    assert nkic.check(path, a=nkic.TensorSpec((1, 64), "float32"), lnc=2) == []
    (race,) = nkic.check(path, a=nkic.TensorSpec((2, 64), "float32"), lnc=2)
    assert race.code == "nkic_lnc_shared_hbm_race"
    one = np.arange(64, dtype=np.float32)[None, :]
    np.testing.assert_array_equal(nkic.compile(path, one, lnc=2)(one), one)


MANY_WRITES = """
@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((8, a.shape[1]), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[8 * core:8 * core + 8, :])
    for i in range(16):
        # each core writes its own rows, core 0 downwards and core 1 upwards, but for one
        row = 8 * (i if core == 0 else 31 - i)
        nisa.dma_copy(dst=out[row:row + 8, :], src=t)
    nisa.dma_copy(dst=out[{clash}:{clash} + 8, :], src=t)
    return out
"""


def test_a_race_among_many_writes_is_found_and_only_it(tmp_path):
    # core 0 writes rows 0..127, core 1 rows 255..128 (in reverse order); then each core
    # writes 8 rows the other core wrote in its loop: two races, reported in program order
    path = _write(tmp_path, MANY_WRITES.format(clash="8 * (20 if core == 0 else 3)"))
    diags = nkic.check(path, a=nkic.TensorSpec((256, 64), "float32"))
    assert [d.code for d in diags] == ["nkic_lnc_shared_hbm_race"] * 2
    assert ["elements [24:32, 0:64]" in diags[0].message, diags[0].loc.line] == [True, 15]
    assert ["elements [160:168, 0:64]" in diags[1].message, diags[1].loc.line] == [True, 16]
    clean = _write(tmp_path, MANY_WRITES.format(clash="8 * (0 if core == 0 else 31)"))
    assert nkic.check(clean, a=nkic.TensorSpec((256, 64), "float32")) == []


PER_LAUNCH = """
@nki.jit
def kernel(a):
    n = nl.num_programs(0) if nl.program_ndim() > 0 else 1
    assert n == 4, f"expected 4 programs, got {n}"
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_a_failure_worded_per_launch_is_reported_once(tmp_path):
    # `nkic check` specialises a kernel that asks for its launch at LNC=1 and on both cores of
    # LNC=2; the assertion prints the program count, so each launch words it differently
    path = _write(tmp_path, PER_LAUNCH)
    for a in (nkic.TensorSpec((128, 64), "float32"), None):
        diags = nkic.check(path, **({"a": a} if a else {}))
        (d,) = [d for d in diags if d.severity == "error"]
        assert d.code == "err_assert_failed" and d.loc.line == 9
        assert d.message == "assertion failed: expected 4 programs, got 1 [LNC=1]"
        assert d.notes[-1] == (
            "[LNC=2 core 0, LNC=2 core 1] assertion failed: expected 4 programs, got 2"
        )
