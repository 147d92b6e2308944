"""Beta 1 SPMD grids: every program of `kernel[d0, d1, ...]` runs (one after another on one
NeuronCore) with its own `nl.program_id`s, over the same HBM; `check` names the programs a
diagnostic comes from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import nkic

KERNELS = Path(__file__).parent / "grid_tiles.py"


def test_a_2d_grid_adds_one_tile_per_program():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((384, 512)).astype(np.float32)
    b = rng.standard_normal((384, 512)).astype(np.float32)
    k = nkic.compile(str(KERNELS), a, b, kernel="add_grid", grid=(3, 2))
    np.testing.assert_array_equal(k(a, b), a + b)
    # six programs, each loading two tiles and storing one
    assert k.ir.count("dma_copy[") == 18 and k.ir.count("alloc shared_hbm") == 1


def test_program_ids_and_counts_are_compile_time_values():
    x = np.zeros((128, 8), np.float32)
    out = nkic.compile(str(KERNELS), x, kernel="grid_shape", grid=(3, 2))(x)
    # num_programs() = 6 programs, program_ndim() = 2, block r holds 100 * r
    want = np.repeat(np.array([62.0, 162.0, 262.0], np.float32), 128)[:, None] * np.ones(8)
    np.testing.assert_array_equal(out, want)
    out1 = nkic.compile(str(KERNELS), x, kernel="grid_shape", grid=(1,))(x)
    np.testing.assert_array_equal(out1, np.full((128, 8), 11.0, np.float32))


def test_check_names_the_program_that_goes_out_of_bounds():
    a = np.zeros((256, 64), np.float32)
    diags = nkic.check(str(KERNELS), kernel="one_too_many", grid=(3,), a=a)
    assert [d.code for d in diags] == ["err_tensor_access_out_of_bound"]
    assert diags[0].message.endswith("[grid program (2,)]") and diags[0].loc.line == 42
    assert nkic.check(str(KERNELS), kernel="one_too_many", grid=(2,), a=a) == []


def test_a_grid_on_a_current_nki_kernel_or_with_lnc_is_a_diagnostic():
    current = Path(__file__).parents[3] / "examples" / "matmul_lnc.py"
    a = np.zeros((256, 512), np.float32)
    diags = nkic.check(str(KERNELS), kernel="add_grid", grid=(2, 2), lnc=2, a=a, b=a)
    assert [d.code for d in diags] == ["nkic_lnc_degree"]
    diags = nkic.check(str(current), grid=(2, 2))
    assert "nkic_lnc_degree" in [d.code for d in diags]


def test_cli_grid_option(tmp_path):
    def nkic_cli(*args):
        cmd = [sys.executable, "-m", "nkic", *args]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)

    one = nkic_cli("check", str(KERNELS), "-k", "one_too_many", "--arg", "a=float32[256,64]",
                   "--grid", "3")  # fmt: skip
    assert one.returncode == 1 and "[grid program (2,)]" in one.stdout
    bad = nkic_cli("check", str(KERNELS), "--grid", "2,x")
    assert bad.returncode == 2 and "--grid" in bad.stderr and "Traceback" not in bad.stderr
    neff = tmp_path / "add.neff"
    made = nkic_cli("compile", str(KERNELS), "-k", "add_grid", "--arg", "a=float32[256,512]",
                    "--arg", "b=float32[256,512]", "--grid", "2,2", "-o", str(neff))  # fmt: skip
    assert made.returncode == 0, made.stderr
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal((256, 512)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    ran = nkic_cli("run", str(neff), "--in", f"a={tmp_path / 'a.npy'}",
                   "--in", f"b={tmp_path / 'b.npy'}", "--out-dir", str(tmp_path / "o"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    outs = list((tmp_path / "o").glob("*.npy"))
    assert len(outs) == 1
    np.testing.assert_array_equal(np.load(outs[0]), a + b)


def test_without_a_grid_the_kernel_is_one_program_and_an_axis_outside_the_grid_is_reported():
    x = np.zeros((128, 8), np.float32)
    out = nkic.compile(str(KERNELS), x, kernel="grid_shape")(x)
    np.testing.assert_array_equal(out, np.full((128, 8), 10.0, np.float32))  # 1 program, rank 0
    a = np.zeros((256, 512), np.float32)
    diags = nkic.check(str(KERNELS), kernel="add_grid", grid=(2,), a=a, b=a)
    assert [d.code for d in diags] == ["err_invalid_argument"]
    assert "axis 1 is outside the launch grid [2]" in diags[0].message
