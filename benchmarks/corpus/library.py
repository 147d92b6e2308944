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

from .nkic_runs import OK, Outcome, run_nkic, supports_option

SHAPES_TOML = Path(__file__).with_name("library_shapes.toml")
_TENSOR = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[([0-9,\s]*)\]\s*$")
_NAMED = re.compile(r"^\s*(nl|np)\.[A-Za-z_][A-Za-z0-9_]*\s*$")


class TableError(ValueError):
    """A malformed entry in the shapes table."""


@dataclass(frozen=True)
class Case:
    kernel: str
    id: str
    args: dict[str, str]
    atol: float = 1e-5
    rtol: float = 1e-5
    lnc: int = 2  # the library tests' default on trn2
    inputs: dict[str, str] = field(default_factory=dict)

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
            inputs = dict(c.get("inputs", {}))
            for arg, gen in inputs.items():
                if arg not in args or not is_tensor(args[arg]):
                    raise TableError(f"{name}[{c['id']}]: inputs names {arg!r}, not a tensor arg")
                try:
                    generate(gen, (1,), np.random.default_rng(0))
                except ValueError as e:
                    raise TableError(f"{name}[{c['id']}]: inputs {arg!r}: {e}") from None
            tol = c.get("tolerance", k.get("tolerance", {}))
            case = Case(
                name,
                str(c["id"]),
                args,
                tol.get("atol", 1e-5),
                tol.get("rtol", 1e-5),
                int(c.get("lnc", 2)),
                inputs,
            )
            cases.append(case)
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
    if _NAMED.match(spec):
        return spec  # an operator or dtype by name (`nl.add`), as nkic reads it
    try:
        return ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        raise ValueError(f"{spec!r} is neither dtype[d0,...] nor a Python literal") from None


def generate(spec: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """The values an `inputs` entry asks for: `const:V`, `arange[:STEP]`, `randint:LO:HI`."""
    kind, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []
    try:
        if kind == "const" and len(parts) == 1:
            return np.full(shape, float(parts[0]))
        if kind == "arange" and len(parts) <= 1:
            step = int(parts[0]) if parts else 1
            return (np.arange(int(np.prod(shape))) * step).reshape(shape)
        if kind == "randint" and len(parts) == 2:
            return rng.integers(int(parts[0]), int(parts[1]), size=shape)
    except ValueError:
        pass
    raise ValueError(f"{spec!r} is not const:V, arange[:STEP] or randint:LO:HI")


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
    note: str = ""


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
    note = ""
    if case.lnc != 1:
        if supports_option("compile", "--lnc"):
            argv += ["--lnc", str(case.lnc)]
        else:
            note = f"the test runs at LNC={case.lnc}; this nkic has no --lnc: one core"
    comp = run_nkic(argv, timeout, cwd=str(workdir))
    res = CaseResult(case.key, kernel.name, comp, note=note)
    if comp.status != OK:
        return res
    profile = workdir / "profile.json"
    given, _ = make_inputs(case, only_given=True)  # values the kernel's control flow needs
    res.run = run_nkic(
        ["run", str(neff), "--timing-only", "--profile", str(profile), "--out-dir", str(workdir)]
        + _save_inputs(given, workdir / "given"),
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


def make_inputs(
    case: Case, seed: int = 0, only_given: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """The case's tensors (its `inputs` generators, else seeded standard-normal values),
    rounded to their dtypes, and its host values. `only_given`: just the generated tensors."""
    rng = np.random.default_rng(seed)
    tensors, host = {}, {}
    for name, spec in case.args.items():
        value = parse_spec(spec)
        if not is_tensor(spec):
            host[name] = value
            continue
        dtype, shape = value
        if name in case.inputs:
            tensors[name] = _round_to(generate(case.inputs[name], shape, rng), dtype)
        elif not only_given:
            tensors[name] = _round_to(rng.standard_normal(shape).astype(np.float32), dtype)
    return tensors, host


def _save_inputs(tensors: dict[str, np.ndarray], in_dir: Path) -> list[str]:
    in_dir.mkdir(exist_ok=True)
    argv = []
    for name, arr in tensors.items():
        np.save(in_dir / f"{name}.npy", arr)
        argv += ["--in", f"{name}={in_dir / (name + '.npy')}"]
    return argv


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
    out_dir.mkdir(exist_ok=True)
    argv = ["run", str(neff), "--out-dir", str(out_dir)] + _save_inputs(tensors, in_dir)
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
