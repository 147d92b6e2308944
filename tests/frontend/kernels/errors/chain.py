# args: x=float32[128,512]
import nki
import nki.language as nl
from chain_helpers import fill_twice


@nki.jit
def chain(x):
    t = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
    fill_twice(t)
