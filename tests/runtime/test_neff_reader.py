"""The .neff reader accepts the documented container and rejects every defect in one line."""

from __future__ import annotations

import json
import struct
import zlib

import nkirt
import pytest
from neff_builder import Kernel, container, reseal, write_neff
from nkirt import NeffError


def copy_kernel() -> Kernel:
    k = Kernel("trn2", name="copy")
    src = k.input("x", "bfloat16", [128, 64])
    out = k.output("y", "bfloat16", [128, 64])
    tile = k.sbuf("t", "bfloat16", [128, 64])
    load = k.dma(k.ap(tile), k.ap(src))
    k.dma(k.ap(out), k.ap(tile), waits=[(load, 0)], queue="dma1")
    return k


def rejects(blob: bytes, fragment: str) -> None:
    with pytest.raises(NeffError) as info:
        nkirt.load(blob)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_valid_container_loads_with_parameters():
    program = nkirt.load(copy_kernel().neff())
    assert (program.kernel, program.target) == ("copy", "trn2")
    assert [(t.name, t.dtype, t.shape) for t in program.inputs] == [("x", "bfloat16", (128, 64))]
    assert [t.name for t in program.outputs] == ["y"]


def test_loads_from_a_path(tmp_path):
    path = tmp_path / "copy.neff"
    path.write_bytes(copy_kernel().neff())
    assert nkirt.load(path).kernel == "copy"
    assert nkirt.load(str(path)).kernel == "copy"


def test_missing_file_is_a_neff_error(tmp_path):
    rejects_path = tmp_path / "absent.neff"
    with pytest.raises(NeffError, match="cannot read"):
        nkirt.load(rejects_path)


def test_any_minor_version_is_accepted():
    blob = bytearray(copy_kernel().neff())
    blob[10:12] = struct.pack("<H", 7)
    assert nkirt.load(bytes(blob)).kernel == "copy"


def test_short_file():
    rejects(b"NKICNEFF\x01\x00", "too short")


def test_wrong_magic():
    rejects(write_neff(copy_kernel().program(), magic=b"NOTANEFF"), "magic")


def test_unsupported_major_version():
    rejects(write_neff(copy_kernel().program(), major=2), "major version 2")


def test_checksum_mismatch():
    blob = bytearray(copy_kernel().neff())
    blob[-1] ^= 0xFF
    rejects(bytes(blob), "checksum")


def test_section_past_end_of_file():
    blob = bytearray(copy_kernel().neff())
    struct.pack_into("<Q", blob, 48 + 16, 10**6)  # PROG length
    rejects(reseal(bytes(blob)), "outside the file")


def test_section_table_past_end_of_file():
    blob = bytearray(copy_kernel().neff())
    struct.pack_into("<I", blob, 12, 1000)
    rejects(reseal(bytes(blob)), "section table")


def test_missing_prog_section():
    rejects(container([(b"DATA", 0, b"\x00" * 8)]), "no PROG")


def test_prog_that_does_not_decompress():
    rejects(container([(b"PROG", 1, b"definitely not zlib")]), "does not decompress")


def test_prog_that_is_not_json():
    rejects(container([(b"PROG", 1, zlib.compress(b"{not json"))]), "not valid UTF-8 JSON")


def test_uncompressed_prog_is_read_per_its_flags():
    assert nkirt.load(write_neff(copy_kernel().program(), compress=False)).kernel == "copy"


def mutated(edit) -> bytes:
    program = copy_kernel().program()
    edit(program)
    return write_neff(program)


def test_unknown_tensor_id_in_an_operand():
    def edit(p):
        p["body"][0]["operands"]["src"]["tensor"] = 99

    rejects(mutated(edit), "unknown tensor id 99")


def test_unknown_tensor_id_in_inputs():
    rejects(mutated(lambda p: p["inputs"].append(42)), "unknown tensor id 42")


def test_unknown_opcode():
    def edit(p):
        p["body"][0]["op"] = "dma_teleport"

    rejects(mutated(edit), "unknown opcode 'dma_teleport'")


def test_unknown_queue():
    def edit(p):
        p["body"][0]["queue"] = "dma16"

    rejects(mutated(edit), "unknown queue 'dma16'")


def test_instruction_on_an_engine_that_cannot_run_it():
    def edit(p):
        p["body"][0]["engine"] = "vector"
        p["body"][0]["queue"] = "vector"

    rejects(mutated(edit), "cannot run on the vector engine")


def test_wait_on_unknown_instruction():
    def edit(p):
        p["body"][1]["waits"] = [[77, 0]]

    rejects(mutated(edit), "unknown instruction id 77")


