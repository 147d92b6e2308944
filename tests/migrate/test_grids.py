"""nkic migrate: index grids an instruction cannot take as they are (more than four free
dimensions), rewritten and verified against the original and numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nkic import api
from nkic.frontend import TensorSpec
from nkic.migrate import migrate_source, verify

GRIDS = Path(__file__).with_name("beta1_grids.py")

SPECS = {
    "upsample_blend": {"a": TensorSpec((128, 4, 4, 4), "float32")},
    "column_sums": {"a": TensorSpec((128, 256), "float32"), "b": TensorSpec((128, 256), "float32")},
    "block_row_sums": {"a": TensorSpec((2, 128, 256), "float32")},
}


def _upsample_blend(a):
    res = np.zeros((128, 6, 6, 6), a.dtype)
    for i in range(2):
        for j in range(2):
            for k in range(2):
                near = a[:, i : i + 3, j : j + 3, k : k + 3] * np.float32(0.75)
                far = a[:, 1 - i : 4 - i, 1 - j : 4 - j, 1 - k : 4 - k] * np.float32(0.25)
                res[:, i:6:2, j:6:2, k:6:2] = near + far
    return res


def _column_sums(a, b):
    sums = a[:, 0:64] + a[:, 64:128] + a[:, 128:192] + a[:, 192:256]
    peaks = np.maximum(np.max(b.reshape(128, 4, 64), axis=1), np.float32(0.0))
    return np.concatenate([sums, peaks], axis=1)


def _block_row_sums(a):
    blocks = a.reshape(2, 128, 4, 64)
    sums = np.zeros((2, 128, 4), np.float32)
    for k in range(64):  # in element order, as the Vector engine adds
        sums += blocks[..., k]
    return np.concatenate([sums[0], sums[1]], axis=1)


REFERENCES = {
    "upsample_blend": _upsample_blend,
    "column_sums": _column_sums,
    "block_row_sums": _block_row_sums,
}


@pytest.fixture(scope="module")
def migrated():
    return migrate_source(GRIDS.read_text())


def test_more_than_four_free_dimensions_become_loops_over_the_outer_ones(migrated):
    text = migrated.text
    assert "nl.mgrid[" not in text.replace("`ip, _ = nl.mgrid[", "") and migrated.todos == []
    # six free dimensions: the two outer ones are loops, each access pattern keeps four
    assert "    for i_free0 in range(2):\n        for i_free1 in range(2):\n" in text
    line = next(x for x in text.splitlines() if "res.ap(" in x)
    dst = line.split("res.ap(pattern=")[1].split(", offset=")[0]
    assert dst.count("], [") == 4  # the partition entry and four free ones
    assert "offset=(res.shape[2] * res.shape[3]) * i_free0 + res.shape[3] * i_free1)" in line


def test_with_03_the_loops_are_affine_ranges():
    text = migrate_source(GRIDS.read_text(), to="0.3").text
    assert "for i_free0 in nl.affine_range(2):" in text


def test_a_pattern_whose_destination_is_also_read_is_not_split():
    source = GRIDS.read_text().replace(
        "nl.multiply(t[i_p, i_x + i_a, i_y + i_b, i_z + i_c], 0.75)",
        "nl.multiply(res[i_p, i_x + i_a, i_y + i_b, i_z + i_c], 0.75)",
    )
    # splitting would let one iteration read what an earlier one wrote: left as it is
    assert "i_free0" not in migrate_source(source).text


def test_a_partition_grid_beside_block_indices_becomes_a_slice(migrated):
    # `ip, _ = nl.mgrid[0:128, 0:1]`: `_` assigned elsewhere in the kernel is not a use of it
    assert "nisa.tensor_reduce(dst=sums[0:128, g, i], op=nl.add, data=x, axis=(1,))" in (
        migrated.text
    )
    assert "    ip, _ = nl.mgrid" not in migrated.text and migrated.todos == []


def test_loop_reduce_into_a_view_becomes_the_instruction_in_place(migrated):
    text = migrated.text
    assert "loop_reduce" not in text.split("def column_sums")[1].split('"""', 2)[2]
    assert "nisa.tensor_tensor(dst=acc[:, 0, :], data1=acc[:, 0, :], data2=x, op=nl.add)" in text
    assert "data2=y, op=nl.maximum)" in text


def test_loop_reduce_into_a_name_is_a_manual_step():
    source = GRIDS.read_text().replace(
        "acc[1] = nl.loop_reduce(y, op=nl.maximum", "m = nl.loop_reduce(y, op=nl.maximum"
    )
    m = migrate_source(source)
    assert [t.message.split(" has ")[0] for t in m.todos] == ["nl.loop_reduce"]
    assert "nisa.tensor_tensor(dst=acc[:, 0, :]" in m.text


@pytest.mark.parametrize("kernel", sorted(SPECS))
def test_the_migrated_kernel_computes_the_originals_bits(migrated, kernel):
    outcome = verify(str(GRIDS), migrated.text, kernel, SPECS[kernel], "trn2")
    assert outcome.error is None, outcome.describe()
    assert outcome.identical, outcome.describe()


@pytest.mark.parametrize("kernel", sorted(SPECS))
def test_the_migrated_kernel_matches_numpy(migrated, kernel, tmp_path):
    path = tmp_path / "migrated.py"
    path.write_text(migrated.text)
    compiled = api.compile(str(path), kernel=kernel, target="trn2", **SPECS[kernel])
    rng = np.random.default_rng(3)
    inputs = {
        name: rng.standard_normal(spec.shape).astype(np.float32)
        for name, spec in SPECS[kernel].items()
    }
    np.testing.assert_array_equal(compiled(**inputs), REFERENCES[kernel](**inputs))
