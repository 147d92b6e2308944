"""The stand-in `neuronxcc.nki`: Beta 1 scripts call their kernels (on SPMD grids, through
`simulate_kernel`, or as the kernels `baremetal`/`benchmark` return) and get numpy results."""

from __future__ import annotations

import numpy as np
import pytest
from beta1_kernels import grid_add, scaled
from neuronxcc import nki

RNG = np.random.default_rng(5)


def test_an_spmd_grid_launch_runs_every_program():
    a, b = (RNG.standard_normal((256, 128)).astype(np.float32) for _ in range(2))
    np.testing.assert_array_equal(grid_add[2, 2](a, b), a + b)
    np.testing.assert_array_equal(nki.simulate_kernel(grid_add[2, 2], a, b), a + b)


def test_a_launch_without_the_grid_runs_one_program():
    a, b = (RNG.standard_normal((256, 128)).astype(np.float32) for _ in range(2))
    out = grid_add(np.zeros_like(a) + a, b)
    np.testing.assert_array_equal(out[:128, :64], (a + b)[:128, :64])


def test_benchmark_kernels_compute_on_the_simulator():
    a = RNG.standard_normal((128, 32)).astype(np.float32)
    np.testing.assert_array_equal(scaled(a), a * np.float32(3.0))


def test_a_grid_must_be_positive_integers():
    with pytest.raises(ValueError, match="SPMD grid"):
        grid_add[0, 2]


def test_the_package_says_it_is_the_stand_in(python):
    done = python("import nkic, neuronxcc; print(neuronxcc.NKI_STANDIN)")
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def test_programs_distributed_over_cores_compute_the_same():
    import neuronxcc.nki.language as nl

    a, b = (RNG.standard_normal((512, 128)).astype(np.float32) for _ in range(2))
    for launch in (nl.spmd_dim(nl.nc(2), 2), nl.nc(2) * 2, 2 * nl.nc(2)):
        np.testing.assert_array_equal(grid_add[launch, 2](a, b), a + b)
