import nki
import nki.language as nl


@nki.jit
def kernel(a):
    sizes = {"rows": 128}
    sizes.pop("rows", 1, 2)
    order = [1, 2]
    order.append(3, 4)
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    return out
