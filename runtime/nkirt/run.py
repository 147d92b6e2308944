"""The runtime's entry points: load a `.neff`, execute it on inputs, collect the results.

Inputs the caller does not give are filled with seeded random data: standard-normal values
rounded to the dtype for float tensors, integers in [-4, 4] (signed) or [0, 8] (unsigned) for
integer tensors, 0/1 for bool, and normal values packed 4 per word for the x4 types. The seed
is split into two streams (numpy SeedSequence.spawn): one for those inputs, one for the
simulated engines' random number generators.
"""

from __future__ import annotations

import os
from math import prod
from typing import Any

import numpy as np

from nkirt import dtypes
from nkirt.cost.tables import PSUM_PARTITION_BYTES, TARGETS
from nkirt.errors import RunError
from nkirt.executor import Executor
from nkirt.limits import DEFAULT, Limits, format_size
from nkirt.neff import read_neff
from nkirt.profile import RunResult, build_profile
from nkirt.program import Program, TensorInfo


def load(
    source: bytes | bytearray | memoryview | str | os.PathLike, limits: Limits = DEFAULT
) -> Program:
    """Read and validate a `.neff` from a path or its bytes; NeffError if it is malformed or
    exceeds `limits` (the program keeps them for its runs)."""
    return read_neff(source, limits)


def memory_needed(program: Program) -> tuple[int, str]:
    """Host bytes a functional run allocates up front (every memory and its written-shadow,
    generated inputs, copied outputs), and the largest tensor's name."""
    table = TARGETS[program.target]
    chip = 128 * (table.sbuf_partition_bytes + PSUM_PARTITION_BYTES)
    total = 2 * chip + 128 * PSUM_PARTITION_BYTES
    largest, name = 0, ""
    for tensor in program.tensors.values():
        if tensor.on_chip:
            continue
        total += 2 * tensor.nbytes
        if tensor.nbytes > largest:
            largest, name = tensor.nbytes, tensor.name
    for tensor in program.inputs:
        total += 8 * prod(tensor.shape)  # float32 random values and their cast
    total += sum(t.nbytes for t in program.outputs)
    return total, name


def _check_memory(program: Program) -> None:
    need, largest = memory_needed(program)
    limit = program.limits.max_memory
    if need > limit:
        raise RunError(
            f"the run needs {format_size(need)} of memory (largest tensor: {largest}), more "
            f"than the limit of {format_size(limit)}; raise it with --max-memory (CLI) or "
            "max_memory= (API), or run with timing only"
        )


def execute(
    program: Program,
    inputs: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    timing_only: bool = False,
    ideal_waits: bool = False,
) -> RunResult:
    """Run `program` on the simulated NeuronCore of its target.

    `inputs` maps kernel parameter names to arrays (converted to the parameter's dtype with
    round-to-nearest-even); missing ones are filled with seeded random data. With
    `timing_only` no numerics run: only the timing, profile and semaphore checks. With
    `ideal_waits` (a what-if analysis) the program's semaphore waits are replaced by waits for
    exactly the earlier conflicting accesses: the latency with perfectly fine-grained
    semaphores.
    """
    inputs = dict(inputs or {})
    known = {t.name for t in program.inputs}
    for name in inputs:
        if name not in known:
            raise RunError(f"unknown input {name!r} (kernel inputs: {', '.join(sorted(known))})")
    for tensor in program.inputs:
        if tensor.name in inputs:
            _check_shape(tensor, inputs[tensor.name])
    if not timing_only:
        _check_memory(program)
    executor = Executor(program, seed=seed, timing_only=timing_only, ideal_waits=ideal_waits)
    if executor.memory is not None:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        for tensor in program.inputs:
            if tensor.name in inputs:
                array = _to_storage(tensor, inputs[tensor.name])
            else:
                array = random_input(tensor, rng)
            executor.memory.load(tensor.id, array)
    executor.run()
    outputs = {}
    if executor.memory is not None:
        for name, tensor in zip(program.output_names, program.outputs):
            outputs[name] = executor.memory.tensor_array(tensor)
    profile = build_profile(
        program,
        executor.instructions,
        executor.records,
        executor.rings.busy_ns,
        executor.hbm.busy_ns if executor.hbm is not None else None,
        [executor.warnings[i] for i in sorted(executor.warnings)],
    )
    return RunResult(program, outputs, profile, executor.instructions, executor.records)


def _check_shape(tensor: TensorInfo, value: Any) -> None:
    shape = np.shape(value)
    if shape != tensor.shape:
        raise RunError(
            f"input {tensor.name!r}: expected shape {list(tensor.shape)}, got {list(shape)}"
        )


def _to_storage(tensor: TensorInfo, value: Any) -> np.ndarray:
    try:
        return dtypes.cast(np.asarray(value), tensor.dtype)
    except ValueError as e:
        raise RunError(f"input {tensor.name!r}: {e}") from None


def random_input(tensor: TensorInfo, rng: np.random.Generator) -> np.ndarray:
    """Seeded random contents for a parameter the caller did not give."""
    name, shape = tensor.dtype, tensor.shape
    if name in dtypes.PACKED_ELEMENT:
        values = rng.standard_normal((*shape[:-1], shape[-1] * 4), dtype=np.float32)
        return dtypes.pack_x4(values, name)
    if name == "bool":
        return rng.integers(0, 2, shape).astype(dtypes.storage_dtype(name))
    if dtypes.is_integer(name):
        signed = dtypes.storage_dtype(name).kind == "i"
        low = -4 if signed else 0
        return rng.integers(low, low + 9, shape).astype(dtypes.storage_dtype(name))
    return dtypes.cast(rng.standard_normal(shape, dtype=np.float32), name)
