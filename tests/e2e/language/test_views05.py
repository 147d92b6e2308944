"""The NKI 0.5 NkiTensor views nkic added last: reshape_dim, flatten_dims, rearrange (static
views), vector_select and a runtime select (DMA gathers), against numpy; and their
diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import nkic

from .harness import KERNELS, rand, run

VIEWS = KERNELS / "views05.py"


def test_rearrange_splits_reorders_and_merges():
    a = rand((128, 24), seed=11)
    out = run("views05.py", "rearranged", a=a)
    np.testing.assert_array_equal(out, a.reshape(128, 4, 6).transpose(0, 2, 1))


def test_reshape_dim_and_flatten_dims_are_views_of_the_same_storage():
    a = rand((64, 24), seed=12)
    want = a.reshape(64, 6, 4).copy()
    want[:, :, 0:2] *= -1
    np.testing.assert_array_equal(run("views05.py", "split_and_merge", a=a), want)


def test_vector_select_gathers_rows():
    rng = np.random.default_rng(13)
    table = rng.standard_normal((300, 4, 8)).astype(np.float32)
    ids = rng.integers(0, 300, (128, 1)).astype(np.int32)
    k = nkic.compile(VIEWS, table, ids, kernel="gather_rows")
    np.testing.assert_array_equal(k(table, ids), table[ids[:, 0]])


@pytest.mark.parametrize("pos", [0, 3])
def test_select_with_a_runtime_index(pos):
    x = rand((4, 128, 8), seed=14)
    p = np.array([[pos]], np.int32)
    k = nkic.compile(VIEWS, x, p, kernel="select_block")
    np.testing.assert_array_equal(k(x, p), x[pos])


@pytest.mark.parametrize(
    ("kernel", "text"),
    [
        ("flatten_not_contiguous", "are not contiguous"),
        ("vector_select_on_chip", "only supported on HBM tensors"),
        ("rearrange_unknown_name", "must name the same dimensions"),
    ],
)
def test_view_diagnostics(kernel, text):
    (d,) = nkic.check(VIEWS, kernel=kernel, a=np.zeros((128, 8), np.float32))
    assert text in d.message and d.severity == "error", d.message
    assert d.code in ("err_invalid_view", "err_invalid_argument")


@pytest.mark.parametrize(
    ("target", "code", "text"),
    [
        ("trn2", "err_unsupported_on_target", "exists on trn3 only; the target is trn2"),
        (
            "trn3",
            "err_invalid_argument",
            "index must be an int32/uint32 SBUF tile of shape (128, K)",
        ),
    ],
)
def test_tensor_indirection_is_named_by_target(target, code, text):
    a = np.zeros((128, 8), np.float32)
    (d,) = nkic.check(VIEWS, kernel="indirect_columns", a=a, target=target)
    assert d.code == code and text in d.message, d.message
    assert d.loc.line == VIEWS.read_text().splitlines().index("    v = t.indirect(idx)") + 1


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        ("(128, 256)", "(65536 elements) to (128, 256) (32768 elements)"),
        ("(64, -1, 3)", "cannot reshape a tensor of shape (128, 512) to (64, -1, 3)"),
    ],
)
def test_reshape_keeps_the_element_count(tmp_path, shape, text):
    """NKI 0.5 made `reshape` assert an equal element count; nkic refuses a mismatch in every
    version, with the two counts, at the call."""
    path = tmp_path / "kernel.py"
    path.write_text(
        "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(a):\n"
        f"    v = a.reshape({shape})\n    return a\n"
    )
    for nki in ("0.5", "0.7"):
        (d,) = nkic.check(path, a=np.zeros((128, 512), np.float32), nki=nki)
        assert d.code == "err_invalid_view" and text in d.message, d.message
        assert (d.loc.line, d.severity) == (7, "error")