def test_offset_variable_outside_any_loop():
    def edit(p):
        p["body"][0]["operands"]["src"]["offset"] = {"c": 0, "t": {"i": 64}}

    rejects(mutated(edit), "not an enclosing loop variable")


def test_missing_field():
    rejects(mutated(lambda p: p.pop("tensors")), "missing field 'tensors'")


def test_on_chip_tensor_beyond_the_partition_size():
    def edit(p):
        p["tensors"][2]["address"]["byte"] = 224 * 1024 - 64

    rejects(mutated(edit), "exceed")


def test_unknown_target():
    def edit(p):
        p["target"] = "trn9"

    rejects(mutated(edit), "unknown target")


def test_bad_loc_file_index():
    def edit(p):
        p["body"][0]["loc"][0] = 3

    rejects(mutated(edit), "file index 3")


def test_constant_tensor_reads_its_bytes_from_data():
    import numpy as np

    k = Kernel()
    values = np.arange(8, dtype=np.float32).reshape(2, 4)
    cid = k.constant("table", values)
    k.output("y", "float32", [2, 4])
    program = nkirt.load(k.neff())
    assert program.tensors[cid].data == values.tobytes()


def test_constant_outside_data_section():
    import numpy as np

    k = Kernel()
    k.constant("table", np.zeros((2, 4), np.float32))
    program = k.program()
    program["tensors"][0]["data_offset"] = 1000
    rejects(write_neff(program, k.data), "outside the DATA section")


def test_kernel_without_outputs_returns_the_parameters_it_writes():
    k = Kernel()
    x = k.input("x", "float32", [128, 4])
    k.input("unused", "float32", [128, 4])
    tile = k.sbuf("t", "float32", [128, 4])
    k.dma(k.ap(tile), k.ap(x))
    k.dma(k.ap(x), k.ap(tile), waits=[(0, 0)], queue="dma1")
    program = nkirt.load(k.neff())
    assert [t.name for t in program.outputs] == ["x"]
    assert program.output_names == ["x"]


def test_program_json_round_trips_through_the_builder():
    blob = copy_kernel().neff()
    table = struct.unpack_from("<4sIQQ", blob, 48)
    assert table[0] == b"PROG"
    assert json.loads(zlib.decompress(blob[table[2] : table[2] + table[3]]))["kernel"] == "copy"


def test_instruction_missing_an_operand_its_cost_needs():
    def edit(p):
        del p["body"][0]["operands"]["dst"]

    rejects(mutated(edit), "lacks operand 'dst'")


def test_dtype_view_that_does_not_divide_the_rows():
    def edit(p):
        p["tensors"][0]["shape"] = [128, 63]
        p["body"][0]["operands"]["src"] = {
            "tensor": 0,
            "offset": 0,
            "dtype": "float32",
            "pattern": [[1, 4]],
        }

    rejects(mutated(edit), "does not evenly reinterpret")


def test_partition_step_that_is_not_a_whole_partition():
    def edit(p):
        p["body"][0]["operands"]["dst"]["pattern"] = [[32, 128], [1, 64]]

    rejects(mutated(edit), "not a whole partition")


def test_rotate_over_a_loop_that_does_not_enclose_the_access():
    def edit(p):
        p["tensors"][2]["rotate"] = {"var": "i0", "count": 2, "stride": 128}

    rejects(mutated(edit), "rotates over loop 'i0'")


def test_rotate_phase_must_name_a_slot():
    def edit(p):
        p["tensors"][2]["rotate"] = {"var": "i0", "count": 2, "stride": 128, "phase": 2}

    rejects(mutated(edit), "phase in 0..count - 1")


def test_rotate_slots_beyond_the_partition():
    def edit(p):
        p["tensors"][2]["rotate"] = {"var": "i0", "count": 2000, "stride": 128}

    rejects(mutated(edit), "exceed")


def test_accumulate_unless_first_must_name_enclosing_loops():
    k = Kernel()
    k.output("y", "float32", [1, 1])
    w = k.sbuf("w", "bfloat16", [128, 128])
    acc = k.psum("acc", "float32", [128, 128])
    operands = {"dst": k.ap(acc), "stationary": k.ap(w), "moving": k.ap(w)}
    k.inst("nc_matmul", "tensor", operands, {"accumulate": {"unless_first": ["k"]}})
    rejects(k.neff(), "enclosing loop variables under 'unless_first'")


def test_a_dynamic_offset_must_name_an_int32_sbuf_index_operand():
    k = Kernel("trn2", name="gather")
    table = k.input("x", "float32", [300, 64])
    k.output("y", "float32", [1, 1])
    tile = k.sbuf("t", "float32", [128, 64])
    src = k.ap(table, [[64, 128], [1, 64]])
    src["dynamic"] = {"kind": "vector", "index": "src.vector_offset", "dim": 0}
    k.inst("dma_copy", "dma", {"dst": k.ap(tile), "src": src, "src.vector_offset": k.ap(tile)})
    rejects(k.neff(), "index operand 'src.vector_offset' must be an int32/uint32 SBUF tile")


