"""The table of instruction semantics the executor dispatches on, filled by `@semantics`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkirt import dtypes

#: `fn(ctx, ops, attrs) -> {output operand name: array}`.
SemanticsFn = Callable[[Any, Mapping[str, Any], Mapping[str, Any]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Semantics:
    """How one `nki.isa` instruction computes its outputs.

    `outputs` names every output operand the instruction may write; `fn` returns those it
    computed (an optional output such as `reduce_res` may be returned even when the program
    does not bind it). `reads_outputs` asks the executor to pass the outputs' current
    contents in `ops` (accumulating or predicated writes).
    """

    name: str
    fn: SemanticsFn
    outputs: tuple[str, ...]
    reads_outputs: bool


SEMANTICS: dict[str, Semantics] = {}


def semantics(
    name: str, outputs: tuple[str, ...] = ("dst",), reads_outputs: bool = False
) -> Callable[[SemanticsFn], SemanticsFn]:
    """Register the decorated function as the semantics of instruction `name`. The registered
    `fn` also converts each output whose NKI dtype `attrs["_dtypes"]` declares to that dtype
    (`nkirt.dtypes.cast`: a no-op for outputs already in their storage dtype, but the rounding
    of fp32 results to tfloat32, whose storage is float32), into a temporary of `ctx.scratch`."""

    def register(fn: SemanticsFn) -> SemanticsFn:
        if name in SEMANTICS:
            raise ValueError(f"semantics of {name} registered twice")

        @functools.wraps(fn)
        def run(ctx, ops, attrs):
            declared = attrs.get("_dtypes", {})
            return {
                output: dtypes.cast(value, declared[output], ctx.scratch)
                if output in declared
                else value
                for output, value in fn(ctx, ops, attrs).items()
            }

        SEMANTICS[name] = Semantics(name, run, tuple(outputs), reads_outputs)
        return fn

    return register
