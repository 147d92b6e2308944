"""Fuzzing nkic with hostile input: mutated and generated `.neff` files and kernel sources.

Each case runs under a time budget; the outcome is one of: accepted, refused with a
documented error (NeffError, RunError, RuntimeFault, a CompileError/diagnostic), an internal
error (any other exception, or an `nkic_internal_error` diagnostic), a hang (over the time
budget) or a memory blow-up (MemoryError: a size no limit caught). Only the first is
interesting when it is fast; the last three are bugs.

`python tests/fuzz/harness.py --seconds 300 --report fuzz-report.md` (what `make fuzz`
runs) mutates the example kernels and the test kernels and their compiled `.neff` files for a
fixed time and writes a report; a failing case is saved under tests/fuzz/crashes/ so that it
becomes a regression test.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import random
import signal
import struct
import sys
import time
import zlib
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRASHES = Path(__file__).resolve().parent / "crashes"
#: CPU seconds one case may take before it counts as a hang (CPU time: the verdict does not
#: depend on how busy the machine is).
CASE_SECONDS = 30.0
#: Memory limit of fuzzed runs (small: a blow-up must be refused, not allocated).
FUZZ_MEMORY = 256 << 20
#: Instance limit of fuzzed runs.
FUZZ_INSTANCES = 200_000

OK, REFUSED, INTERNAL, HANG, MEMORY = "ok", "refused", "internal error", "hang", "memory"
#: Boundary values a mutation puts in place of an integer.
HOSTILE_INTS = [0, -1, 1, 2, 127, 128, 129, 2**15, 2**31 - 1, 2**31, 2**32, 2**53, 10**15, -(2**31)]
HOSTILE_STRINGS = ["", "../../x", "/abs/x", "\x1b[31mred\x1b[0m", "a b", "x" * 5000, "\u202e"]


class Hang(BaseException):
    """Raised into a case that ran out of time (a BaseException: nkic's own handlers, which
    turn unexpected exceptions into internal-error diagnostics, must not swallow it)."""


@contextmanager
def deadline(seconds: float):
    def expire(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


# --- .neff containers -------------------------------------------------------------------


def container(program: dict, data: bytes = b"") -> bytes:
    """A well-formed container (valid checksum) around any program JSON."""
    sections = [(b"PROG", 1, zlib.compress(json.dumps(program).encode()))]
    if data:
        sections.append((b"DATA", 0, data))
    offset = 48 + 24 * len(sections)
    table = b""
    for tag, flags, payload in sections:
        table += struct.pack("<4sIQQ", tag, flags, offset, len(payload))
        offset += len(payload)
    body = table + b"".join(p for _, _, p in sections)
    return (
        struct.pack("<8sHHI32s", b"NKICNEFF", 1, 0, len(sections), hashlib.sha256(body).digest())
        + body
    )


def unpack(blob: bytes) -> tuple[dict, bytes]:
    count = struct.unpack_from("<I", blob, 12)[0]
    sections = {}
    for i in range(count):
        tag, flags, offset, length = struct.unpack_from("<4sIQQ", blob, 48 + 24 * i)
        payload = blob[offset : offset + length]
        sections[tag] = zlib.decompress(payload) if flags & 1 else payload
    return json.loads(sections[b"PROG"]), sections.get(b"DATA", b"")


def _slots(value, path=()):
    """Every (path, value) inside a JSON value."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _slots(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _slots(v, (*path, i))


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def mutate_program(program: dict, rng: random.Random) -> dict:
    """One to three structural mutations of a program JSON."""
    doc = copy.deepcopy(program)
    for _ in range(rng.randint(1, 3)):
        slots = [(p, v) for p, v in _slots(doc) if p]
        path, value = rng.choice(slots)
        roll = rng.random()
        if isinstance(value, bool) or roll < 0.1:
            new = rng.choice([None, "x", [], {}, 1.5, True, -3])
        elif isinstance(value, int):
            new = rng.choice([*HOSTILE_INTS, value + 1, value - 1, value * 2, -value])
        elif isinstance(value, str):
            new = rng.choice([*HOSTILE_STRINGS, value + value, value[:-1]])
        elif isinstance(value, list) and value and roll < 0.5:
            new = list(value)
            if rng.random() < 0.5:
                new.append(copy.deepcopy(rng.choice(value)))
            else:
                new.pop(rng.randrange(len(new)))
        elif isinstance(value, dict) and value:
            new = dict(value)
            del new[rng.choice(list(new))]
        else:
            new = rng.choice(HOSTILE_INTS)
        _set(doc, path, new)
    return doc


def run_neff(blob: bytes) -> tuple[str, str]:
    """Load and run a `.neff` as `nkic run` would (timing only and with numerics)."""
    import nkirt

    limits = nkirt.Limits(FUZZ_MEMORY, FUZZ_INSTANCES)
    try:
        with deadline(CASE_SECONDS):
            program = nkirt.load(blob, limits)
            nkirt.execute(program, timing_only=True)
            nkirt.execute(program, seed=1)
    except (nkirt.NeffError, nkirt.RunError, nkirt.RuntimeFault) as e:
        return REFUSED, str(e)
    except Hang:
        return HANG, f"over {CASE_SECONDS} s"
    except MemoryError as e:
        return MEMORY, str(e)
    except Exception as e:  # noqa: BLE001 - every other exception is the bug being looked for
        return INTERNAL, f"{type(e).__name__}: {e}"
    return OK, ""


