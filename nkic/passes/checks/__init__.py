"""Semantic checks run by `nkic check` and `nkic compile`, in order."""

from __future__ import annotations

from ..base import Pass

CHECK_PASSES: list[Pass] = []
