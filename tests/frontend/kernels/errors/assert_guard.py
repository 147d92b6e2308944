# args: x=float32[256,512]
# A failed assert ends the kernel, as the Python exception would: the error it guards against
# (a 256-partition tile) is not reported, nor anything after it; errors before it are.
import nki
import nki.language as nl


@nki.jit
def assert_guard(x):
    P, F = x.shape
    n = len(3)  # expect: err_type_error@9
    assert P <= 128, f"at most 128 partitions, got {P}"  # expect: err_assert_failed@5
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    y = "s" + 1
    return t
