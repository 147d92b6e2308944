"""The runtime's entry points: load a `.neff`, execute it on inputs, collect the results.

Inputs the caller does not give are filled with seeded random data: standard-normal values
rounded to the dtype for float tensors, integers in [-4, 4] (signed) or [0, 8] (unsigned) for
integer tensors, 0/1 for bool, and normal values packed 4 per word for the x4 types. The seed
is split into two streams (numpy SeedSequence.spawn): one for those inputs, one for the
simulated engines' random number generators.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from math import prod
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from nkirt import dtypes
from nkirt.analysis import explorer_sections
from nkirt.cost.tables import PSUM_PARTITION_BYTES, TARGETS
from nkirt.errors import RunError, RuntimeFault
from nkirt.executor import Executor
from nkirt.launch import Launch
from nkirt.limits import DEFAULT, Limits, format_size
from nkirt.neff import read_neff
from nkirt.profile import RunResult, build_profile
from nkirt.program import Program, TensorInfo


def load(
    source: bytes | bytearray | memoryview | str | os.PathLike, limits: Limits = DEFAULT
) -> Program:
    """Read and validate a `.neff` from a path or its bytes; NeffError if it is malformed or
    exceeds `limits` (the program keeps them for its runs)."""
    with without_cycle_collection():
        return read_neff(source, limits)


def _check_no_garbage(executors: list[Executor], name: str, tensor: TensorInfo) -> None:
    """An output must not hold values computed from memory nothing wrote (on hardware:
    garbage); elements nothing wrote at all read as 0xFF, as the module docstring says."""
    if executors[0].memory.tensor_written(tensor):
        return
    for core in executors:
        ids = {t.id for t in core.program.tensors.values() if tensor.id in (t.id, t.shared)}
        source = next((core.garbage[i] for i in ids if i in core.garbage), None)
        if source is not None:
            raise RuntimeFault(
                f"uninitialised read: output {name!r} holds elements computed from memory "
                f"nothing wrote (on hardware: garbage), by {source} and what used its results"
            )


def memory_needed(program: Program) -> tuple[int, str]:
    """Host bytes a functional run allocates up front (every memory and its written-shadow,
    generated inputs, copied outputs, for each core of the launch), and the largest tensor's
    name."""
    table = TARGETS[program.target]
    chip = 128 * (table.sbuf_partition_bytes + PSUM_PARTITION_BYTES)
    total, largest, name = 0, 0, ""
    for core in (program, *program.peers):
        total += 2 * chip + 128 * PSUM_PARTITION_BYTES
        for tensor in core.tensors.values():
            if tensor.on_chip or (core is not program and tensor.shared is not None):
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


@contextlib.contextmanager
def without_cycle_collection():
    """Python's cyclic garbage collector paused (compiles and runs use it). Both allocate
    millions of small objects freed by reference counting, so the collector's passes find
    nothing to free while each full pass walks every live object of the process: about a fifth
    of a 100k-instruction compile, and of a timing-only run; reading a large program's JSON and
    building its profile allocate just as much. Garbage with cycles is collected once the
    collector runs again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def execute(
    program: Program,
    inputs: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    timing_only: bool = False,
    ideal_waits: bool = False,
    exact_accumulation: bool = False,
) -> RunResult:
    """Run `program` on the simulated NeuronCore of its target (on two cores that share HBM
    when it was compiled for LNC=2: the kernel's inputs, outputs and `shared_hbm` tensors are
    the same memory on both, everything else is per core).

    `inputs` maps kernel parameter names to arrays (converted to the parameter's dtype with
    round-to-nearest-even); missing ones are filled with seeded random data. With
    `timing_only` no numerics run: only the timing, profile and semaphore checks. With
    `ideal_waits` (a what-if analysis) the program's semaphore waits are replaced by waits for
    exactly the earlier conflicting accesses: the latency with perfectly fine-grained
    semaphores. With `exact_accumulation` every matmul sums its products in contraction order
    with one fp32 rounding per step, as the PE array does; by default one BLAS product per
    matmul (faster; docs/numerics.md bounds the difference).

    A run whose instructions turn finite inputs into Inf/NaN reports the first such instruction
    in `profile["warnings"]` (kind `non-finite`). numpy's floating-point warnings never escape.
    """
    with without_cycle_collection():
        return _execute(program, inputs, seed, timing_only, ideal_waits, exact_accumulation)


