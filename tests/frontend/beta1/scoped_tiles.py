"""Beta 1 kernels written for the nkic tests of block scoping: an if / else / for block is the
scope of the tensors it defines."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def chosen_in_branches(a, b, first):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    if first:
        tmp = nl.load(a)
    else:
        tmp = nl.load(b)
    nl.store(out, value=tmp)
    return out


@nki.jit
def written_in_branches(a, b, first):
    """The tile is created before the branches, which write it."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tmp = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    if first:
        tmp[...] = nl.load(a)
    else:
        tmp[...] = nl.load(b)
    nl.store(out, value=tmp)
    return out


@nki.jit
def rebound_in_a_loop(a):
    """`data = data + t` in the loop makes a new tensor, which the loop's scope ends."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    data = nl.zeros(a.shape, dtype=a.dtype)
    for _ in nl.sequential_range(4):
        t = nl.load(a)
        data = data + t
    nl.store(out, value=data)
    return out


@nki.jit
def updated_in_a_loop(a):
    """`data[...] = data + t` writes the tile created before the loop."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    data = nl.zeros(a.shape, dtype=a.dtype)
    for _ in nl.sequential_range(4):
        t = nl.load(a)
        data[...] = data + t
    nl.store(out, value=data)
    return out


def _pick(a, b, first):
    if first:
        r = nl.load(a)
    else:
        r = nl.load(b)
    return r


@nki.jit
def in_a_helper(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=_pick(a, b, True))
    return out


@nki.jit
def used_in_the_block(a):
    """Tiles defined and used in the same iteration, an outer tile aliased in a branch, and
    numbers bound in blocks: all visible where they are used."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    scale = 1.0
    for i in range(2):
        y = nisa.activation(np.exp, x, scale=scale)
        if i == 1:
            z = nl.multiply(y, 2.0)
            nl.store(out, value=z)
        scale = 0.5
        alias = x
    nl.store(out, value=nl.add(alias, scale))
    return out
