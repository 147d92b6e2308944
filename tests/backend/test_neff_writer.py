"""write_neff: the byte layout, checksum and program JSON of docs/neff-format.md."""

from __future__ import annotations

import hashlib
import json
import struct
import zlib

import numpy as np
import pytest

from nkic.backend.asm import emit_asm
from nkic.backend.driver import compile_kernel
from nkic.backend.neff import write_neff
from nkic.diagnostics import CompileError
from nkic.ir.core import Alloc
from nkic.passes.base import PassContext

from .irkit import at, blocked_matmul, kernel, lowered

PARAMS = '  param %a : hbm bfloat16[128, 2048] "a" @0:1:1-1:10\n'


def body(trips: int = 4) -> str:
    return f"""
  %o = alloc shared_hbm float32[128, 2048] "out" output
  %p = alloc psum float32[128, 512] "acc"
  %w = alloc sbuf bfloat16[128, 128] "w"
  memset(dst=%w[0; [128, 128], [1, 128]]) {{value=0.0}} {at(3)}
  for $i = 0 to {trips} step 1 affine {at(4)} {{
    %t = alloc sbuf bfloat16[128, 512] "t"
    dma_copy(dst=%t[0; [512, 128], [1, 512]], src=%a[512*$i; [2048, 128], [1, 512]]) {{}} {at(5)}
    nc_matmul(dst=%p[0; [512, 128], [1, 512]], stationary=%w[0; [128, 128], [1, 128]], moving=%t[0; [512, 128], [1, 512]]) {{}} @0:6:5-6:30 via [0:20:1-20:9]
  }}
  %r = alloc sbuf float32[128, 512] "r"
  tensor_copy(dst=%r[0; [512, 128], [1, 512]], src=%p[0; [512, 128], [1, 512]]) {{}} {at(8)}
  dma_copy(dst=%o[0; [2048, 128], [1, 512]], src=%r[0; [512, 128], [1, 512]]) {{}} {at(9)}"""


def unpack(blob: bytes):
    magic, major, minor, n, digest = struct.unpack_from("<8sHHI32s", blob)
    sections = {}
    for i in range(n):
        tag, flags, off, length = struct.unpack_from("<4sIQQ", blob, 48 + 24 * i)
        payload = blob[off : off + length]
        sections[tag] = zlib.decompress(payload) if flags & 1 else payload
    return magic, major, minor, digest, sections


def program(blob: bytes) -> dict:
    return json.loads(unpack(blob)[4][b"PROG"])


def test_header_checksum_and_sections():
    blob = write_neff(lowered(body(), PARAMS, "%o"))
    magic, major, minor, digest, sections = unpack(blob)
    assert (magic, major, minor) == (b"NKICNEFF", 1, 2)
    assert digest == hashlib.sha256(blob[48:]).digest()
    assert list(sections) == [b"PROG"]
    tag, flags, off, length = struct.unpack_from("<4sIQQ", blob, 48)
    assert off == 48 + 24 and off + length == len(blob)


def test_one_corrupted_byte_changes_the_checksum():
    blob = bytearray(write_neff(lowered(body(), PARAMS, "%o")))
    stored = bytes(blob[16:48])
    blob[-1] ^= 0x01
    assert hashlib.sha256(bytes(blob[48:])).digest() != stored


def test_program_json():
    doc = program(write_neff(lowered(body(), PARAMS, "%o")))
    assert doc["kernel"] == "k" and doc["target"] == "trn2" and doc["files"] == ["kernel.py"]
    names = {t["name"]: t for t in doc["tensors"]}
    assert doc["inputs"] == [names["a"]["id"]] and doc["outputs"] == [names["out"]["id"]]
    assert names["t"]["address"]["partition"] == 0
    assert names["t"]["rotate"] == {"var": "i", "count": 4, "stride": 1024}
    assert names["acc"]["buffer"] == "psum" and names["acc"]["address"]["byte"] % 2048 == 0
    assert "address" not in names["a"]
    memset, loop, copy, store = doc["body"]
    assert loop["kind"] == "loop" and (loop["var"], loop["start"], loop["stop"]) == ("i", 0, 4)
    assert loop["loc"] == [0, 4, 5, 4, 40]
    load, mm = loop["body"]
    assert load["queue"].startswith("dma") and load["engine"] == "dma"
    assert load["operands"]["src"]["offset"] == {"c": 0, "t": {"i": 512}}
    assert load["operands"]["dst"]["offset"] == 0
    assert mm["attrs"]["accumulate"] == {"unless_first": ["i"]}
    assert mm["operands"]["moving"]["dtype"] == "bfloat16"
    assert mm["loc"] == [0, 6, 5, 6, 30] and mm["stack"] == [[0, 20, 1, 20, 9]]
    assert [mm["id"] for mm in (memset, load, mm, copy, store)] == [0, 1, 2, 3, 4]
    assert [1, 0] in mm["waits"] and [0, 0] in mm["waits"]
    assert copy["waits"] == [[2, 0]]  # the wait on #1 (r may reuse t's bytes) is implied
    assert doc["stats"]["instructions"] == 5 and doc["stats"]["loops"] == 1


