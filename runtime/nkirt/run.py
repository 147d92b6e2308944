"""The runtime's entry points: load a `.neff`, execute it on inputs, collect the results.

Inputs the caller does not give are filled with seeded random data: standard-normal values
rounded to the dtype for float tensors, integers in [-4, 4] (signed) or [0, 8] (unsigned) for
integer tensors, 0/1 for bool, and normal values packed 4 per word for the x4 types. The seed
is split into two streams (numpy SeedSequence.spawn): one for those inputs, one for the
simulated engines' random number generators.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from nkirt import dtypes
from nkirt.errors import RunError
from nkirt.executor import Executor
from nkirt.neff import read_neff
from nkirt.profile import RunResult, build_profile
from nkirt.program import Program, TensorInfo


def load(source: bytes | bytearray | memoryview | str | os.PathLike) -> Program:
    """Read and validate a `.neff` from a path or its bytes."""
    return read_neff(source)


def execute(
    program: Program,
    inputs: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    timing_only: bool = False,
    ideal_waits: bool = False,
) -> RunResult:
    """Run `program` on the simulated NeuronCore of its target (on two cores that share HBM
    when it was compiled for LNC=2: the kernel's inputs, outputs and `shared_hbm` tensors are
    the same memory on both, everything else is per core).

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
    executors = [
        Executor(core, seed=seed, timing_only=timing_only, ideal_waits=ideal_waits)
        for core in (program, *program.peers)
    ]
    executor = executors[0]
    if executor.memory is not None:
        for peer in executors[1:]:
            peer.memory.share(executor.memory)
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        for tensor in program.inputs:
            given = inputs.get(tensor.name)
            if given is not None and tensor.view is not None and np.shape(given) == tensor.view[0]:
                # the view's values, placed in a buffer whose other elements are random
                array = random_input(tensor, rng)
                _view_of(tensor, array)[...] = _to_storage(tensor, given)
            elif given is not None:
                array = _to_storage(tensor, given)
            else:
                array = random_input(tensor, rng)
            executor.memory.load(tensor.id, array)
    for core in executors:
        core.run()
    outputs = {}
    if executor.memory is not None:
        for name, tensor in zip(program.output_names, program.outputs):
            outputs[name] = executor.memory.tensor_array(tensor)
    profiles = [
        build_profile(
            core.program,
            core.instructions,
            core.records,
            core.rings.busy_ns,
            core.hbm.busy_ns if core.hbm is not None else None,
            [core.warnings[i] for i in sorted(core.warnings)],
        )
        for core in executors
    ]
    profile = profiles[0]
    if program.peers:
        # the launch ends with its slowest core; its profile is the launch's headline
        profile = dict(max(profiles, key=lambda p: p["total_ns"]))
        profile["lnc"] = len(profiles)
        profile["cores"] = profiles
    return RunResult(program, outputs, profile, executor.instructions, executor.records)


def _check_shape(tensor: TensorInfo, value: Any) -> None:
    shape = np.shape(value)
    if tensor.view is not None and shape == tensor.view[0]:
        return
    if shape != tensor.shape:
        also = f" (or the view's {list(tensor.view[0])})" if tensor.view is not None else ""
        raise RunError(
            f"input {tensor.name!r}: expected shape {list(tensor.shape)}{also}, got {list(shape)}"
        )


def _view_of(tensor: TensorInfo, array: np.ndarray) -> np.ndarray:
    """The elements of an input buffer that its view covers, as a writable numpy view."""
    shape, offset, strides = tensor.view
    flat = array.reshape(-1)
    size = flat.itemsize
    return np.lib.stride_tricks.as_strided(
        flat[offset:], shape, tuple(s * size for s in strides), writeable=True
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
