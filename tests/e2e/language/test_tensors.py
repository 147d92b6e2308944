"""Tensors: indexing (partition rules), reshape, view(dtype), permute, broadcast, ap() including
a partition-broadcast read (step 0), get_pattern, metadata, item assignment, nki.typing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic

from .harness import KERNELS, rand, run


def test_indexing_and_item_assignment():
    h = rand((4, 128, 32), seed=7)
    meta, out = run("tensors.py", "indexing", h=h)
    want_meta = [3, 2, 132, 12801, 4096, 32, 4096, 8192 + 96, 2, 2 * 32 + 8, 1, 1, 1, 1, 1, 3]
    np.testing.assert_array_equal(meta, np.array([want_meta], np.float32))
    want = np.zeros((128, 82), np.float32)
    want[:, 0:32] = h[1]
    want[:, 32:48] = h[2][:, 16:32]
    want[:, 48] = h[1][:, 3]
    want[:, 49] = -1.0
    want[32, 50:82] = h[1][-32]
    np.testing.assert_array_equal(out, want)


def test_view_primitives_and_access_patterns():
    x = rand((128, 64), seed=8)
    meta, reshaped, bits, transposed, bcast, row5, odd, right, on_chip = run(
        "tensors.py", "views", x=x
    )
    np.testing.assert_array_equal(meta, np.array([[64, 128, 1, 32, 2]], np.float32))
    np.testing.assert_array_equal(reshaped, x.reshape(64, 128))
    assert bits.dtype == np.int32
    np.testing.assert_array_equal(bits, x.view(np.int32))
    np.testing.assert_array_equal(transposed, x.T)
    np.testing.assert_array_equal(bcast, np.broadcast_to(x[3], (128, 64)))
    np.testing.assert_array_equal(row5, np.broadcast_to(x[5], (128, 64)))
    np.testing.assert_array_equal(odd, x[:, 1::2])
    np.testing.assert_array_equal(right, x[:, 32:])
    np.testing.assert_array_equal(on_chip, np.concatenate([x[:, 32:], x[:, :32]], axis=1))


def test_shapes_from_nki_typing_annotations():
    kernel = nkic.compile(str(Path(KERNELS) / "tensors.py"), kernel="annotated")
    x, w = rand((64, 96), seed=9), rand((64, 96), seed=10)
    np.testing.assert_array_equal(kernel(x=x, w=w), x - w)
