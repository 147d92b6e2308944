"""NKI Library kernels at the shapes of the library's own integration tests.

`library_shapes.toml` lists, per kernel, its source file and entry function and the cases of
its integration tests as `nkic --arg` specs (argument expressions included). A kernel that
cannot run at its tests' cases carries a `limit` (the reason) and no cases. Each case is
compiled and run on the simulator for timing; with numerics on, a case whose kernel has a numpy reference in
`references.py` also runs on seeded inputs and its outputs are compared with the reference.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tomllib
from nkirt.errors import NeffError
from nkirt.neff import program_sizes

from nkic.frontend.args import ArgExpr, TensorSpec, parse_arg_spec
from nkic.frontend.languages import VERSIONS

from .nkic_runs import OK, Outcome, run_nkic, supports_option

SHAPES_TOML = Path(__file__).with_name("library_shapes.toml")
#: Inputs beyond this many elements are timed but not compared (the functional run and the
#: float64 reference would take minutes and gigabytes).
NUMERICS_MAX_ELEMENTS = 1 << 26


def import_roots(lib_root: Path) -> tuple[str, ...]:
    """Where the library's modules are found as its tests import them: `nkilib_src` from
    `src/` (the package directory its pyproject installs) and `test.` from the checkout."""
    return (str(lib_root / "src"), str(lib_root))


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
    target: str = ""  # the test's platform when it is not nkic's default (trn2)
    #: "max": the error bound is atol + rtol * max|reference| per output (for outputs that sum
    #: large terms with cancellation, like gradients), else per element (numpy allclose)
    relative_to: str = ""

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
    nki: str = ""  # the NKI version the kernel is written in, when not nkic's default


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
            shapes = {n: shape for n, _, shape in tensor_inputs(Case(name, str(c["id"]), args))}
            names = list(shapes)
            for arg, gen in inputs.items():
                if arg not in names:
                    raise TableError(
                        f"{name}[{c['id']}]: inputs names {arg!r}, not a tensor input "
                        f"(inputs: {', '.join(names) or 'none'})"
                    )
                try:
                    generate(gen, shapes[arg], None, check_only=True)
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
                str(c.get("target", k.get("target", ""))),
                str(tol.get("relative_to", "")),
            )
            if case.relative_to not in ("", "max"):
                raise TableError(f'{case.key}: tolerance relative_to must be "max" if given')
            cases.append(case)
        limit = k.get("limit", "")
        nki = str(k.get("nki", ""))
        if nki and nki not in VERSIONS:
            raise TableError(f"{where} ({name}): nki {nki!r} is not one of {', '.join(VERSIONS)}")
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
                nki,
            )
        )
    return out


def parse_spec(spec: str) -> object:
    """An `--arg` spec as nkic reads it: a TensorSpec, an ArgExpr (an expression over the
    kernel module's names, whose tensor specs become inputs) or a Python literal."""
    return parse_arg_spec(spec)


def tensor_inputs(case: Case) -> list[tuple[str, str, tuple[int, ...]]]:
    """The kernel inputs of a case as (input name, dtype, shape), in argument order: a tensor
    argument is the input of its name; the tensors inside an argument expression are named
    by their place (`W_0`, `kargs_x`), as nkic names them."""
    out = []
    for name, spec in case.args.items():
        value = parse_spec(spec)
        if isinstance(value, TensorSpec):
            out.append((name, value.dtype, value.shape))
        elif isinstance(value, ArgExpr):
            out += [(n, t.dtype, t.shape) for n, t in value.tensors(name)]
    return out


def generate(
    spec: str, shape: tuple[int, ...], rng: np.random.Generator | None, check_only: bool = False
) -> np.ndarray | None:
    """The values an `inputs` entry asks for: `const:V`, `arange[:STEP]`, `randint:LO:HI`,
    `uniform:LO:HI` (reals, as tests that draw small values to keep activations unsaturated),
    `packed_tokens:T:K` (see `packed_tokens`),
    `rowperm`, or a table of a valid MoE block layout (`moe_routing`; `KIND:T:K:E:B[:EMPTY[:PER]]`,
    EMPTY the token id of an empty position, PER the multiple the block count is rounded up to). `check_only`: validate the spec against the
    input's shape without making values."""
    kind, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []
    if check_only and kind in MOE_ROUTING and len(parts) in (4, 5, 6):
        try:
            t, k, e, b = (int(p) for p in parts[:4])
            per = int(parts[5]) if len(parts) == 6 else 1
        except ValueError:
            t = k = e = b = per = 0
        if min(t, k, e, b, per) > 0:
            n = moe_block_count(t, k, e, b, per)
            want = {
                "moe_token_positions": n * b,
                "moe_block_experts": n,
                "moe_block_conditions": n + 2,
            }.get(kind, t * e)
            if want != int(np.prod(shape)):
                raise ValueError(f"{spec!r} makes {want} values, the input has {shape}")
            return None
    if check_only and kind == "packed_tokens":  # its shape matters: checked without values
        rng = None
    elif check_only:  # the others make any shape: check the spec on one element
        shape, rng = (1,), np.random.default_rng(0)
    try:
        if kind == "const" and len(parts) == 1:
            return np.full(shape, float(parts[0]))
        if kind == "arange" and len(parts) <= 1:
            step = int(parts[0]) if parts else 1
            return (np.arange(int(np.prod(shape))) * step).reshape(shape)
        if kind == "randint" and len(parts) == 2:
            return rng.integers(int(parts[0]), int(parts[1]), size=shape)
        if kind == "uniform" and len(parts) == 2:
            return rng.uniform(float(parts[0]), float(parts[1]), size=shape)
        if kind == "packed_tokens" and len(parts) == 2 and len(shape) == 2:
            values = packed_tokens(int(parts[0]), int(parts[1]), shape, rng)
            return None if check_only else values
        if kind == "rowperm" and not parts:  # each last-axis row a permutation of its indices
            rows = int(np.prod(shape[:-1]))
            return np.stack([rng.permutation(shape[-1]) for _ in range(rows)]).reshape(shape)
        if kind in MOE_ROUTING and len(parts) in (4, 5, 6):
            t, k, e, b = (int(p) for p in parts[:4])
            empty = int(parts[4]) if len(parts) >= 5 else t
            per = int(parts[5]) if len(parts) == 6 else 1
            if per < 1:
                raise ValueError(f"{spec!r}: PER must be at least 1")
            table = moe_routing(t, k, e, b, empty, per)[MOE_ROUTING.index(kind)]
            if table.size != int(np.prod(shape)):
                raise ValueError(f"{spec!r} makes {table.size} values, the input has {shape}")
            return table.reshape(shape)
    except ValueError as e:
        if "makes" in str(e):
            raise
    raise ValueError(
        f"{spec!r} is not const:V, arange[:STEP], randint:LO:HI, uniform:LO:HI, rowperm, "
        "packed_tokens:T:K, "
        "or moe_token_positions, moe_block_experts, moe_block_conditions or moe_token_experts "
        "with :T:K:E:B[:EMPTY[:PER]]"
    )


def packed_tokens(tokens: int, top_k: int, shape: tuple[int, ...], rng) -> np.ndarray:
    """A sparse MoE combine buffer [R, H + 2] of 16-bit values: `tokens * top_k` rows, at
    random places, hold normal values and, in their last two lanes, the int32 index of their
    token (each token `top_k` times); every other row is -1 throughout. As float32 values of
    the bfloat16 lanes (a 16-bit float input holds the index bits exactly)."""
    import ml_dtypes

    rows, width = shape
    if tokens * top_k > rows or width < 3:
        raise ValueError(
            f"'packed_tokens:{tokens}:{top_k}' makes {tokens * top_k} rows of H + 2 values, "
            f"the input has {shape}"
        )
    out = np.full(shape, -1.0, dtype=np.float32)
    if rng is None:
        return out
    ids = np.repeat(np.arange(tokens, dtype=np.int32), top_k)[:, None]
    lanes = ids.view(ml_dtypes.bfloat16).astype(np.float32)  # [T*K, 2]
    where = rng.permutation(rows)[: tokens * top_k]
    out[where, :-2] = rng.standard_normal((tokens * top_k, width - 2))
    out[where, -2:] = lanes
    return out


#: Generators of one MoE routing's tables (see `moe_routing`), in its return order.
MOE_ROUTING = (
    "moe_token_positions",
    "moe_block_experts",
    "moe_token_experts",
    "moe_block_conditions",
)


def moe_block_count(tokens: int, top_k: int, experts: int, block: int, per: int = 1) -> int:
    """N, the number of blocks a blockwise MoE kernel is given: the most any routing of
    `tokens` tokens to `top_k` of `experts` experts can need, ceil((T*K - (E-1)) / B) + E - 1,
    rounded up to a multiple of `per` (the blocks one iteration takes, e.g. one per core)."""
    n = -(-(tokens * top_k - (experts - 1)) // block) + experts - 1
    return -(-n // per) * per


def moe_routing(tokens: int, top_k: int, experts: int, block: int, empty: int, per: int = 1):
    """A valid blockwise MoE layout for `tokens` tokens each routed to `top_k` distinct experts
    (seeded): every expert's tokens fill whole blocks of `block` positions, experts in order,
    and blocks are added to the last expert until there are N = `moe_block_count` blocks.
    Returns (token_positions [N*B]: the token at each position, `empty` where none;
    block_experts [N]: each block's expert; token_experts [T, E]: 1 where a token is routed;
    block_conditions [N + 2]: 1 for each block that holds a token, 0 for the blocks added
    after them and for two more entries, the flags a dynamic loop over the blocks reads
    ahead to know when to stop)."""
    rng = np.random.default_rng(tokens * 1_000_003 + top_k * 1009 + experts * 31 + block)
    n_blocks = moe_block_count(tokens, top_k, experts, block, per)
    chosen = np.stack([rng.permutation(experts)[:top_k] for _ in range(tokens)])
    token_experts = np.zeros((tokens, experts), dtype=np.int64)
    token_experts[np.arange(tokens)[:, None], chosen] = 1
    blocks = -(-token_experts.sum(axis=0) // block)
    used = int(blocks.sum())
    blocks[-1] += n_blocks - used
    positions = np.full(n_blocks * block, empty, dtype=np.int64)
    start = 0
    for e in range(experts):
        ids = np.flatnonzero(token_experts[:, e])
        positions[start : start + len(ids)] = ids
        start += blocks[e] * block
    conditions = np.zeros(n_blocks + 2, dtype=np.int64)
    conditions[:used] = 1
    return positions, np.repeat(np.arange(experts), blocks), token_experts, conditions


@dataclass
class CaseResult:
    key: str
    kernel: str
    compile: Outcome
    run: Outcome | None = None
    latency_ns: float | None = None
    numerics: str = ""  # "", "match", "mismatch: ...", "skipped: ..."
    note: str = ""
    #: inflated bytes of the compiled .neff's largest program section (a core's PROG JSON)
    prog_bytes: int | None = None


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
    if case.target:
        argv += ["--target", case.target]
    if kernel.nki:
        argv += ["--nki", kernel.nki]
    note = ""
    if case.lnc != 1:
        if supports_option("compile", "--lnc"):
            argv += ["--lnc", str(case.lnc)]
        else:
            note = f"the test runs at LNC={case.lnc}; this nkic has no --lnc: one core"
    comp = run_nkic(argv, timeout, cwd=str(workdir), pythonpath=import_roots(lib_root))
    res = CaseResult(case.key, kernel.name, comp, note=note)
    if comp.status != OK:
        return res
    try:
        res.prog_bytes = max(program_sizes(neff).values())
    except NeffError:
        pass  # a program past the reader's cap: the run below fails with that error
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

    if dtype.endswith("_x4"):  # packed words: random bits, or the generator's integers
        from nkirt.dtypes import storage_dtype

        word = storage_dtype(dtype)
        if np.issubdtype(x.dtype, np.floating) and not np.all(x == np.round(x)):
            return np.random.default_rng(0).integers(0, np.iinfo(word).max, x.shape, dtype=word)
        return x.astype(word)
    if dtype.startswith(("int", "uint")):
        return x.astype(dtype)
    narrow = getattr(ml_dtypes, dtype, None)
    if narrow is not None:
        return x.astype(narrow).astype(np.float32)
    return x.astype(dtype).astype(np.float32 if dtype != "float64" else np.float64)


def make_inputs(
    case: Case, seed: int = 0, only_given: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """The case's tensors by input name (its `inputs` generators, else seeded standard-normal
    values), rounded to their dtypes, and its host values by argument name (literals as
    values, argument expressions as `ArgExpr`s). `only_given`: just the generated tensors."""
    rng = np.random.default_rng(seed)
    tensors, host = {}, {}
    for name, spec in case.args.items():
        value = parse_spec(spec)
        if not isinstance(value, TensorSpec):
            host[name] = value
    for name, dtype, shape in tensor_inputs(case):
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


def call_reference(
    ref: Callable,
    tensors: dict[str, np.ndarray],
    host: dict[str, object],
    lnc: int = 1,
    dtypes: Mapping[str, str] | None = None,
) -> tuple:
    """The reference's outputs as a tuple. A reference with an `lnc` parameter (its layout
    depends on the number of logical cores) gets the case's LNC degree; one with `dtypes`,
    the NKI dtype of each tensor argument by name (what the stored values cannot tell, such
    as the element type of packed words)."""
    expected = ref(tensors, host, **_context(ref, lnc, dtypes))
    return expected if isinstance(expected, tuple) else (expected,)


def _context(fn: Callable, lnc: int, dtypes: Mapping[str, str] | None) -> dict[str, object]:
    params = inspect.signature(fn).parameters
    out: dict[str, object] = {}
    if "lnc" in params:
        out["lnc"] = lnc
    if "dtypes" in params:
        out["dtypes"] = dict(dtypes or {})
    return out


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
    size = sum(n for _, _, shape in tensor_inputs(case) for n in [int(np.prod(shape))])
    if size > NUMERICS_MAX_ELEMENTS:
        return (
            f"skipped: {size:,} input elements, more than a numerics run takes "
            f"({NUMERICS_MAX_ELEMENTS:,})"
        )
    tensors, host = make_inputs(case)
    dtypes = {name: dtype for name, dtype, _ in tensor_inputs(case)}
    try:
        expected = call_reference(ref, tensors, host, case.lnc, dtypes)
    except SkipNumerics as e:
        return f"skipped: {e}"
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
    missing = [n for n in names if not (out_dir / f"{n}.npy").is_file()]
    if missing:
        return f"mismatch: no output named {missing[0]!r}"
    outputs = [np.load(out_dir / f"{n}.npy") for n in names]
    decode = getattr(ref, "decode", None)
    if decode is not None:
        outputs = decode(outputs, tensors, host, **_context(decode, case.lnc, dtypes))
    worst, notes = 0.0, []
    for name, got, want in zip(names, outputs, expected):
        got = np.asarray(got, dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        if got.shape != want.shape and got.size == want.size:
            # same elements in the same order, another shape: compared, and reported
            notes.append(f"{name} has shape {got.shape}, the reference {want.shape}")
            got = got.reshape(want.shape)
        if got.shape != want.shape:
            return f"mismatch: {name} has shape {got.shape}, the reference {want.shape}"
        if case.relative_to == "max":
            bound = case.atol + case.rtol * (float(np.max(np.abs(want))) if want.size else 0.0)
            ok = not got.size or float(np.max(np.abs(got - want))) <= bound
        else:
            ok = np.allclose(got, want, atol=case.atol, rtol=case.rtol)
        if not ok:
            err = float(np.max(np.abs(got - want)))
            rel = " of max|reference|" if case.relative_to == "max" else ""
            return (
                f"mismatch: {name} max abs error {err:.3g} (atol {case.atol}, "
                f"rtol {case.rtol}{rel})"
            )
        worst = max(worst, float(np.max(np.abs(got - want))) if got.size else 0.0)
    return f"match (max abs error {worst:.3g}" + "".join(f"; {n}" for n in notes) + ")"
