"""Every fenced code block of README.md and docs/*.md is executed or checked.

* `python`: run with a fresh interpreter in a scratch directory holding a copy of examples/
  and pyproject.toml (as in a checkout), so what a block writes never lands in the repository.
* `sh`: each command line is run with bash there, `.venv/bin` first on PATH; `make` targets are
  too slow for the unit tests and must carry a skip marker.
* `toml`: a `[tool.nkic]` example, loaded by nkic's config reader.
* `json`: parsed, unless it is a schema sketch (skip marker).
* `text` preceded by `<!-- doc-test: ir -->`: tile IR, parsed back by the IR parser.
* `text` preceded by `<!-- doc-test: output-of: COMMAND -->`: a sample of COMMAND's output;
  every shown line must appear in the real output with numbers and directories ignored.
* docs/diagnostics.md: its examples are the catalogue's, which
  tests/diagnostics/test_catalogue_examples.py runs through `nkic check`; here each block must
  be one of them. docs/dropin.md and the README's drop-in section install an import hook, so
  tests/dropin/test_docs.py runs them in a virtual environment of their own; here each must be
  one of the blocks it runs.

A block is skipped only with `<!-- doc-test: skip: REASON -->` on the line before its fence;
the skips are counted, so a new one is a deliberate change of SKIPPED.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nkic.codes import CODES
from nkic.config import _parse

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- doc-test: (?P<kind>[\w-]+)(?::\s*(?P<arg>.*?))? -->$")

#: Blocks deliberately not run (each with its reason in the marker).
SKIPPED = 16


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    text: str
    marker: str | None
    marker_arg: str | None

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"^```(\S*)\s*$", lines[i])
            if not m:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            marker = MARKER.match(lines[i - 1]) if i else None
            out.append(
                Block(
                    doc,
                    i + 1,
                    m.group(1),
                    "\n".join(lines[i + 1 : end]) + "\n",
                    marker and marker.group("kind"),
                    marker and marker.group("arg"),
                )
            )
            i = end + 1
    return out


ALL = blocks()


def delegated(block: Block) -> bool:
    """Blocks another test runs: the catalogue examples of docs/diagnostics.md
    (tests/diagnostics/test_catalogue_examples.py) and the drop-in blocks of docs/dropin.md and
    of the README's drop-in section, which need a fresh environment of their own
    (tests/dropin/test_docs.py)."""
    if block.file.name in ("diagnostics.md", "dropin.md"):
        return True
    from tests.dropin.test_docs import readme_section

    return block.file.name == "README.md" and block.text in readme_section()


RUN = [b for b in ALL if b.marker != "skip" and not delegated(b)]


@pytest.fixture
def scratch(tmp_path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    return tmp_path


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("NO_COLOR", None)
    return subprocess.run(["bash", "-ec", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def shell_commands(text: str) -> list[str]:
    """The command lines of a shell block: comments dropped, continuations joined."""
    commands, current = [], ""
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$", "", raw).rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        current += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            commands.append(current.strip())
            current = ""
    return commands


def normalise(line: str) -> str:
    line = re.sub(r"\S*/", "", line)  # directories
    line = re.sub(r"\d[\d,.]*", "#", line)  # numbers
    return re.sub(r"\s+", " ", line).strip()


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.id)
def test_code_block(block: Block, scratch: Path):
    if block.lang == "python":
        res = subprocess.run([sys.executable, "-c", block.text], cwd=scratch, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
        assert res.returncode == 0, f"{block.id}:\n{res.stderr}"
    elif block.lang == "sh":
        commands = shell_commands(block.text)
        assert not any(c.startswith("make ") for c in commands), "mark make blocks as skipped"
        for command in commands:
            res = shell(command, scratch)
            assert res.returncode == 0, f"{block.id}: {command}\n{res.stdout}\n{res.stderr}"
    elif block.lang == "toml":
        import tomllib

        table = tomllib.loads(block.text)["tool"]["nkic"]
        config = _parse(scratch / "pyproject.toml", table)
        assert config.args or config.select or config.target
    elif block.lang == "json":
        import json

        json.loads(block.text)
    elif block.marker == "ir":
        from nkic.ir.parser import parse_kernel
        from nkic.ir.printer import print_kernel

        kernel = parse_kernel(block.text)
        assert print_kernel(parse_kernel(print_kernel(kernel))) == print_kernel(kernel)
    elif block.marker == "output-of":
        res = shell(block.marker_arg.strip("`"), scratch)
        assert res.returncode == 0, res.stderr
        real = {normalise(line) for line in (res.stdout + res.stderr).splitlines()}
        for line in block.text.splitlines():
            if line.strip() and line.strip() != "...":
                assert normalise(line) in real, f"{block.id}: {line!r} not in\n{res.stdout}"
    else:
        pytest.fail(f"{block.id}: a ```{block.lang} block with no way to test it: add a marker")


def test_skips_are_counted_and_give_a_reason():
    skipped = [b for b in ALL if b.marker == "skip"]
    assert all(b.marker_arg for b in skipped)
    assert len(skipped) == SKIPPED, [b.id for b in skipped]


def test_diagnostics_doc_blocks_are_the_catalogue_examples():
    """test_catalogue_examples runs every catalogue example; the generated doc shows them."""
    examples = {c.bad.strip() for c in CODES.values()} | {c.good.strip() for c in CODES.values()}
    doc_blocks = [b for b in ALL if b.file.name == "diagnostics.md"]
    preamble, *rest = doc_blocks
    assert "import nki.language as nl" in preamble.text
    assert rest and all(b.text.strip() in examples for b in rest)


def test_architecture_entry_points_exist():
    import importlib

    table = (ROOT / "docs" / "architecture.md").read_text().split("| layer | package |")[1]
    table = table.split("\n\n")[0]
    names = re.findall(r"`((?:nkic|nkirt)(?:\.\w+)+)(?:\(|`| ->)", table)
    assert len(names) >= 14
    for dotted in names:
        module, _, attr = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), attr), dotted


def test_drop_in_blocks_are_the_ones_the_drop_in_doc_test_runs():
    from tests.dropin.test_docs import blocks as dropin_blocks
    from tests.dropin.test_docs import readme_section

    ran = {code for _, code in dropin_blocks((ROOT / "docs" / "dropin.md").read_text())}
    ran |= {code for _, code in dropin_blocks(readme_section())}
    mine = [b for b in ALL if delegated(b) and b.file.name != "diagnostics.md"]
    assert len(mine) >= 4
    assert all(b.text in ran for b in mine), [b.id for b in mine if b.text not in ran]
