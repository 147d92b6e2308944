"""A kernel whose compile-time Python does most of the work: a tile pool object hands out
tiles by f-string names, a settings dict and a small class hierarchy choose each step, and
helper functions compute every slice. The pool's state changes in every iteration, so no loop
can stay symbolic: all of them unroll (compile-time scaling benchmark of the specialiser)."""

import nki
import nki.isa as nisa
import nki.language as nl

SETTINGS = {"rows": 128, "cols": 512, "scale": 0.5, "bias": 1.0}


class TilePool:
    """Tiles by name, allocated on first use; counts what it handed out."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.tiles = {}
        self.handed = 0

    def get(self, kind, i, j):
        name = f"{kind}_{i}_{j % 2}"
        if name not in self.tiles:
            self.tiles[name] = nl.ndarray(
                (SETTINGS["rows"], SETTINGS["cols"]), dtype=self.dtype, buffer=nl.sbuf
            )
        self.handed += 1
        return self.tiles[name]


class Step:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, dst, src):
        nisa.tensor_scalar(dst=dst, data=src, op0=nl.multiply, operand0=self.scale)


class ShiftedStep(Step):
    def __init__(self, scale, bias):
        super().__init__(scale)
        self.bias = bias

    def apply(self, dst, src):
        nisa.tensor_scalar(
            dst=dst, data=src, op0=nl.multiply, operand0=self.scale, op1=nl.add, operand1=self.bias
        )


def rows_of(i):
    start = i * SETTINGS["rows"]
    return slice(start, start + SETTINGS["rows"])


def cols_of(j):
    start = j * SETTINGS["cols"]
    return slice(start, start + SETTINGS["cols"])


def step_for(i, j):
    if (i + j) % 2 == 0:
        return Step(SETTINGS["scale"])
    return ShiftedStep(SETTINGS["scale"], SETTINGS["bias"])


@nki.jit
def unrolled_python(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    pool = TilePool(x.dtype)
    for i in range(R // SETTINGS["rows"]):
        for j in range(C // SETTINGS["cols"]):
            src = pool.get("in", i, j)
            dst = pool.get("out", i, j)
            nisa.dma_copy(dst=src, src=x[rows_of(i), cols_of(j)])
            step_for(i, j).apply(dst, src)
            nisa.dma_copy(dst=out[rows_of(i), cols_of(j)], src=dst)
    return out