def _execute(
    program: Program,
    inputs: dict[str, Any] | None,
    seed: int,
    timing_only: bool,
    ideal_waits: bool,
    exact_accumulation: bool,
) -> RunResult:
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
    executors = [
        Executor(
            core,
            seed=seed,
            timing_only=timing_only,
            ideal_waits=ideal_waits,
            exact_accumulation=exact_accumulation,
        )
        for core in (program, *program.peers)
    ]
    executor = executors[0]
    if executor.memory is not None:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        for tensor in program.inputs:
            given = inputs.get(tensor.name)
            if given is not None and tensor.view is not None and np.shape(given) == tensor.view[0]:
                # the view's values, placed in a buffer whose other elements are random
                fill_random_input(tensor, rng, executor.memory.tensor_view(tensor))
                executor.memory.load_in_place(tensor.id)
                _view_of(tensor.view, executor.memory.tensor_view(tensor))[...] = _to_storage(
                    tensor, given
                )
            elif given is not None:
                executor.memory.load(tensor.id, _to_storage(tensor, given))
            else:
                fill_random_input(tensor, rng, executor.memory.tensor_view(tensor))
                executor.memory.load_in_place(tensor.id)
        for peer in executors[1:]:
            peer.memory.share(executor.memory)
    # The simulated matmuls are small (at most 128 x 128 x 512): one BLAS thread is fastest, and
    # several thrash when the machine is busy (25 ms instead of 0.5 ms per tile, measured).
    with np.errstate(all="ignore"), threadpool_limits(limits=1, user_api="blas"):
        if len(executors) > 1:
            Launch(executors).run()
        else:
            executor.run()
    outputs = {}
    if executor.memory is not None:
        views = program.output_views or [None] * len(program.outputs)
        for name, tensor, view in zip(program.output_names, program.outputs, views):
            _check_no_garbage(executors, name, tensor)
            executor.memory.settle_tensor(tensor)
            array = executor.memory.tensor_view(tensor)  # the run's memory is not reused
            # the view the kernel returned (a reshape, slice or permutation of the tensor)
            outputs[name] = array if view is None else np.ascontiguousarray(_view_of(view, array))
    profiles = []
    for core in executors:
        profile = build_profile(
            core.program,
            core.instructions,
            core.records,
            core.rings.busy_ns,
            core.hbm.busy_ns if core.hbm is not None else None,
            _warnings(core),
        )
        profile.update(explorer_sections(core.program, core, profile))
        if core.records:
            # the bounds' verdict: the busiest engine if busy over half the time, else "latency"
            profile["bottleneck"] = profile["bounds"]["bottleneck_engine"] or "latency"
        profiles.append(profile)
    profile = profiles[0]
    if program.peers:
        # the launch ends with its slowest core; its profile is the launch's headline
        profile = dict(max(profiles, key=lambda p: p["total_ns"]))
        profile["lnc"] = len(profiles)
        profile["cores"] = profiles
    if executor.shared_hbm is not None:
        stack, gbps = executor.shared_hbm
        total = profile["total_ns"]
        profile["hbm_stack"] = {
            "gbps": gbps,
            "cores": len(executors),
            "busy_ns": stack.busy_ns,
            "utilization": stack.busy_ns / total if total else 0.0,
        }
    cores = [(c.program, c.instructions, c.records) for c in executors] if program.peers else []
    for core in executors:
        if core.memory is not None:
            core.memory.release()
        core.ctx.scratch.release()
    return RunResult(program, outputs, profile, executor.instructions, executor.records, cores)


def _warnings(executor: Executor) -> list[dict]:
    """The run's warnings: the first non-finite result (if any), then each instruction's first
    `ExecContext.warn` message with its count."""
    found = [executor.warnings[i] for i in sorted(executor.warnings)]
    if executor.non_finite is not None:
        found.insert(0, {**executor.non_finite, "kind": "non-finite", "count": 1})
    return found


def _check_shape(tensor: TensorInfo, value: Any) -> None:
    shape = np.shape(value)
    if tensor.view is not None and shape == tensor.view[0]:
        return
    if shape != tensor.shape:
        also = f" (or the view's {list(tensor.view[0])})" if tensor.view is not None else ""
        raise RunError(
            f"input {tensor.name!r}: expected shape {list(tensor.shape)}{also}, got {list(shape)}"
        )


def _view_of(view: tuple, array: np.ndarray) -> np.ndarray:
    """The elements of a buffer that a view (shape, element offset, element strides) covers,
    as a writable numpy view."""
    shape, offset, strides = view
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


#: elements generated per step when filling a large input: the same values as in one step
#: (numpy's Generator streams), without a float32 copy of the whole tensor
_FILL_CHUNK = 1 << 22


def fill_random_input(tensor: TensorInfo, rng: np.random.Generator, dest: np.ndarray) -> None:
    """Fill `dest` (the tensor's storage) with seeded random contents, in row chunks."""
    name, shape = tensor.dtype, tensor.shape
    if name in dtypes.PACKED_ELEMENT or name == "bool" or len(shape) == 0:
        dest[...] = random_input(tensor, rng)
        return
    row = int(np.prod(shape[1:], dtype=np.int64))
    step = max(1, _FILL_CHUNK // max(row, 1))
    for lo in range(0, shape[0], step):
        hi = min(shape[0], lo + step)
        dest[lo:hi] = random_input(dataclasses.replace(tensor, shape=(hi - lo, *shape[1:])), rng)


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