def test_a_dynamic_offset_unit_must_be_a_non_negative_integer():
    k = Kernel("trn2", name="gather")
    table = k.input("x", "float32", [300, 64])
    k.output("y", "float32", [1, 1])
    tile = k.sbuf("t", "float32", [128, 64])
    idx = k.sbuf("i", "int32", [128, 1])
    src = k.ap(table, [[64, 128], [1, 64]])
    src["dynamic"] = {"kind": "vector", "index": "src.vector_offset", "dim": 0, "unit": -64}
    k.inst("dma_copy", "dma", {"dst": k.ap(tile), "src": src, "src.vector_offset": k.ap(idx)})
    rejects(k.neff(), "unit must be a non-negative integer")


def _two_cores(edit_core1=lambda doc: None, lnc: int = 2) -> bytes:
    """copy_kernel as both programs of an LNC=2 launch (core 1 shares x and y)."""
    core0 = copy_kernel().program()
    core0.update(core=0, lnc=lnc)
    core1 = copy_kernel().program()
    core1.update(core=1, lnc=lnc)
    for t in core1["tensors"]:
        if t["buffer"] in ("hbm", "shared_hbm"):
            t["shared"] = t["id"]
    edit_core1(core1)
    sections = [(b"PROG", 1, zlib.compress(json.dumps(core0).encode()))]
    sections.append((b"COR1", 1, zlib.compress(json.dumps(core1).encode())))
    return container(sections)


def test_an_lnc2_container_loads_both_cores():
    program = nkirt.load(_two_cores())
    assert (program.lnc, program.core, len(program.peers)) == (2, 0, 1)
    peer = program.peers[0]
    assert peer.core == 1 and {t.name: t.shared for t in peer.inputs} == {"x": 0}


def test_lnc_and_core_programs_must_agree():
    rejects(_two_cores(lnc=3), "declares LNC=3 but holds 2 core(s)")

    def bad_core(doc):
        doc["core"] = 5

    rejects(_two_cores(bad_core), "core 5 of LNC=2 is not valid")
    only_core0 = copy_kernel().program()
    only_core0.update(core=0, lnc=2)
    rejects(write_neff(only_core0), "declares LNC=2 but holds 1 core")

    def other_kernel(doc):
        doc["kernel"] = "other"

    rejects(_two_cores(other_kernel), "does not belong to the launch of core 0")


def test_a_shared_tensor_must_be_a_core0_hbm_tensor_of_the_same_shape():
    def to_sbuf(doc):
        doc["tensors"][0]["shared"] = 2  # core 0's tensor 2 is the SBUF tile

    rejects(_two_cores(to_sbuf), "shares no core-0 HBM tensor")

    def unknown(doc):
        doc["tensors"][0]["shared"] = 99

    rejects(_two_cores(unknown), "shares no core-0 HBM tensor")

    def other_shape(doc):
        doc["tensors"][0]["shape"] = [128, 32]
        doc["tensors"][1]["shape"] = [128, 32]

    rejects(_two_cores(other_shape), "differ in dtype or shape")


def _with_view(view) -> bytes:
    doc = copy_kernel().program()
    doc["tensors"][0]["view"] = view
    return write_neff(doc)


def test_an_input_view_must_lie_inside_its_buffer():
    ok = nkirt.load(_with_view({"shape": [64, 32], "offset": 32, "strides": [128, 1]}))
    assert ok.inputs[0].view == ((64, 32), 32, (128, 1))
    rejects(_with_view({"shape": [64, 32], "offset": 200, "strides": [128, 1]}), "outside")
    rejects(_with_view({"shape": [64, 32], "offset": 0, "strides": [1]}), "disagree")
    rejects(_with_view({"shape": [64], "offset": "0", "strides": [1]}), "offset")


@pytest.mark.parametrize(
    "fields, fragment",
    [
        ({"queues": 17}, "'queues' 17 must rotate a DMA"),
        ({"queues": 1, "stride": 1}, "'queues' 1 must rotate a DMA"),  # dma1 is not below 1
        ({"queues": 16, "stride": 16}, "'stride' must be an int"),
        ({"queues": 16, "stride": "2"}, "'stride' must be an int"),
        ({"queues": 16}, "only a DMA in static loops rotates"),
    ],
)
def test_a_rotating_dma_names_a_valid_rotation_inside_a_loop(fields, fragment):
    def edit(p):
        p["body"][1].update(fields)  # the store on dma1, outside any loop

    rejects(mutated(edit), fragment)
