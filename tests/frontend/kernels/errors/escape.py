# args: x=float32[128,512]
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def escape(x):
    for i in nl.affine_range(4):
        t = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, nl.ds(i * 128, 128)])
    nisa.dma_copy(dst=x[:, 0:128], src=t)  # expect: err_local_variable_used_out_of_scope@40
    for j in nl.sequential_range(2):
        u = nl.ndarray((128, 128), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=x[:, nl.ds(j * 128, 128)])
    nisa.dma_copy(dst=x[:, 0:128], src=u)
    undefined_name  # noqa: B018, F821  # expect: err_undefined_name@5
    for i in range(3):
        nisa.memset(dst=x, value=0.0, bogus=i)  # expect: err_unexpected_keyword@39
