# args: x=float32[128,512]
# A raise in a helper ends the kernel at the helper's call; the loop after it never runs.
import nki
import nki.language as nl


def check_mode(mode):
    if mode not in ("sum", "max"):
        raise ValueError(f"unknown mode {mode}")  # expect: err_raised_exception@9
    return mode


@nki.jit
def raise_in_helper(x, mode="mean"):
    check_mode(mode)
    for i in range(4):
        y = "s" + i
    return x
