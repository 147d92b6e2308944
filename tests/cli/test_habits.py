"""Command-line habits: `[tool.nkic]`, `check DIR`, noqa comments, paths as given, colour,
progress, `explain --list`, and the README's `nkic check examples/*.py`."""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from nkic.cli import cli
from nkic.codes import CODES
from nkic.progress import Progress, use_color

ROOT = Path(__file__).resolve().parents[2]
FIVE = Path(__file__).parent / "kernels" / "five_errors.py"
BIG = Path(__file__).parent / "kernels" / "too_many_partitions.py"  # needs a=float32[256,64]


def invoke(*args: str, cwd: Path | None = None):
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def codes(output: str) -> list[tuple[str, str, int]]:
    return sorted((d["code"], d["file"], d["line"]) for d in json.loads(output))


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'k'\n\n" + textwrap.dedent(table))
    (tmp_path / "kernels").mkdir()
    shutil.copy(BIG, tmp_path / "kernels" / "big.py")
    return tmp_path


# --- [tool.nkic] -------------------------------------------------------------------------------


def test_tool_nkic_args_specialise_the_kernel_and_the_command_line_wins(tmp_path):
    root = project(
        tmp_path,
        """
        [tool.nkic.args]
        "kernels/big.py::big" = { a = "float32[256,64]" }
        """,
    )
    res = invoke("check", "kernels/big.py", "--format", "json", cwd=root)
    assert ("err_num_partition_exceed_arch_limit", "kernels/big.py", 10) in codes(res.output)
    assert res.exit_code == 1
    # an --arg replaces the file's value: 64 partitions are fine
    res = invoke("check", "kernels/big.py", "--arg", "a=float32[64,64]", "--format", "json",
                 cwd=root)  # fmt: skip
    assert [c for c, _, _ in codes(res.output)] != []  # the (256, 64) tile remains
    assert "nkic_shapes_unknown" not in res.output
    # compile takes the same defaults
    res = invoke("compile", "kernels/big.py", "-o", str(tmp_path / "b.neff"), cwd=root)
    assert "err_num_partition_exceed_arch_limit" in res.output and res.exit_code == 1


def test_without_tool_nkic_args_the_kernel_is_not_specialised(tmp_path):
    root = project(tmp_path, "")
    res = invoke("check", "kernels/big.py", "--format", "json", cwd=root)
    assert [c for c, _, _ in codes(res.output)] == ["nkic_shapes_unknown"]


def test_a_plain_kernel_name_applies_in_any_file(tmp_path):
    root = project(tmp_path, '[tool.nkic.args]\nbig = { a = "float32[256,64]" }\n')
    res = invoke("check", "kernels", "--format", "json", cwd=root)
    assert "err_num_partition_exceed_arch_limit" in res.output


def test_tool_nkic_select_ignore_and_target(tmp_path):
    root = project(
        tmp_path,
        """
        [tool.nkic]
        target = "trn1"
        ignore = ["err_num_partition"]

        [tool.nkic.args]
        big = { a = "float32[256,64]" }
        """,
    )
    res = invoke("check", "kernels/big.py", "--format", "json", cwd=root)
    assert "err_num_partition_exceed_arch_limit" not in res.output
    res = invoke("check", "kernels/big.py", "--format", "json", "--ignore", "err_x", cwd=root)
    assert "err_num_partition_exceed_arch_limit" in res.output  # the command line wins


@pytest.mark.parametrize(
    "table, message",
    [
        ("[tool.nkic]\ntarget = 'trn9'\n", "target = 'trn9': expected one of trn1"),
        ("[tool.nkic]\nselct = ['err_']\n", "unknown key(s) in [tool.nkic]: selct"),
        ("[tool.nkic]\nignore = 3\n", "ignore must be a list of strings"),
        ("[tool.nkic]\nlnc = 3\n", "lnc = 3: expected 1 or 2"),
        ("[tool.nkic.args]\nbig = { a = 'float32[256' }\n", "[tool.nkic.args] big.a"),
        ("[tool.nkic\n", "not valid TOML"),
    ],
)
def test_a_malformed_tool_nkic_table_is_a_usage_error(tmp_path, table, message):
    root = project(tmp_path, table)
    res = invoke("check", "kernels/big.py", cwd=root)
    assert res.exit_code == 2
    assert message in res.output and "pyproject.toml" in res.output


# --- check DIR --------------------------------------------------------------------------------


