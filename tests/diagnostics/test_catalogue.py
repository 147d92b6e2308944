"""The code catalogue: complete, explained, with kernels that parse, and its generated doc."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nkic.codes import CODES
from nkic.diagnostics import explain
from nkic.tools.gen_diagnostics_doc import DEFAULT_OUT, main, render_doc

ROOT = Path(__file__).resolve().parents[2]

OTHER_STAGES = [
    "err_unsupported_syntax", "err_undefined_name", "err_unknown_api", "err_unexpected_keyword",
    "err_missing_argument", "err_assert_failed", "err_ambiguous_tensor_truth_value",
    "err_nki_api_outside_of_nki_kernel", "err_dynamic_control_flow_not_supported",
    "err_local_variable_used_out_of_scope", "err_annotation_shape_mismatch", "nkic_internal_error",
    "err_sbuf_capacity_exceeded", "err_psum_capacity_exceeded", "err_psum_bank_violation",
    "err_tensor_access_out_of_bound",
]  # fmt: skip


def code_literals(folder: Path) -> set[str]:
    found = set()
    for path in folder.rglob("*.py"):
        found |= set(re.findall(r'"((?:err|nkic)_[a-z0-9_]+)"', path.read_text()))
    return found


def test_every_code_of_the_checks_and_other_stages_is_catalogued():
    missing = (code_literals(ROOT / "nkic" / "passes" / "checks") | set(OTHER_STAGES)) - set(CODES)
    assert not missing


def test_every_code_literal_in_nkic_is_catalogued():
    """A new diagnostic code anywhere in nkic needs an entry in nkic/codes.py."""
    assert code_literals(ROOT / "nkic") - set(CODES) == set()


@pytest.mark.parametrize("code", list(CODES))
def test_explain(code):
    text = explain(code)
    info = CODES[code]
    assert text.startswith(f"{code}: {info.title}")
    assert "Example that fails:" in text and "Fixed:" in text
    assert info.bad != info.good
    if code != "err_syntax_error":
        ast.parse(info.bad)
    ast.parse(info.good)


def test_explain_unknown_code_suggests_close_matches():
    with pytest.raises(ValueError, match="did you mean err_read_before_write"):
        explain("err_read_befor_write")
    with pytest.raises(ValueError, match="unknown diagnostic code `zzz`"):
        explain("zzz")


def test_doc_is_up_to_date():
    assert DEFAULT_OUT == ROOT / "docs" / "diagnostics.md"
    assert DEFAULT_OUT.read_text() == render_doc(), "run `python -m nkic.tools.gen_diagnostics_doc`"


def test_doc_generator_writes_file(tmp_path):
    out = tmp_path / "d.md"
    assert main([str(out)]) == 0
    text = out.read_text()
    assert all(f"### {code}" in text for code in CODES)
