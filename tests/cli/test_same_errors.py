"""`nkic compile` and `nkic check` report the same errors for the same file and arguments;
without argument shapes, compile adds only the missing-argument errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nkic.cli import cli
from nkic.frontend import find_kernels

TESTS = Path(__file__).resolve().parents[1]
BAD = sorted(
    [TESTS / "frontend/kernels/errors" / f"{n}.py" for n in ("names", "tensors", "values", "subset",
                                                            "escape", "raise_in_helper")]
    + [TESTS / "cli/kernels" / f"{n}.py" for n in ("five_errors", "too_many_partitions",
                                                   "capacity_and_more")]
)  # fmt: skip
ERROR = re.compile(r"^error\[(\w+)\]: .*\n\s+--> (.+):(\d+):(\d+)$", re.MULTILINE)


#: argument shapes of the kernels whose file does not start with an `# args:` line
ARGS = {"five_errors.py": ["a=float32[128,64]"], "too_many_partitions.py": ["a=float32[256,64]"]}


def header_args(path: Path) -> list[str]:
    first = path.read_text().splitlines()[0]
    specs = first.removeprefix("# args:").split() if first.startswith("# args:") else []
    specs = specs or ARGS.get(path.name, [])
    return [x for spec in specs for x in ("--arg", spec)]


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_compile_and_check_report_the_same_errors(path, tmp_path):
    args = header_args(path)
    out = ["-o", str(tmp_path / "k.neff")]
    kernels = [name for name, _ in find_kernels(str(path))]
    assert kernels
    found = set()
    for k in kernels:
        checked = errors("check", str(path), "-k", k, *args)
        if args:
            assert errors("compile", str(path), "-k", k, *args, *out) == checked
        bare = errors("compile", str(path), "-k", k, *out)
        checked_bare = errors("check", str(path), "-k", k) if args else checked
        assert {e for e in bare if e[0] != "err_missing_argument"} == checked_bare
        found |= checked
    assert found


def errors(*argv: str) -> set[tuple[str, int, int]]:
    res = CliRunner().invoke(cli, list(argv), catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    return {(code, int(line), int(col)) for code, _, line, col in ERROR.findall(res.output)}
