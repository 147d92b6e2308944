"""The Python API: compile a kernel for given arguments and call it on arrays (numpy, torch,
jax or anything array-like; results come back as the caller's kind of array)."""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import numpy as np
from nkirt.errors import NeffError, RunError, RuntimeFault

from . import driver, standin
from .arrays import is_array, like, to_numpy
from .diagnostics import CompileError, Diagnostic
from .ir.target import TARGET_NAMES

__all__ = ["CompiledKernel", "NeffError", "RunError", "RuntimeFault", "check", "compile", "load"]


def _tensor_args(args: dict[str, object]) -> dict[str, object]:
    """Arrays become tensor specs; numpy's default float64 is taken as the kernels' float32.
    A numpy array that is a strided or offset view of a larger array is that view of its
    buffer."""
    from .frontend import TensorSpec

    def spec(v):
        v = to_numpy(v)
        name = "float32" if v.dtype == np.float64 else v.dtype
        return TensorSpec(tuple(v.shape), name, _array_view(v))

    def convert(v):
        if is_array(v):
            return spec(v)
        if isinstance(v, (list, tuple)):
            return type(v)(convert(x) for x in v)
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        return v

    return {k: convert(v) for k, v in args.items()}


def _flatten_inputs(name: str, value, out: dict) -> None:
    """The arrays inside a list, tuple or dict argument, by their kernel input names
    (`W=[a, b]` gives `W_0` and `W_1`, as at compile time)."""
    from .frontend.args import tensor_input_name

    def walk(v, path):
        if isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, (*path, i))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, (*path, k))
        else:
            out[tensor_input_name(path)] = v

    walk(value, (name,))


def _array_view(v: np.ndarray):
    """The HbmView of an array that looks into a larger C-contiguous array, else None."""
    from .frontend.args import HbmView

    base = v.base
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if not isinstance(base, np.ndarray) or not base.flags.c_contiguous:
        return None
    size = v.itemsize
    byte = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if base.itemsize != size or byte % size or any(s % size for s in v.strides):
        return None
    if byte == 0 and v.flags.c_contiguous and v.size == base.size:
        return None
    return HbmView(tuple(base.shape), byte // size, tuple(s // size for s in v.strides))


def _param_names(path: str, name: str) -> list[str] | None:
    try:
        from .frontend.loader import read_source

        tree = ast.parse(read_source(path))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return None


class SimulationWarning(RuntimeWarning):
    """The simulated run did something whose hardware result is undefined (e.g. an activation
    input outside the function's valid range); the message names the instruction and line."""


class NonFiniteWarning(SimulationWarning):
    """The run turned finite inputs into Inf/NaN; the message names the first instruction
    (source line and iteration) whose output held them."""


class CompiledKernel:
    """A compiled kernel: call it on arrays to run it on the simulated NeuronCore.

    `returns_nothing` is True when the kernel returns no tensor (its results are the
    parameters it writes, named in `output_names`); None when unknown (a loaded `.neff`)."""

    def __init__(
        self,
        neff: bytes,
        ir: str = "",
        asm: str = "",
        returns_nothing=None,
        report=None,
        limits=None,
    ):
        import nkirt

        self.neff = neff
        self.ir = ir
        self.asm = asm
        #: The resource report (docs/lnc.md) when compiled from source, else None.
        self.report: dict | None = report
        self.profile: dict | None = None
        self.returns_nothing: bool | None = returns_nothing
        self._program = nkirt.load(neff, limits or nkirt.Limits())
        self.name = self._program.kernel

    @property
    def inputs(self):
        return self._program.inputs

    @property
    def output_names(self) -> list[str]:
        return list(self._program.output_names)

    def __call__(
        self,
        *arrays,
        seed: int = 0,
        timing_only: bool = False,
        exact_accumulation: bool = False,
        **named,
    ):
        import nkirt

        names = [t.name for t in self._program.inputs]
        if len(arrays) > len(names):
            raise TypeError(f"{self.name} takes {len(names)} tensor argument(s), got {len(arrays)}")
        inputs = dict(zip(names, arrays))
        for k, v in list(named.items()):
            if k not in names and isinstance(v, (list, tuple, dict)):
                del named[k]
                _flatten_inputs(k, v, named)
        for k, v in named.items():
            if k not in names:
                raise TypeError(f"{self.name} has no tensor argument {k!r}")
            inputs[k] = v
        proto = next((v for v in inputs.values() if is_array(v)), None)
        res = nkirt.execute(
            self._program,
            {k: to_numpy(v) if is_array(v) else np.asarray(v) for k, v in inputs.items()},
            seed=seed,
            timing_only=timing_only,
            exact_accumulation=exact_accumulation,
        )
        self.profile = res.profile
        for w in res.profile["warnings"]:
            times = f" ({w['count']} instances)" if w["count"] > 1 else ""
            category = NonFiniteWarning if w.get("kind") == "non-finite" else SimulationWarning
            warnings.warn(f"{w['message']}{times}", category, stacklevel=2)
        outs = tuple(like(v, proto) for v in res.outputs.values())
        if timing_only:
            return None
        return outs[0] if len(outs) == 1 else outs

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.neff)


