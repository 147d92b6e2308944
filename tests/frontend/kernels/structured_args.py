"""Kernels taking structured arguments: lists of tensors, configuration objects and Enum
members, as the NKI Library's kernels do."""

from dataclasses import dataclass
from enum import Enum

import nki
import nki.language as nl


class Mode(Enum):
    SUM = 0
    DOUBLED_SUM = 1


@dataclass
class Config:
    mode: Mode = Mode.SUM
    dtype: object = nl.float32
    bias: object = None


@nki.jit
def add_all(xs, cfg):
    """The sum of the tensors `xs`, doubled in DOUBLED_SUM mode, plus `cfg.bias` if given."""
    out = nl.ndarray(xs[0].shape, dtype=cfg.dtype, buffer=nl.shared_hbm)
    acc = nl.load(xs[0])
    for x in xs[1:]:
        acc = nl.add(acc, nl.load(x))
    if cfg.mode == Mode.DOUBLED_SUM:
        acc = nl.multiply(acc, 2.0)
    if cfg.bias is not None:
        acc = nl.add(acc, nl.load(cfg.bias))
    nl.store(out, acc)
    return out


@nki.jit
def scaled(tables, scale):
    """tables["a"] * scale."""
    out = nl.ndarray(tables["a"].shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(tables["a"]), scale))
    return out


@nki.jit
def clash(xs, xs_0):
    out = nl.ndarray(xs_0.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.load(xs_0))
    return out
