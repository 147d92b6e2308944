"""Fixtures of the runtime tests: stand-in instruction semantics, independent of nkirt.isa."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest


@dataclass(frozen=True)
class FakeSemantics:
    fn: object
    outputs: tuple = ("dst",)
    reads_outputs: bool = False


def _f32(x):
    return np.asarray(x).astype(np.float32)


_ALU = {"add": np.add, "multiply": np.multiply, "subtract": np.subtract}


def _matmul(ctx, ops, attrs):
    product = _f32(ops["stationary"]).T @ _f32(ops["moving"])
    if attrs.get("accumulate"):
        product = product + _f32(ops["dst"])
    return {"dst": product}


FAKE_SEMANTICS = {
    "dma_copy": FakeSemantics(lambda ctx, ops, attrs: {"dst": ops["src"]}),
    "tensor_copy": FakeSemantics(lambda ctx, ops, attrs: {"dst": ops["src"]}),
    "memset": FakeSemantics(
        lambda ctx, ops, attrs: {"dst": np.full(ops["dst"].shape, ops["value"], np.float32)},
        reads_outputs=True,
    ),
    "tensor_tensor": FakeSemantics(
        lambda ctx, ops, attrs: {"dst": _ALU[attrs["op"]](_f32(ops["data1"]), _f32(ops["data2"]))}
    ),
    "tensor_scalar": FakeSemantics(
        lambda ctx, ops, attrs: {"dst": _ALU[attrs["op0"]](_f32(ops["data"]), ops["operand0"])}
    ),
    "activation": FakeSemantics(
        lambda ctx, ops, attrs: {"dst": getattr(np, attrs["op"])(_f32(ops["data"]))}
    ),
    "tensor_reduce": FakeSemantics(
        lambda ctx, ops, attrs: {"dst": _f32(ops["data"]).sum(axis=-1, keepdims=True)}
    ),
    "nc_matmul": FakeSemantics(_matmul, reads_outputs=True),
}


@pytest.fixture
def fake_isa(monkeypatch):
    """Install a small `nkirt.isa` with numpy semantics for the instructions tests use."""
    module = types.ModuleType("nkirt.isa")
    module.SEMANTICS = FAKE_SEMANTICS
    monkeypatch.setitem(sys.modules, "nkirt.isa", module)
    return module
