# args: x=float32[128,512]
import nki
import nki.isa as nisa
import nki.language as nl


def gen():
    yield 1  # not reported here: module-level code is checked where the kernel uses it


class Weird(int):  # never used by the kernel: not reported
    pass


@nki.jit
def subset(x, *, flag=True):  # expect: err_unsupported_syntax@18
    try:  # expect: err_unsupported_syntax@5
        pass
    except Exception:
        pass
    s = {1, 2}  # expect: err_unsupported_syntax@9
    if x is x:  # expect: err_unsupported_syntax@8
        pass
    with nl.ds(0, 1):  # expect: err_unsupported_syntax@10
        pass
    global g  # expect: err_unsupported_syntax@5
    f = lambda: nl.ndarray((1, 1), nl.float32)  # noqa: E731  # expect: err_unsupported_syntax@17
    f()
    breakpoint()  # expect: err_unsupported_syntax@5

    async def co():  # expect: err_unsupported_syntax@5
        pass

    def inner():
        nonlocal s  # expect: err_unsupported_syntax@9

    gen()  # expect: err_unsupported_syntax@5
