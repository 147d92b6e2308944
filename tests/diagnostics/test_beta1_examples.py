"""The catalogue examples written in Beta 1 (`# Beta 1` first line): checked with the Beta 1
imports, which select that dialect, instead of the current ones the other examples get.
`bad` reports its code (and no other error or warning) at the line marked `# <- CODE`;
`good` reports nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic
from nkic.codes import CODES

from .test_catalogue_examples import EXEMPT

PRELUDE = (
    "import neuronxcc.nki as nki\n"
    "import neuronxcc.nki.isa as nisa\n"
    "import neuronxcc.nki.language as nl\n"
    "import neuronxcc.nki.typing as nt\n"
)

BETA1_CODES = sorted(code for code, info in CODES.items() if info.bad.startswith("# Beta 1"))


def test_the_beta1_examples_are_the_exempt_beta1_codes():
    assert BETA1_CODES
    assert {c for c, why in EXEMPT.items() if why.startswith("Beta 1 only")} == set(BETA1_CODES)


def check(tmp_path: Path, text: str) -> list:
    path = tmp_path / "kernel.py"
    path.write_text(PRELUDE + text + "\n", encoding="utf-8")
    a = np.zeros((128, 512), np.float32)
    return [d for d in nkic.check(path, a=a) if d.severity != "note"]


@pytest.mark.parametrize("code", BETA1_CODES)
def test_bad_beta1_example_reports_its_code_at_the_marked_line(code, tmp_path):
    text = CODES[code].bad
    marked = [i for i, line in enumerate(text.splitlines()) if line.endswith(f"# <- {code}")]
    assert len(marked) == 1
    diags = check(tmp_path, text)
    assert [(d.code, d.loc.line) for d in diags] == [(code, PRELUDE.count("\n") + marked[0] + 1)]
    assert diags[0].severity == CODES[code].severity and diags[0].hint


@pytest.mark.parametrize("code", BETA1_CODES)
def test_good_beta1_example_is_clean(code, tmp_path):
    assert check(tmp_path, CODES[code].good) == []
