"""Tensor views: indexing rules (on-chip keeps the partition dim), reshape, view(dtype),
permute, broadcast, ap, get_pattern and metadata."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def views(h):
    # HBM (4, 128, 32): integers drop dims
    assert h[0, :, :].shape == (128, 32)
    assert h[1].offset == 4096 and h[1].strides == (32, 1)
    assert h[0, 0, 0].shape == (1,)
    assert h[..., 5].shape == (4, 128) and h[..., 5].strides == (4096, 32)
    assert h[:, 10:20, ::2].shape == (4, 10, 16)
    assert h[:, 10:20, ::2].strides == (4096, 32, 2)
    assert h[-1].offset == 3 * 4096
    assert h.reshape((512, 32)).shape == (512, 32)
    assert h.reshape(4, -1).shape == (4, 4096)
    assert h[:, :, 0:16].reshape((512, 16)).strides == (32, 1)
    assert h[:, 0:64, :].reshape((2, 2, 64, 32)).strides == (8192, 4096, 32, 1)
    assert h[:, 0:64, :].reshape((4, 2048)).strides == (4096, 1)
    assert h[1:3].reshape((256, 32)).offset == 4096
    assert h.ndim == 3 and h.size == 4 * 128 * 32 and h.dtype == nl.float32
    assert h.buffer == nl.hbm

    t = nl.ndarray((64, 64, 64), dtype=nl.float32, buffer=nl.sbuf)
    assert t.strides == (4096, 64, 1) and t.offset == 0
    assert t[0, 0, 10].shape == (1, 1)
    assert t[:, 0].shape == (64, 64)
    assert t[:, 0, 10].shape == (64, 1)
    assert t[0, ..., :].shape == (1, 64, 64)
    assert t[:, :, ::2].shape == (64, 64, 32)
    assert t[3:5, 1, 2:4].offset == 3 * 4096 + 64 + 2
    assert t[:, nl.ds(8, 16)].shape == (64, 16, 64)
    assert t.permute((0, 2, 1)).strides == (4096, 1, 64)
    assert t.reshape((64, 4096)).get_pattern() == [[4096, 64], [1, 4096]]
    assert t.view(nl.bfloat16).shape == (64, 64, 128)
    assert t.view(nl.bfloat16).strides == (8192, 128, 1)
    assert t[:, 0:1, :].broadcast(1, 8).strides == (4096, 0, 1)
    assert t.ap([[4096, 64], [2, 32]]).shape == (64, 32)
    assert t.ap([[4096, 64], [1, 16]], offset=5).offset == 5
    assert t[:, 2].ap([[4096, 64], [1, 8]]).offset == 128
    assert t.ap([[8192, 64], [1, 16]], dtype=nl.bfloat16).dtype == nl.bfloat16
    assert t.expand_dim(1).shape == (64, 1, 64, 64)
    assert t[:, 0:1].squeeze_dim(1).shape == (64, 64)
    assert t.slice(2, 4, 8).shape == (64, 64, 4)
    assert t.select(1, 3).shape == (64, 64) and t.select(1, 3).offset == 192
    assert t.is_contiguous() and not t[:, :, ::2].is_contiguous()

    out = nl.ndarray((4, 128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        tile[...] = h[i]
        out[i, :, :] = tile
    tile[:, 0:16] = 0.0
    return out