# --- kernel sources ---------------------------------------------------------------------


class _SourceMutator(ast.NodeTransformer):
    def __init__(self, rng: random.Random):
        self.rng = rng

    def visit_Constant(self, node):
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            if self.rng.random() < 0.15:
                return ast.copy_location(
                    ast.Constant(self.rng.choice([0, -1, 1, 3, 129, 513, 2**20])), node
                )
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if self.rng.random() < 0.1:
            node.op = self.rng.choice([ast.Add(), ast.Sub(), ast.Mult(), ast.FloorDiv(), ast.Mod()])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        roll = self.rng.random()
        if roll < 0.05 and node.args:
            node.args.pop(self.rng.randrange(len(node.args)))
        elif roll < 0.1 and node.keywords:
            node.keywords.pop(self.rng.randrange(len(node.keywords)))
        elif roll < 0.13:
            node.args.append(ast.Constant(1))
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        if len(node.body) > 1 and self.rng.random() < 0.2:
            i = self.rng.randrange(len(node.body))
            if self.rng.random() < 0.5:
                node.body.pop(i)
            else:
                node.body.insert(i, copy.deepcopy(node.body[i]))
        return node


def mutate_source(source: str, rng: random.Random) -> str:
    tree = _SourceMutator(rng).visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree))


def run_kernel(path: Path) -> tuple[str, str]:
    """`nkic check` on a kernel file: diagnostics are fine, an internal error is not."""
    from nkic import driver

    try:
        with deadline(CASE_SECONDS):
            diags = driver.check_file(str(path), None, {}, driver.DEFAULT_TARGET)
    except Hang:
        return HANG, f"over {CASE_SECONDS} s"
    except MemoryError as e:
        return MEMORY, str(e)
    except Exception as e:  # noqa: BLE001
        return INTERNAL, f"{type(e).__name__}: {e}"
    internal = [d for d in diags if d.code == "nkic_internal_error"]
    if internal:
        return INTERNAL, internal[0].message
    return (REFUSED if any(d.severity == "error" for d in diags) else OK), ""


# --- seeds and the driver ---------------------------------------------------------------


def kernel_seeds() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.py"))
    files += sorted((ROOT / "tests").glob("**/kernels/*.py"))
    return [f for f in files if f.name != "demo.py"]


def neff_seeds() -> list[bytes]:
    """Compiled examples at small shapes."""
    import nkic
    from nkic.frontend import TensorSpec

    f32 = "float32"
    cases = [
        ("tensor_add", {"a": TensorSpec((128, 64), f32), "b": TensorSpec((128, 64), f32)}),
        ("tiled_add", {"a": TensorSpec((256, 64), f32), "b": TensorSpec((256, 64), f32)}),
        ("softmax", {"x": TensorSpec((128, 64), f32)}),
        (
            "matmul_tiled",
            {"lhsT": TensorSpec((128, 128), f32), "rhs": TensorSpec((128, 512), f32)},
        ),
    ]
    return [
        nkic.compile(str(ROOT / "examples" / f"{name}.py"), kernel=name, **args).neff
        for name, args in cases
    ]


def save_crash(kind: str, suffix: str, content: bytes, detail: str) -> Path:
    digest = hashlib.sha256(content).hexdigest()[:12]
    path = CRASHES / f"{kind}-{digest}{suffix}"
    path.write_bytes(content)
    path.with_suffix(path.suffix + ".txt").write_text(detail + "\n")
    return path


def fuzz(seconds: float, seed: int) -> tuple[Counter, list[str]]:
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    found: list[str] = []
    neffs = [unpack(blob) for blob in neff_seeds()]
    kernels = kernel_seeds()
    scratch = Path(__file__).resolve().parent / ".scratch"
    scratch.mkdir(exist_ok=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if rng.random() < 0.7:
            program, data = rng.choice(neffs)
            blob = container(mutate_program(program, rng), data)
            outcome, detail = run_neff(blob)
            if outcome in (INTERNAL, HANG, MEMORY):
                found.append(
                    f"{outcome}: {save_crash('neff', '.neff', blob, detail).name}: {detail[:200]}"
                )
        else:
            source = rng.choice(kernels)
            try:
                text = mutate_source(source.read_text(), rng)
            except (SyntaxError, ValueError, RecursionError):
                continue
            case = scratch / source.name
            case.write_text(text)
            outcome, detail = run_kernel(case)
            if outcome in (INTERNAL, HANG, MEMORY):
                saved = save_crash("kernel", ".py", text.encode(), detail)
                found.append(f"{outcome}: {saved.name}: {detail[:200]}")
        outcomes[outcome] += 1
    return outcomes, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report", default="fuzz-report.md")
    args = parser.parse_args()
    sys.setrecursionlimit(10_000)
    outcomes, found = fuzz(args.seconds, args.seed)
    lines = [
        "# nkic fuzzing report",
        "",
        f"Budget {args.seconds:.0f} s, seed {args.seed}.",
        "",
        f"* cases run: {sum(outcomes.values())}",
        f"* accepted: {outcomes[OK]}; refused with a documented error: {outcomes[REFUSED]}",
        f"* internal errors: {outcomes[INTERNAL]} (must be 0)",
        f"* hangs (over {CASE_SECONDS:.0f} s): {outcomes[HANG]} (must be 0)",
        f"* memory limit hits without a diagnostic: {outcomes[MEMORY]} (must be 0)",
        "",
        *(f"* {line}" for line in found),
    ]
    Path(args.report).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
