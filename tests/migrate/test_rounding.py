"""nkic migrate's verification when outputs are not bit-identical: within the tolerance the
roundings the migration changed explain, or differ. The Beta 1 kernel is compared with
migrations written here by hand, each rounding differently."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nkic.frontend import TensorSpec
from nkic.migrate import migrate_source, verify
from nkic.migrate_rounding import Rounding, changes, distance

ROUNDING = Path(__file__).resolve().parent / "beta1_rounding.py"
ARGS = {"a": TensorSpec((128, 512), "float32")}


@pytest.fixture(scope="module")
def migrated():
    return migrate_source(ROUNDING.read_text()).text


def _edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def _verified(text: str):
    return verify(str(ROUNDING), text, "row_sums", ARGS, "trn2")


def _reference() -> np.ndarray:
    """The original's outputs on verify's seeded inputs, in float64 (numpy)."""
    a = np.random.default_rng(0).standard_normal((128, 512), dtype=np.float32)
    return np.exp(a.astype(np.float64)).sum(axis=1, keepdims=True)


def test_the_automatic_migration_is_identical(migrated):
    outcome = _verified(migrated)
    assert outcome.identical and outcome.matches, outcome.describe()
    assert "outputs bit-identical" in outcome.describe()


def test_a_bfloat16_intermediate_is_within_the_tolerance_it_explains(migrated):
    # exp's results rounded to bfloat16 (2^-8 relative each) before a sum of positive terms:
    # the sums move by at most 2^-8 relative, within 4 u(bfloat16) + 4 u(float32) (the
    # original's activation rounding to float32 only) + 2 u(float32) (the outputs)
    text = _edited(migrated, "e = nl.exp(x)", "e = nl.exp(x, dtype=nl.bfloat16)")
    text = _edited(text, "s = nl.sum(e, axis=1)", "s = nl.sum(e, axis=1, dtype=nl.float32)")
    outcome = _verified(text)
    assert not outcome.identical and outcome.within_tolerance and outcome.matches
    assert outcome.allowed_rel_diff == 4 * 2.0**-8 + 6 * 2.0**-24
    assert 0 < outcome.max_rel_diff <= 2.0**-8
    assert "activation rounds to bfloat16 in the migrated kernel only" in outcome.explained_by
    text = outcome.describe()
    assert "row_sums: outputs within tolerance (max ulp error " in text
    assert "explained by activation rounds to bfloat16 in the migrated kernel only" in text


def test_a_sum_split_in_two_is_within_the_tolerance_of_its_order(migrated):
    text = _edited(
        migrated,
        "s = nl.sum(e, axis=1)",
        "s = nl.add(nl.sum(e[:, 0:256], axis=1), nl.sum(e[:, 256:512], axis=1))",
    )
    outcome = _verified(text)
    assert not outcome.identical and outcome.within_tolerance, outcome.describe()
    assert (
        "tensor_reduce reduces 256 values per result in the migrated kernel only "
        "(the other's reductions: 512)"
    ) in outcome.explained_by
    # each 512-term float32 sum of the original is within 512 u of the exact one (numpy)
    ref = _reference()
    assert outcome.max_rel_diff <= 2 * 512 * 2.0**-24
    assert outcome.max_abs_diff <= 2 * 512 * 2.0**-24 * float(np.max(ref))


def test_a_difference_larger_than_the_changed_rounding_explains_differs(migrated):
    # the extra multiply rounds in float32 (it explains 2^-24 relative), but scales by 1.001
    text = _edited(migrated, "s = nl.sum(e, axis=1)", "s = nl.multiply(nl.sum(e, axis=1), 1.001)")
    outcome = _verified(text)
    assert not outcome.matches
    assert outcome.max_rel_diff == pytest.approx(0.001, rel=1e-3)
    assert outcome.allowed_rel_diff < 1e-6
    assert "the changed roundings explain at most" in outcome.describe()


def test_no_changed_rounding_explains_nothing(migrated):
    # the same instructions and dtypes computing another function: nothing to tolerate
    outcome = _verified(_edited(migrated, "e = nl.exp(x)", "e = nl.tanh(x)"))
    assert not outcome.matches and outcome.explained_by == ()
    assert "no rounding the migration changed explains it" in outcome.describe()


def test_the_cli_exits_0_within_tolerance(tmp_path, migrated):
    from click.testing import CliRunner

    from nkic.cli import cli

    kernel = tmp_path / "k.py"
    kernel.write_text(ROUNDING.read_text())
    res = CliRunner().invoke(cli, ["migrate", str(kernel), "--arg", "a=float32[128,512]"])
    assert res.exit_code == 0 and "row_sums: outputs bit-identical" in res.output


def test_distance_counts_ulps_and_refuses_moved_specials():
    one_up = np.nextafter(np.float32(1), np.float32(2))
    a = np.array([1.0, -0.0, 4.0], np.float32)
    b = np.array([one_up, 0.0, 4.0], np.float32)
    gap = distance((a,), (b,))
    assert gap.comparable and gap.max_ulp == 1 and gap.max_rel == pytest.approx(2.0**-23 / 4)
    # across zero: the smallest subnormals of both signs are two values apart
    tiny = np.array([1e-45], np.float32)
    assert distance((tiny,), (-tiny,)).max_ulp == 2
    bf = np.array([1.0, 2.0, 3.0], ml_dtypes.bfloat16)
    assert distance((bf,), (np.array([1.0, 2.0, 3.015625], ml_dtypes.bfloat16),)).max_ulp == 1
    nan = np.array([np.nan, 1.0], np.float32)
    assert not distance((nan,), (np.array([0.0, 1.0], np.float32),)).comparable
    ints = np.array([1, 2], np.int32)
    assert not distance((ints,), (np.array([1, 3], np.int32),)).comparable
    assert not distance((a,), (a, a)).comparable


def test_roundings_read_from_the_ir():
    ir = """kernel @k target=trn2 {
  file 0 "k.py"
  param %t0 : hbm float32[128, 512] "a" @0:1:1-1:2
  %t1 = alloc sbuf float32[128, 512] "x" address(0, 0) @0:1:1-1:2
  dma_copy[dma](dst=%t1[0; [512, 128], [1, 512]], src=%t0[0; [512, 128], [1, 512]]) {oob_mode="error", dge_mode="unknown", engine="unknown", name=none} @0:1:1-1:2
  %t2 = alloc sbuf bfloat16[128, 512] "s" address(0, 4096) @0:1:1-1:2
  tensor_tensor[vector](dst=%t2[0; [512, 128], [1, 512]], data1=%t1[0; [512, 128], [1, 512]], data2=%t1[0; [512, 128], [1, 512]]) {op="add", engine="unknown", name=none} @0:1:1-1:2
  %t3 = alloc sbuf float32[128, 1] "r" address(0, 5120) @0:1:1-1:2
  tensor_reduce[vector](dst=%t3[0; [1, 128], [1, 1]], data=%t2[0; [512, 128], [1, 512]]) {op="add", axis=(1,), negate=false, keepdims=false, name=none} @0:1:1-1:2
  return %t3
}
"""  # noqa: E501
    r = Rounding.of_ir(ir)
    # the copy into a float32 tile of the same dtype rounds nothing
    assert r.writes == {("tensor_tensor", "bfloat16"), ("tensor_reduce", "float32")}
    assert r.reductions == {("tensor_reduce", 512)}
    assert changes(r, r) == []
    wider = Rounding.of_ir(ir.replace("bfloat16[128, 512]", "float32[128, 512]"))
    narrowed, widened = changes(wider, r)
    assert narrowed.what == "tensor_tensor rounds to bfloat16 in the migrated kernel only"
    assert narrowed.bound == 4 * 2.0**-8
    assert widened.what == "tensor_tensor rounds to float32 in the original kernel only"
    assert widened.bound == 4 * 2.0**-24
