"""`nkic check` and `nkic explain` from the command line: every error in one run, every format."""

from __future__ import annotations

import gc
import json
import shutil
import weakref
from pathlib import Path

import pytest
from click.testing import CliRunner

from nkic.cli import cli
from nkic.passes.base import collect_cycles
from tests.deprecations import without_loop_deprecations
from tests.diagnostics.test_renderers import validate_sarif

KERNELS = Path(__file__).parent / "kernels"
FIVE = KERNELS / "five_errors.py"
ARG = ("--arg", "a=float32[128,64]")

# (code, line, column) of the five mistakes in five_errors.py
EXPECTED = [
    ("err_unexpected_keyword", 11, 33),
    ("err_undefined_name", 13, 46),
    ("err_shape_mismatch", 17, 5),
    ("err_unknown_api", 19, 43),
    ("err_invalid_argument", 21, 5),
]


def check(*args: str):
    return CliRunner().invoke(cli, ["check", *args], catch_exceptions=False)


def found(output: str) -> list[tuple[str, int, int]]:
    return sorted(
        (d["code"], d["line"], d["col"]) for d in without_loop_deprecations(json.loads(output))
    )


def test_five_different_errors_in_one_run():
    res = check(str(FIVE), *ARG, "--format", "json")
    assert res.exit_code == 1
    assert found(res.output) == sorted(EXPECTED)


def test_text_format_is_rustc_style():
    res = check(str(FIVE), *ARG)
    assert res.exit_code == 1
    text = res.output
    assert "error[err_shape_mismatch]:" in text
    assert f"--> {FIVE}:17:5" in text
    assert "help:" in text
    assert "5 error(s)" in text


def test_json_items_follow_the_schema():
    for d in json.loads(check(str(FIVE), *ARG, "--format", "json").output):
        assert set(d) >= {
            "code",
            "severity",
            "message",
            "file",
            "line",
            "col",
            "end_line",
            "end_col",
            "related",
        }
        assert d["severity"] == "error" and d["end_line"] >= d["line"]
        assert isinstance(d["related"], list)


