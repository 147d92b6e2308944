"""Semantic checks run by `nkic check` and `nkic compile`, in order; none mutates the IR."""

from __future__ import annotations

from ..base import Pass
from .dataflow import Dataflow
from .kernel_interface import KernelInterface
from .operand_rules import OperandRules
from .races import AffineRaces

CHECK_PASSES: list[Pass] = [OperandRules(), KernelInterface(), Dataflow(), AffineRaces()]

__all__ = ["CHECK_PASSES", "AffineRaces", "Dataflow", "KernelInterface", "OperandRules"]
