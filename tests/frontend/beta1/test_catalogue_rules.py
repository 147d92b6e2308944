"""Beta 1 catalogue codes of tiles and index objects: a tensor with block dimensions where a
tile is expected, a one-dimensional nl.arange index, runtime indices on a free dimension, and
item assignment to an index grid or mask. Current NKI reports its own codes (nl.arange and
block dimensions do not exist there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic

KERNELS = str(Path(__file__).parent / "catalogue_kernels.py")
A = np.zeros((256, 64), np.float32)
IDX = np.zeros((64, 1), np.int32)


@pytest.mark.parametrize(
    ("kernel", "args", "code", "line", "text"),
    [
        ("block_operand", {"a": A}, "err_failed_to_infer_tile_from_local_tensor", 12,
         "nisa.activation: an operand of shape (2, 128, 64) has block dimensions"),
        ("block_operator", {"a": A}, "err_failed_to_infer_tile_from_local_tensor", 20,
         "the operator '*'"),
        ("arange_1d_sum", {"a": A}, "err_1d_arange_not_supported", 39, "one-dimensional"),
        ("columns_by_index", {"a": A, "idx": IDX}, "err_indirect_indices_free_dim", 60,
         "dimension 1 is indexed with a tile of runtime indices"),
        ("assign_to_grid_sum", {"a": A}, "err_cannot_assign_to_index", 69,
         "an index grid does not support item assignment"),
        ("assign_to_mask", {"a": A}, "err_cannot_assign_to_index", 78,
         "a mask does not support item assignment"),
    ],
)  # fmt: skip
def test_beta1_catalogue_code(kernel, args, code, line, text):
    diags = [d for d in nkic.check(KERNELS, kernel=kernel, **args) if d.severity == "error"]
    assert [(d.code, d.loc.line) for d in diags] == [(code, line)]
    assert text in diags[0].message and diags[0].hint


def test_a_block_of_a_block_tensor_is_a_tile():
    a = np.random.default_rng(0).standard_normal((2, 128, 64)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="block_tiles")(a)
    np.testing.assert_array_equal(out, a + np.float32(1.0))


def test_runtime_indices_on_the_partition_dimension_gather_rows():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 64)).astype(np.float32)
    idx = rng.integers(0, 256, (64, 1)).astype(np.int32)
    out = nkic.compile(KERNELS, a, idx, kernel="rows_by_index")(a, idx)
    np.testing.assert_array_equal(out, a[idx[:, 0]])


def test_current_nki_reports_the_removed_index_grid(tmp_path):
    path = tmp_path / "grid.py"
    path.write_text(
        "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef kernel(a):\n"
        "    out = nl.ndarray((64, 1), dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    i = nl.arange(64)\n"
        "    nl.store(out, value=nl.load(a[i, 0]))\n"
        "    return out\n"
    )
    diags = [d for d in nkic.check(str(path), a=A) if d.severity == "error"]
    assert [(d.code, d.loc.line) for d in diags] == [("err_unsupported_api", 8)]
    assert "nl.arange was removed" in diags[0].message