def test_sarif_and_github_formats():
    sarif = json.loads(check(str(FIVE), *ARG, "--format", "sarif").output)
    validate_sarif(sarif)
    results = sarif["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == sorted(c for c, _, _ in EXPECTED)
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert {"startLine", "startColumn", "endLine", "endColumn"} <= set(region)
    gh = check(str(FIVE), *ARG, "--format", "github").output.strip().splitlines()
    assert len(gh) == 5 and all(line.startswith("::error file=") for line in gh)


def test_select_and_ignore():
    only = check(str(FIVE), *ARG, "--format", "json", "--select", "err_undefined_name")
    assert [c for c, _, _ in found(only.output)] == ["err_undefined_name"]
    rest = check(
        str(FIVE), *ARG, "--format", "json", "--ignore", "err_undefined_name,err_unknown_api"
    )
    assert len(found(rest.output)) == 3


def test_noqa_comment_suppresses_a_line(tmp_path):
    src = FIVE.read_text().splitlines()
    src[16] += "  # nkic: noqa[err_shape_mismatch]"
    src[10] += "  # nkic: noqa"
    f = tmp_path / "k.py"
    f.write_text("\n".join(src) + "\n")
    res = check(str(f), *ARG, "--format", "json")
    codes = [c for c, _, _ in found(res.output)]
    assert "err_shape_mismatch" not in codes and "err_unexpected_keyword" not in codes
    assert len(codes) == 3


def test_clean_kernel_exits_zero(examples):
    res = check(
        str(examples / "tensor_add.py"),
        "--arg",
        "a=float32[128,512]",
        "--arg",
        "b=float32[128,512]",
    )
    assert res.exit_code == 0, res.output
    assert "0 error(s)" in res.output


def test_usage_errors_exit_two(tmp_path):
    assert check(str(tmp_path / "missing.py")).exit_code == 2
    assert check(str(FIVE), "--format", "xml").exit_code == 2
    assert check(str(FIVE), "--arg", "nonsense").exit_code == 2


def test_several_files_in_one_run(tmp_path):
    other = tmp_path / "again.py"
    shutil.copy(FIVE, other)
    res = check(str(FIVE), str(other), *ARG, "--format", "json")
    files = {d["file"] for d in json.loads(res.output)}
    assert files == {str(FIVE), str(other)}


@pytest.mark.parametrize(
    "code", ["err_tensor_access_out_of_bound", "err_unexpected_output_dependencies"]
)
def test_explain_shows_both_examples(code):
    res = CliRunner().invoke(cli, ["explain", code])
    assert res.exit_code == 0
    assert code in res.output
    assert "Example that fails" in res.output and "Fixed" in res.output


def test_explain_unknown_code():
    res = CliRunner().invoke(cli, ["explain", "err_tensor_acces_out_of_bound"])
    assert res.exit_code == 2
    assert "err_tensor_access_out_of_bound" in res.output


def test_tile_over_128_partitions_is_a_diagnostic_not_a_crash():
    res = check(
        str(KERNELS / "too_many_partitions.py"), "--arg", "a=float32[256,64]", "--format", "json"
    )
    assert res.exit_code == 1
    assert ("err_num_partition_exceed_arch_limit", 10, 5) in found(res.output)


def test_unparsable_file_is_an_error_and_a_module_without_kernels_is_clean(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    res = check(str(bad), "--format", "json")
    assert res.exit_code == 1
    assert [d["code"] for d in json.loads(res.output)] == ["err_syntax_error"]
    helper = tmp_path / "helpers.py"
    helper.write_text("TILE = 128\n")
    assert check(str(helper)).exit_code == 0


CAPACITY = KERNELS / "capacity_and_more.py"


@pytest.mark.parametrize(
    "kernel, other",
    [
        ("with_frontend_error", ("err_tensor_access_out_of_bound", 14, 30)),
        ("with_race", ("err_unexpected_output_dependencies", 24, 9)),
    ],
)
def test_allocation_errors_show_beside_other_errors(kernel, other):
    res = check(str(CAPACITY), "-k", kernel, "--arg", "x=float32[128,512]", "--target", "trn1",
                "--format", "json")  # fmt: skip
    assert res.exit_code == 1
    big = 11 if kernel == "with_frontend_error" else 22
    assert found(res.output) == sorted([other, ("err_sbuf_capacity_exceeded", big, 11)])


def test_a_tile_beyond_the_partitions_is_not_also_reported_by_allocation():
    res = check(str(CAPACITY), "-k", "with_wide_tile", "--arg", "x=float32[128,512]",
                "--target", "trn1", "--format", "json")  # fmt: skip
    assert [d["code"] for d in json.loads(res.output)] == ["err_num_partition_exceed_arch_limit"]


def test_a_tree_is_checked_one_file_of_garbage_at_a_time(tmp_path, monkeypatch):
    """The command line runs with the cyclic collector off; checking a tree frees each file's
    cyclic garbage before the next file, so its memory is that of one file, not of the tree."""
    import nkic.cli

    for name in ("a.py", "b.py", "c.py"):
        shutil.copy(KERNELS / "log_tiles.py", tmp_path / name)
    after: list[int] = []
    monkeypatch.setattr(nkic.cli, "collect_cycles", lambda: after.append(len(after)))
    gc.disable()
    try:
        result = check(str(tmp_path))
    finally:
        gc.enable()
    assert result.exit_code == 0, result.output
    assert after == [0, 1, 2]


def test_collecting_between_files_frees_cycles_and_keeps_the_collector_off():
    class Node:
        pass

    gc.disable()
    try:
        node = Node()
        node.self = node
        alive = weakref.ref(node)
        del node
        collect_cycles()
        assert alive() is None
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()
