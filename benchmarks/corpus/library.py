"""NKI Library kernels at the shapes of the library's own integration tests.

`library_shapes.toml` lists, per kernel, its source file and entry function and the cases of
its integration tests as `nkic --arg` specs. A kernel whose test arguments `--arg` cannot
express carries a `limit` (the reason) and no cases. Each case is compiled and run on the
simulator for timing; with numerics on, a case whose kernel has a numpy reference in
`references.py` also runs on seeded inputs and its outputs are compared with the reference.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tomllib

from .nkic_runs import OK, Outcome, run_nkic

SHAPES_TOML = Path(__file__).with_name("library_shapes.toml")
_TENSOR = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[([0-9,\s]*)\]\s*$")


class TableError(ValueError):
    """A malformed entry in the shapes table."""


@dataclass(frozen=True)
class Case:
    kernel: str
    id: str
    args: dict[str, str]
    atol: float = 1e-5
    rtol: float = 1e-5

    @property
    def key(self) -> str:
        return f"{self.kernel}[{self.id}]"


@dataclass(frozen=True)
class LibraryKernel:
    name: str
    file: str
    entry: str
    test: str
    cases: tuple[Case, ...] = ()
    limit: str = ""
    reference: str = ""
    outputs: tuple[str, ...] = ()


def load_table(path: str | Path = SHAPES_TOML) -> list[LibraryKernel]:
    """The kernels of the shapes table, each case's args validated as `--arg` specs."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out: list[LibraryKernel] = []
    seen: set[str] = set()
    for i, k in enumerate(data.get("kernel", [])):
        where = f"{Path(path).name}: kernel #{i + 1}"
        for req in ("name", "file", "entry", "test"):
            if not isinstance(k.get(req), str) or not k[req]:
                raise TableError(f"{where}: missing '{req}'")
        name = k["name"]
        if name in seen:
            raise TableError(f"{where}: duplicate kernel name {name!r}")
        seen.add(name)
        cases = []
        for j, c in enumerate(k.get("case", [])):
            if "id" not in c or not isinstance(c.get("args"), dict):
                raise TableError(f"{where} ({name}), case #{j + 1}: needs 'id' and 'args'")
            args = {}
            for arg, spec in c["args"].items():
                if not isinstance(spec, str):
                    raise TableError(f"{name}[{c['id']}]: arg {arg!r} must be a string spec")
                try:
                    parse_spec(spec)
                except ValueError as e:
                    raise TableError(f"{name}[{c['id']}]: arg {arg!r}: {e}") from None
                args[arg] = spec
            tol = c.get("tolerance", k.get("tolerance", {}))
            cases.append(
                Case(name, str(c["id"]), args, tol.get("atol", 1e-5), tol.get("rtol", 1e-5))
            )
        limit = k.get("limit", "")
        if not cases and not limit:
            raise TableError(f"{where} ({name}): give cases or a 'limit' saying why there are none")
        out.append(
            LibraryKernel(
                name,
                k["file"],
                k["entry"],
                k["test"],
                tuple(cases),
                limit,
                k.get("reference", ""),
                tuple(k.get("outputs", ())),
            )
        )
    return out


def parse_spec(spec: str) -> tuple[str, tuple[int, ...]] | object:
    """A tensor spec as (dtype, shape), else the Python literal (as `nkic --arg` reads it)."""
    m = _TENSOR.match(spec)
    if m:
        dims = tuple(int(d) for d in m.group(2).split(",") if d.strip())
        return (m.group(1), dims)
    try:
        return ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        raise ValueError(f"{spec!r} is neither dtype[d0,...] nor a Python literal") from None


def is_tensor(spec: str) -> bool:
    return bool(_TENSOR.match(spec))


@dataclass
class CaseResult:
    key: str
    kernel: str
    compile: Outcome
    run: Outcome | None = None
    latency_ns: float | None = None
    numerics: str = ""  # "", "match", "mismatch: ...", "skipped: ..."
    extra: dict = field(default_factory=dict)


