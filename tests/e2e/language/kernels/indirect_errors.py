"""Tensor-indirection mistakes (trn3): each kernel makes one."""

import nki
import nki.isa as nisa
import nki.language as nl


def tiles(p=128, k=1):
    t = nl.zeros((p, 64), nl.float32, buffer=nl.sbuf)
    ix = nl.zeros((p, k), nl.int32, buffer=nl.sbuf)
    return t, ix


@nki.jit
def on_hbm(a):
    _, ix = tiles()
    v = a.indirect(ix, num_elem=16)
    return a


@nki.jit
def float_index(a):
    t, _ = tiles()
    fx = nl.zeros((128, 1), nl.float32, buffer=nl.sbuf)
    v = t.indirect(fx)
    return a


@nki.jit
def too_many_offsets(a):
    t, ix = tiles(k=2)
    v = t.indirect(ix, num_elem=257)
    return a


@nki.jit
def slice_of_indirect(a):
    t, ix = tiles()
    v = t.indirect(ix)[:, 0:8]
    return a


@nki.jit
def data2(a):
    t, ix = tiles()
    y = nl.zeros((128, 16), nl.float32, buffer=nl.sbuf)
    o = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=o, data1=y, data2=t.indirect(ix, num_elem=16), op=nl.add)
    return a


@nki.jit
def scalar_operand(a):
    t, ix = tiles()
    y = nl.zeros((128, 16), nl.float32, buffer=nl.sbuf)
    o = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=y, op0=nl.add, operand0=t.indirect(ix, num_elem=1))
    return a


@nki.jit
def dma(a):
    t, ix = tiles()
    o = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=o, src=t.indirect(ix, num_elem=16))
    return a


@nki.jit
def memset_dst(a):
    t, ix = tiles()
    nisa.memset(dst=t.indirect(ix, num_elem=16), value=0.0)
    return a


@nki.jit
def gpsimd_copy(a):
    t, ix = tiles()
    o = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=16), engine=nisa.engine.gpsimd)
    return a


@nki.jit
def snake_overflow(a):
    t, ix = tiles(p=8, k=2)
    o = nl.ndarray((8, 12), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=12))
    return a


@nki.jit
def psum_scatter_on_scalar(a):
    _, ix = tiles()
    p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    y = nl.zeros((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=p.indirect(ix, num_elem=16), op=nl.exp, data=y)
    return a


@nki.jit
def matmul_float32(a):
    t, ix = tiles()
    st = nl.zeros((128, 128), nl.float32, buffer=nl.sbuf)
    p = nl.ndarray((128, 16), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=st, moving=t.indirect(ix, num_elem=16))
    return a


@nki.jit
def matmul_transpose(a):
    _, ix = tiles()
    m = nl.zeros((128, 64), nl.bfloat16, buffer=nl.sbuf)
    st = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=st, moving=m.indirect(ix, num_elem=128), is_transpose=True)
    return a


@nki.jit
def matmul_tiled(a):
    _, ix = tiles(p=64)
    m = nl.zeros((64, 64), nl.bfloat16, buffer=nl.sbuf)
    st = nl.zeros((64, 64), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((64, 16), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=st, moving=m.indirect(ix, num_elem=16),
                   tile_position=(64, 64), tile_size=(64, 64))
    return a


def placed(shape, dtype, partition, byte):
    t = nl.ndarray(shape, dtype, buffer=nl.sbuf, address=(partition, byte))
    nisa.memset(dst=t, value=0)
    return t


@nki.jit
def gathered_off_its_index(a):
    t = placed((32, 64), nl.float32, 32, 0)
    ix = placed((32, 1), nl.int32, 0, 1024)
    o = nl.ndarray((32, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=16))
    return a


@nki.jit
def scatter_index_off_src(a):
    t = placed((32, 64), nl.float32, 0, 0)
    ix = placed((32, 1), nl.int32, 64, 1024)
    y = placed((32, 16), nl.float32, 0, 2048)
    nisa.tensor_copy(dst=t.indirect(ix, num_elem=16), src=y)
    return a


@nki.jit
def index_off_quadrant(a):
    t = placed((16, 64), nl.float32, 0, 0)
    big = placed((128, 1), nl.int32, 0, 1024)
    o = nl.ndarray((16, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(big[8:24], num_elem=16))
    return a


@nki.jit
def mx_scale_not_indexed(a):
    _, ix = tiles()
    ts = nl.zeros((128, 64), nl.uint32, buffer=nl.sbuf)
    tm = nl.zeros((128, 16), nl.uint32, buffer=nl.sbuf)
    ss = nl.zeros((128, 64), nl.uint8, buffer=nl.sbuf)
    ms = nl.zeros((128, 16), nl.uint8, buffer=nl.sbuf)
    p = nl.ndarray((16, 16), nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(
        dst=p, stationary=ts.view(nl.float8_e4m3fn_x4).indirect(ix, num_elem=16),
        moving=tm.view(nl.float8_e4m3fn_x4), stationary_scale=ss[:, 0:16], moving_scale=ms,
    )
    return a


@nki.jit
def gathered_view_off_its_index(a):
    t, _ = tiles()
    ix = nl.zeros((32, 1), nl.int32, buffer=nl.sbuf)
    o = nl.ndarray((32, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t[32:64].indirect(ix, num_elem=16))
    return a


@nki.jit
def strided_3d(a):
    _, ix = tiles()
    t = nl.zeros((128, 4, 16), nl.float32, buffer=nl.sbuf)
    v = t[:, :, 0:8].indirect(ix, num_elem=16)
    return a
