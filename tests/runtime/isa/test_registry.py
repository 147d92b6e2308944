"""The SEMANTICS table: every NKI 0.3.0 instruction (and the 0.6 topk) registered once, with its
outputs."""

from __future__ import annotations

import dataclasses

import pytest
from nkirt.isa import SEMANTICS, Semantics, semantics

INSTRUCTIONS = """
dma_copy dma_transpose dma_compute tensor_copy memset tensor_copy_predicated nc_matmul
nc_matmul_mx nc_transpose tensor_tensor tensor_scalar scalar_tensor_tensor tensor_scalar_reduce
tensor_scalar_cumulative tensor_reduce tensor_partition_reduce tensor_tensor_scan reciprocal
exponential activation activation_reduce activate2 iota affine_select range_select select_reduce
sequence_bounds dropout bn_stats bn_aggr local_gather nc_n_gather nc_stream_shuffle max8
nc_find_index8 nc_match_replace8 nonzero_with_count quantize_mx rng rand2 set_rng_seed
rand_set_state rand_get_state register_move register_load register_store register_alu
topk
""".split()


def test_every_instruction_is_registered():
    assert sorted(INSTRUCTIONS) == sorted(SEMANTICS)


def test_entries_are_frozen_and_name_their_outputs():
    entry = SEMANTICS["activation"]
    assert isinstance(entry, Semantics)
    assert entry.outputs == ("dst", "reduce_res") and entry.reads_outputs is False
    assert SEMANTICS["nc_matmul"].reads_outputs is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.reads_outputs = True


def test_registering_twice_is_an_error():
    with pytest.raises(ValueError, match="registered twice"):
        semantics("dma_copy")(lambda ctx, ops, attrs: {})