def test_check_dir_recurses_skipping_hidden_venv_and_excluded_directories(tmp_path):
    root = project(tmp_path, '[tool.nkic]\nexclude = ["legacy", "kernels/old_*.py"]\n')
    for sub in (".hidden", ".venv/lib", "venv", "legacy", "deep/er", "__pycache__"):
        (root / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(FIVE, root / sub / "k.py")
    shutil.copy(FIVE, root / "kernels" / "old_one.py")
    (root / "kernels" / "notes.txt").write_text("not python")
    res = invoke("check", ".", "--format", "json", "--arg", "a=float32[128,64]", cwd=root)
    files = {f for _, f, _ in codes(res.output)}
    assert files == {"deep/er/k.py", "kernels/big.py"}
    # a file named on the command line is checked even when excluded
    res = invoke("check", "legacy/k.py", "--format", "json", cwd=root)
    assert {f for _, f, _ in codes(res.output)} == {"legacy/k.py"}


def test_check_of_a_missing_path_is_a_usage_error(tmp_path):
    res = invoke("check", str(tmp_path / "nowhere"))
    assert res.exit_code == 2 and "no such file or directory" in res.output


# --- noqa -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comment, silenced",
    [
        ("# noqa", True),
        ("# noqa: err_unexpected_keyword", True),
        ("# noqa: E501, err_unexpected_keyword", True),
        ("# NOQA:err_unexpected_keyword", True),
        ("# nkic: noqa", True),
        ("# nkic: noqa[err_unexpected_keyword]", True),
        ("# nkic: noqa: err_unexpected_keyword", True),
        ("# noqa: E501", False),
        ("# nkic: noqa[err_undefined_name]", False),
    ],
)
def test_noqa_forms(tmp_path, comment, silenced):
    lines = FIVE.read_text().splitlines()
    lines[10] += "  " + comment  # the line of err_unexpected_keyword
    f = tmp_path / "k.py"
    f.write_text("\n".join(lines) + "\n")
    res = invoke("check", str(f), "--arg", "a=float32[128,64]", "--format", "json")
    found = [c for c, _, _ in codes(res.output)]
    assert ("err_unexpected_keyword" not in found) == silenced
    assert len(found) == (4 if silenced else 5)


# --- paths, colour, progress, explain ----------------------------------------------------------


def test_paths_are_printed_as_given(tmp_path):
    shutil.copy(FIVE, tmp_path / "five.py")
    (tmp_path / "sub").mkdir()
    res = invoke("check", "./five.py", "--arg", "a=float32[128,64]", cwd=tmp_path)
    assert "--> ./five.py:11:33" in res.output
    res = invoke("check", "../five.py", "--arg", "a=float32[128,64]", cwd=tmp_path / "sub")
    assert "--> ../five.py:11:33" in res.output
    res = invoke("compile", "five.py", "--arg", "a=float32[128,64]", cwd=tmp_path)
    assert "--> five.py:11:33" in res.output and str(tmp_path) not in res.output


def run_on_a_terminal(*args: str, env: dict) -> str:
    """`nkic ARGS` with stdout and stderr on a pseudo-terminal; what it wrote."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "nkic", *args], stdout=follower,
                            stderr=follower, env={**os.environ, **env})  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_only_and_never_with_no_color():
    args = ("check", str(FIVE), "--arg", "a=float32[128,64]")
    clean = {"NO_COLOR": "", "FORCE_COLOR": ""}
    assert "\x1b[1;31merror[" in run_on_a_terminal(*args, env=clean)
    assert "\x1b[" not in run_on_a_terminal(*args, env={**clean, "NO_COLOR": "1"})
    piped = subprocess.run([sys.executable, "-m", "nkic", *args], capture_output=True,
                           text=True, env={**os.environ, **clean})  # fmt: skip
    assert "error[err_unexpected_keyword]" in piped.stdout and "\x1b[" not in piped.stdout


def test_use_color_follows_no_color_and_force_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert use_color(Tty()) and not use_color(io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Tty())


def test_progress_draws_on_a_terminal_and_erases_itself():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        with Progress("checking", stream, delay=0.0, period=0.01) as progress:
            progress.update("checking a.py", 1, 3)
            import time

            time.sleep(0.1)
    assert "checking a.py [1/3]" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")  # the line is erased at the end
    assert pipe.getvalue() == ""  # nothing when not a terminal


def test_progress_under_no_color_writes_no_escape_sequence(monkeypatch):
    """NO_COLOR users get the progress line too, erased with spaces instead of `ESC [K`."""

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("NO_COLOR", "1")
    tty = Tty()
    with Progress("checking", tty, delay=0.0, period=0.01) as progress:
        progress.update("checking a.py", 1, 3)
        import time

        time.sleep(0.1)
    out = tty.getvalue()
    assert "checking a.py [1/3]" in out and "\x1b" not in out
    last = out.rsplit("\r", 2)
    assert last[-1] == "" and last[-2].strip() == "" and len(last[-2]) >= len("checking a.py [1/3]")


def test_progress_stays_silent_for_quick_work():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    with Progress("compiling", tty, delay=5.0):
        pass
    assert tty.getvalue() == ""


def test_explain_list_names_every_code():
    res = invoke("explain", "--list")
    assert res.exit_code == 0
    listed = [line.split()[0] for line in res.output.splitlines()]
    assert listed == list(CODES)
    assert invoke("explain").exit_code == 2


# --- the README's command ----------------------------------------------------------------------


def test_readme_check_of_the_examples_specialises_every_kernel():
    examples = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.py"))
    res = invoke("check", *examples, "--format", "json", cwd=ROOT)
    assert res.exit_code == 0, res.output
    # no error, no "shapes unknown" note, and no deprecation: users copy the examples, so
    # they are written in the current language (NKI 0.7: `range`, not `nl.affine_range`)
    assert json.loads(res.output) == []
    # the shapes come from [tool.nkic.args]: a kernel checked for real finds shape errors
    res = invoke("check", "examples/tiled_add.py", "--arg", "a=float32[500,128]", "--format",
                 "json", cwd=ROOT)  # fmt: skip
    assert res.exit_code == 1, res.output