def test_neff_size_does_not_grow_with_trip_counts():
    # the loop re-reads one block (an offset moving with $i would pass 2^31 elements)
    wide = PARAMS.replace("2048]", "8192]")
    small = write_neff(
        lowered(body(4).replace("2048]", "8192]").replace("512*$i", "0"), wide, "%o")
    )
    big = write_neff(
        lowered(body(10**9).replace("2048]", "8192]").replace("512*$i", "0"), wide, "%o")
    )
    assert abs(len(big) - len(small)) < 16


def test_constants_go_to_the_data_section():
    k = lowered(body(), PARAMS, "%o")
    c = k.body[0].result
    c.kind, c.data = "constant", np.arange(128 * 2048, dtype=np.float32).tobytes()
    sections = unpack(write_neff(k))[4]
    doc = json.loads(sections[b"PROG"])
    t = next(t for t in doc["tensors"] if t["kind"] == "constant")
    raw = sections[b"DATA"][t["data_offset"] : t["data_offset"] + t["data_length"]]
    assert raw == c.data


def test_instructions_without_a_source_file_get_a_placeholder_file():
    k = lowered(body().replace(at(3), ""), PARAMS, "%o")
    doc = program(write_neff(k))
    assert doc["files"] == ["kernel.py", "<unknown>"]
    assert doc["body"][0]["loc"][0] == 1


def test_compile_kernel_runs_the_pipeline():
    k = kernel(body(), PARAMS, "%o")
    blob = compile_kernel(k, PassContext("trn2"))
    assert program(blob)["stats"]["instructions"] == 5
    assert all(
        isinstance(op.result.address, tuple)
        for op in k.body
        if isinstance(op, Alloc) and op.result.on_chip
    )


def test_compile_kernel_raises_with_diagnostics():
    k = kernel(body().replace("512*$i;", "512*$i + 2048;"), PARAMS, "%o")
    with pytest.raises(CompileError) as e:
        compile_kernel(k, PassContext("trn2"))
    assert "err_tensor_access_out_of_bound" in [d.code for d in e.value.diagnostics]


def test_runtime_reader_accepts_the_file():
    neff = pytest.importorskip("nkirt.neff")
    prog = neff.read_neff(write_neff(lowered(body(), PARAMS, "%o")))
    assert prog.kernel == "k" and [t.name for t in prog.outputs] == ["out"]


def test_assembly_listing_has_one_stream_per_queue():
    text = emit_asm(lowered(body(), PARAMS, "%o"))
    assert "queue tensor:" in text and "queue vector:" in text and "queue dma0:" in text
    tensor_part = text.split("queue tensor:")[1].split("queue ")[0]
    assert "for $i = 0 to 4 step 1 affine {" in tensor_part
    line = next(ln for ln in tensor_part.splitlines() if "nc_matmul" in ln)
    assert line.strip().startswith("#2 nc_matmul(")
    assert "wait #0@vector #1@dma0" in line or "wait #1@dma0 #0@vector" in line or "#1@dma0" in line
    assert line.endswith("; kernel.py:6 <- kernel.py:20")
    assert "'t' sbuf bfloat16[128, 512] internal at partition 0 byte" in text


def test_per_iteration_skips_are_affine_offsets():
    params, blocked = blocked_matmul(kt=4)
    blob = write_neff(lowered(blocked, params, "%o"))
    load_rhs = program(blob)["body"][0]["body"][1]["body"][0]["body"][0]["body"][0]
    assert load_rhs["op"] == "dma_copy"
    assert load_rhs["waits"] == [[2, {"c": 7, "t": {"bn": -4, "k2": -1}}]]
    neff = pytest.importorskip("nkirt.neff")
    neff.read_neff(blob)


def test_assembly_prints_per_iteration_skips():
    params, blocked = blocked_matmul(kt=4)
    text = emit_asm(lowered(blocked, params, "%o"))
    assert "wait #2@tensor~(7 - 4*$bn - $k2)" in text
    assert "#2 nc_matmul(" in text and "~(7 - 4*$bm2 - $k3)" in text


def test_unallocated_kernels_are_refused():
    with pytest.raises(ValueError, match="needs an allocated kernel"):
        write_neff(kernel(body(), PARAMS, "%o"))


def test_output_is_deterministic():
    a = write_neff(lowered(body(), PARAMS, "%o"))
    b = write_neff(lowered(body(), PARAMS, "%o"))
    assert a == b
