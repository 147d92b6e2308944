"""`nl.tile_size`'s SBUF sizes: per target, the NKI 0.4 names, and the 0.4 deprecation."""

from __future__ import annotations

import numpy as np
import pytest

import nkic
from nkic.ir.target import TARGETS

KERNEL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    assert nl.tile_size.{name} == {value}, nl.tile_size.{name}
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def check(tmp_path, name, value, **options):
    path = tmp_path / "k.py"
    path.write_text(KERNEL.format(name=name, value=value))
    return nkic.check(str(path), "k", a=np.zeros((128, 8), np.float32), **options)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_sbuf_sizes_follow_the_target(tmp_path, target):
    per_partition = TARGETS[target].sbuf_partition_bytes
    for name, value in [
        ("sbuf_fmax_bytes", per_partition),
        ("sbuf_fmax", per_partition // 4),
        ("sbuf_size_bytes", 128 * per_partition),
    ]:
        diags = check(tmp_path, name, value, target=target)
        assert [d for d in diags if d.severity == "error"] == [], (name, diags)


def test_total_available_sbuf_size_is_per_partition_and_deprecated_since_0_4(tmp_path):
    per_partition = TARGETS["trn2"].sbuf_partition_bytes
    (warning,) = check(tmp_path, "total_available_sbuf_size", per_partition, target="trn2")
    assert warning.code == "nkic_deprecated_api" and "sbuf_fmax_bytes" in warning.hint
    assert check(tmp_path, "total_available_sbuf_size", per_partition, nki="0.3") == []


def test_the_0_4_names_do_not_exist_in_0_3(tmp_path):
    (error,) = check(tmp_path, "sbuf_fmax_bytes", 0, nki="0.3")
    assert error.code == "err_unknown_api"