def compile(
    kernel,
    /,
    *args,
    target: str = driver.DEFAULT_TARGET,
    lnc: int | None = None,
    grid: tuple[int, ...] | None = None,
    nki: str | None = None,
    **kwargs,
) -> CompiledKernel:
    """Compile `kernel` (a function, or a file path with `kernel="name"`) for `args`.

    Arguments: arrays (numpy, torch, jax, ...) and `TensorSpec`s become tensor inputs, also
    inside lists, tuples, dicts and objects (named by place: `W=[a, b]` gives the inputs `W_0`
    and `W_1`); an `ArgExpr("Config(eps=1e-6)")` is an expression evaluated by nkic's
    interpreter in the kernel module's namespace (as `--arg`); anything else is a
    compile-time value. `lnc` is the launch's logical-core degree
    (default: the `kernel[n]` bracket, else 1); LNC=2 runs two physical cores that share
    HBM. `nki` is the NKI language version ("0.3" … "0.7", default: the newest). `grid` is a
    Beta 1 SPMD launch grid (`grid=(2, 2)`, Beta 1's `kernel[2, 2]`): its programs run one
    after another on one NeuronCore. Raises `CompileError` carrying every diagnostic.
    """
    _check_nki(nki)
    bracket = getattr(kernel, "lnc", 1)
    if isinstance(kernel, (str, Path)):
        path = str(kernel)
        name = kwargs.pop("kernel", None)
        if name is None:
            from .frontend import find_kernels

            found = find_kernels(path, language=nki)
            name = found[0][0] if len(found) == 1 else None
    else:
        fn = standin.kernel_function(kernel)
        if fn is None:
            raise TypeError(
                f"expected a kernel function or a file path, got {type(kernel).__name__}"
            )
        path = inspect.getsourcefile(fn)
        name = fn.__name__
        if path is None:
            raise TypeError(f"cannot find the source file of {name}")
    if target not in TARGET_NAMES:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGET_NAMES)}")
    params = _param_names(path, name) if name else None
    if name and params is None:
        params = []
    if args and params is not None and len(args) > len(params):
        raise TypeError(f"{name} takes {len(params)} argument(s), got {len(args)}")
    named = dict(zip(params or [], args))
    named.update(kwargs)
    if lnc is not None and bracket != 1 and lnc != bracket and nki in ("0.3", "0.4", "0.5", "0.6"):
        import warnings

        # the check is NKI 0.7's; earlier compilers took their own degree
        warnings.warn(
            f"the kernel's LNC degree (kernel[{bracket}]) differs from the compiler's "
            f"(lnc={lnc}); NKI {nki} does not check it (0.7 does), nkic compiles for lnc={lnc}",
            stacklevel=2,
        )
        bracket = lnc
    if lnc is not None and bracket != 1 and lnc != bracket:
        from .lnc import kernel_loc

        message = (
            f"the kernel's LNC degree (kernel[{bracket}]) differs from the compiler's (lnc={lnc})"
        )
        raise CompileError(
            [
                Diagnostic(
                    "nkic_lnc_degree",
                    message,
                    kernel_loc(path, name),
                    "error",
                    "launch with the degree you compile for",
                )
            ]  # fmt: skip
        )
    if grid:
        return _compile(path, name, named, target, lnc=lnc or 1, grid=_grid(grid), nki=nki)
    return _compile(path, name, named, target, lnc=lnc or bracket, nki=nki)


def _grid(grid) -> tuple[int, ...]:
    return tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)


def compile_named(fn, named: dict[str, object], target: str = driver.DEFAULT_TARGET, **options):
    """`compile` of a kernel function with its arguments by parameter name (any names, even
    `target` or `kernel`); `options` go to the driver."""
    path = inspect.getsourcefile(fn)
    if path is None:
        raise TypeError(f"cannot find the source file of {fn.__name__}")
    return _compile(path, fn.__name__, named, target, **options)


def _compile(path: str, name: str | None, named: dict[str, object], target: str, **options):
    res = driver.compile_file(path, name, _tensor_args(named), target, **options)
    if not res.ok:
        raise CompileError(
            [d for d in res.diagnostics]
            or [Diagnostic("nkic_internal_error", "compilation produced no output", _loc(path))]
        )
    return CompiledKernel(
        res.neff, res.ir_text, res.asm, returns_nothing=not res.ir.returns, report=res.report
    )


def _loc(path: str):
    from .ir.core import Loc

    return Loc(path, 1, 1, 1, 1)


def load(
    path: str | Path, *, max_memory: int | None = None, max_instances: int | None = None
) -> CompiledKernel:
    """A CompiledKernel from a `.neff` written by `nkic compile` or `CompiledKernel.save`.

    The file may come from anywhere: it is validated whole before anything runs, and any
    defect (or a size beyond the limits) raises `NeffError` with a one-line message. Calling
    the kernel raises `RunError` when a run would need more than `max_memory` bytes (default
    8 GiB) and `RuntimeFault` when the simulated NeuronCore faults.
    """
    import nkirt
    from nkirt.neff import read_file

    default = nkirt.Limits()
    limits = nkirt.Limits(max_memory or default.max_memory, max_instances or default.max_instances)
    return CompiledKernel(read_file(path), limits=limits)


def check(
    path: str | Path,
    kernel: str | None = None,
    target: str = driver.DEFAULT_TARGET,
    lnc: int | None = None,
    grid: tuple[int, ...] | None = None,
    nki: str | None = None,
    **args,
) -> list[Diagnostic]:
    """Every diagnostic for the kernels in `path` (tensor arguments as arrays or TensorSpecs).
    `lnc` checks one launch degree; by default a kernel that asks for `nl.program_id()` or
    `nl.num_programs()` is checked at LNC=1 and at LNC=2 where the target has it. `nki` is
    the NKI language version (default: the newest). `grid` checks every program of a Beta 1
    SPMD launch grid."""
    _check_nki(nki)
    return driver.check_file(
        str(path),
        kernel,
        _tensor_args(args),
        target,
        lnc,
        grid=_grid(grid) if grid else (),
        nki=nki,
    )


def _check_nki(nki: str | None) -> None:
    from .frontend.languages import VERSIONS

    if nki is not None and nki not in VERSIONS:
        raise ValueError(f"unknown NKI version {nki!r}; expected one of {', '.join(VERSIONS)}")