def run_case(
    lib_root: Path,
    kernel: LibraryKernel,
    case: Case,
    workdir: Path,
    timeout: float,
    numerics: bool,
    references: Mapping[str, Callable] | None = None,
) -> CaseResult:
    """Compile the case, run it for timing, and with `numerics` compare it with its reference."""
    neff = workdir / "kernel.neff"
    argv = ["compile", str(lib_root / kernel.file), "-k", kernel.entry, "-o", str(neff)]
    for name, spec in case.args.items():
        argv += ["--arg", f"{name}={spec}"]
    comp = run_nkic(argv, timeout, cwd=str(workdir))
    res = CaseResult(case.key, kernel.name, comp)
    if comp.status != OK:
        return res
    profile = workdir / "profile.json"
    res.run = run_nkic(
        ["run", str(neff), "--timing-only", "--profile", str(profile), "--out-dir", str(workdir)],
        timeout,
        cwd=str(workdir),
    )
    if res.run.status == OK and profile.is_file():
        import json

        res.latency_ns = float(json.loads(profile.read_text()).get("total_ns", 0.0))
    if numerics and res.run.status == OK:
        res.numerics = compare_numerics(kernel, case, neff, workdir, timeout, references)
    return res


def _round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """Values exactly representable in the kernel's dtype, stored as float32 (or int)."""
    import ml_dtypes

    if dtype.startswith(("int", "uint")):
        return x.astype(dtype)
    narrow = getattr(ml_dtypes, dtype, None)
    if narrow is not None:
        return x.astype(narrow).astype(np.float32)
    return x.astype(dtype).astype(np.float32 if dtype != "float64" else np.float64)


def make_inputs(case: Case, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """Seeded standard-normal tensors rounded to their dtypes, and the host values."""
    rng = np.random.default_rng(seed)
    tensors, host = {}, {}
    for name, spec in case.args.items():
        value = parse_spec(spec)
        if is_tensor(spec):
            dtype, shape = value
            tensors[name] = _round_to(rng.standard_normal(shape).astype(np.float32), dtype)
        else:
            host[name] = value
    return tensors, host


class SkipNumerics(Exception):
    """The reference cannot run here (e.g. it needs torch and torch is absent)."""


def compare_numerics(
    kernel: LibraryKernel,
    case: Case,
    neff: Path,
    workdir: Path,
    timeout: float,
    references: Mapping[str, Callable] | None = None,
) -> str:
    if references is None:
        from .references import REFERENCES as references
    if not kernel.reference:
        return "skipped: no reference for this kernel"
    ref = references.get(kernel.reference)
    if ref is None:
        return f"skipped: unknown reference {kernel.reference!r}"
    tensors, host = make_inputs(case)
    try:
        expected = ref(tensors, host)
    except SkipNumerics as e:
        return f"skipped: {e}"
    expected = expected if isinstance(expected, tuple) else (expected,)
    in_dir, out_dir = workdir / "in", workdir / "out"
    in_dir.mkdir(exist_ok=True)
    out_dir.mkdir(exist_ok=True)
    argv = ["run", str(neff), "--out-dir", str(out_dir)]
    for name, arr in tensors.items():
        np.save(in_dir / f"{name}.npy", arr)
        argv += ["--in", f"{name}={in_dir / (name + '.npy')}"]
    run = run_nkic(argv, timeout, cwd=str(workdir))
    if run.status != OK:
        first = run.errors[0].message if run.errors else run.detail
        return f"mismatch: the run failed ({run.status}: {first})"
    names = list(kernel.outputs) or sorted(p.stem for p in out_dir.glob("*.npy"))
    if len(names) != len(expected):
        return f"mismatch: {len(names)} output(s), the reference gives {len(expected)}"
    worst = 0.0
    for name, want in zip(names, expected):
        path = out_dir / f"{name}.npy"
        if not path.is_file():
            return f"mismatch: no output named {name!r}"
        got = np.load(path).astype(np.float64)
        want = np.asarray(want, dtype=np.float64)
        if got.shape != want.shape:
            return f"mismatch: {name} has shape {got.shape}, the reference {want.shape}"
        if not np.allclose(got, want, atol=case.atol, rtol=case.rtol):
            err = float(np.max(np.abs(got - want)))
            return f"mismatch: {name} max abs error {err:.3g} (atol {case.atol}, rtol {case.rtol})"
        worst = max(worst, float(np.max(np.abs(got - want))) if got.size else 0.0)
    return f"match (max abs error {worst:.3g})"
