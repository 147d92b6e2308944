# args: x=float32[128,512] w=float32[64,64]
# kernel: api_context
import nki
import nki.language as nl
import nki.typing as nt

BUF = nl.ndarray((128, 512), nl.float32)  # expect: err_nki_api_outside_of_nki_kernel@7


@nki.jit
def inner(y):
    return y


@nki.jit
def api_context(x, w: nt.tensor[128, 128]):  # expect: err_annotation_shape_mismatch@20
    inner(x)  # expect: err_nested_kernel_call@5
    return x
