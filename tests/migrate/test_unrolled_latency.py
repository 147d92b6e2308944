"""A migrated kernel whose loops NKI 0.7 unrolls predicts the latency of the original: the
tiles of the unrolled iterations rotate over the slots the symbolic loops' tiles get."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkic.frontend import TensorSpec
from nkic.migrate import migrate_source, verify

ATTENTION = Path(__file__).resolve().parent / "beta1_attention.py"
S = 2048  # 16 query blocks; their score rows and probabilities together exceed SBUF


def test_a_migrated_attention_predicts_the_original_latency():
    spec = {
        "q": TensorSpec((128, S), "float32"),
        "k": TensorSpec((128, S), "float32"),
        "v": TensorSpec((S, 128), "float32"),
    }
    migrated = migrate_source(ATTENTION.read_text())
    assert "for i in range(S // 128):" in migrated.text  # unrolled under NKI 0.7
    outcome = verify(str(ATTENTION), migrated.text, "attention_rows", spec, "trn2")
    assert outcome.identical, outcome.describe()
    original, unrolled = outcome.latency_ns
    assert unrolled == pytest.approx(original, rel=0.03)
