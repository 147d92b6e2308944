"""Reading a tile of which only a part was written: on hardware the unwritten part is garbage,
harmless while no result computed from it is used. The simulator runs such instructions,
keeps the elements computed from unwritten memory unwritten, and faults only when one is read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic
from nkic import RuntimeFault

KERNELS = Path(__file__).resolve().parent / "kernels" / "partly_written.py"


def nonzero_reference(x: np.ndarray) -> np.ndarray:
    row = x[0]
    positions = np.flatnonzero(row != 0)
    out = np.full(row.size + 1, -1, np.int32)
    out[: positions.size] = positions
    out[-1] = positions.size
    return out[None, :]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_nonzero_with_count_of_one_loaded_partition(dtype):
    x = np.random.default_rng(3).integers(0, 2, (1, 64)).astype(dtype)
    x[0, :5] = [0, 3, 0, 0, -2]
    k = nkic.compile(str(KERNELS), kernel="nonzero_of_row", x=x)
    np.testing.assert_array_equal(k(x), nonzero_reference(x))


def test_lanes_computed_from_written_partitions_are_used():
    x = np.random.default_rng(4).standard_normal((40, 16)).astype(np.float32)
    k = nkic.compile(str(KERNELS), kernel="exp_of_rows", x=x, rows_out=40, first_row=0)
    np.testing.assert_allclose(k(x), np.exp(x), rtol=1e-6)


def test_reading_lanes_computed_from_unwritten_memory_faults_naming_their_source():
    x = np.ones((40, 16), np.float32)
    k = nkic.compile(str(KERNELS), kernel="exp_of_rows", x=x, rows_out=41, first_row=0)
    with pytest.raises(RuntimeFault) as info:
        k(x)
    assert str(info.value).startswith(
        "uninitialised read: output 'out' holds elements computed from memory nothing wrote "
        "(on hardware: garbage), by activation at "
    )
    assert "partly_written.py:32 and what used its results" in str(info.value)


def test_a_later_instruction_reading_only_garbage_lanes_faults_naming_their_source():
    x = np.ones((40, 16), np.float32)
    k = nkic.compile(str(KERNELS), kernel="exp_of_rows", x=x, rows_out=41, first_row=40)
    with pytest.raises(RuntimeFault) as info:
        k(x)
    assert str(info.value).startswith("uninitialised read: dma_copy at ")
    assert str(info.value).endswith(
        "before anything wrote it; elements of e were computed from memory nothing wrote (by "
        "activation at partly_written.py:32), which leaves them unwritten"
    )


def _bf16_pair(rows: int):
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal((rows, 32), dtype=np.float32).astype("bfloat16") for _ in "xy")


def test_bf16_sum_of_the_written_partitions_is_used():
    x, y = _bf16_pair(40)
    k = nkic.compile(str(KERNELS), kernel="sum_of_rows", x=x, y=y, rows_out=40)
    want = (x.astype(np.float32) + y.astype(np.float32)).astype("bfloat16")
    np.testing.assert_array_equal(k(x, y).view(np.uint16), want.view(np.uint16))


def test_bf16_sum_lanes_of_unwritten_partitions_fault():
    """The result computed with unwritten memory read as 0xFF and the one with it read as 0x00
    must both survive until they are compared (neither may reuse the other's temporaries)."""
    x, y = _bf16_pair(40)
    k = nkic.compile(str(KERNELS), kernel="sum_of_rows", x=x, y=y, rows_out=41)
    with pytest.raises(RuntimeFault) as info:
        k(x, y)
    assert str(info.value).startswith(
        "uninitialised read: output 'out' holds elements computed from memory nothing wrote "
        "(on hardware: garbage), by tensor_tensor at "
    )
