"""Reader of the `.neff` container (docs/neff-format.md): header, checksum, sections, schema.

A `.neff` may come from anywhere, so the whole program is validated before anything runs:
sizes against `nkirt.limits`, every reference in range, names printable, the wait graph free
of deadlocks. Every defect is one `NeffError` with a one-line message.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import struct
import zlib
from math import prod
from typing import Any

from nkirt import dtypes, indirect
from nkirt import limits as fmt
from nkirt.cost import DMA_OPS, OPCODES, TENSOR_OPS
from nkirt.cost.tables import PARTITIONS, PSUM_PARTITION_BYTES, TARGETS
from nkirt.errors import NeffError, printable
from nkirt.executor import compile_program, semantics_table
from nkirt.limits import DEFAULT, Limits, format_size
from nkirt.program import QUEUES, Program, TensorInfo, count_instances
from nkirt.roles import is_output_operand

MAGIC = b"NKICNEFF"
MAJOR_VERSION = 1
HEADER = struct.Struct("<8sHHI32s")
SECTION = struct.Struct("<4sIQQ")
COMPRESSED = 1

KINDS = ("input", "output", "internal", "constant")
BUFFERS = ("hbm", "shared_hbm", "sbuf", "psum", "reg")
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
DMA_QUEUES = tuple(q for q in QUEUES if q.startswith("dma"))
LOOP_MODES = ("affine", "sequential")


#: Sections the reader uses (and CORn/DATn of LNC=2); others are skipped unread (never inflated).
KNOWN_SECTIONS = ("PROG", "DATA")
#: Largest inflated PROG section (the program JSON), 2.4 times the largest library program
#: measured: the NKI Library's blockwise_mm_bwd at H2880 B256 writes 66.2 MiB per core (124,239
#: instructions, each giving the iteration of up to eight unrolled loops around it).
MAX_PROG_BYTES = 160 << 20


def read_neff(
    source: bytes | bytearray | memoryview | str | os.PathLike, limits: Limits = DEFAULT
) -> Program:
    """Parse and validate a `.neff` (bytes or a path); any defect raises NeffError."""
    sections = _sections(read_file(source), limits)
    if "PROG" not in sections:
        raise NeffError("neff has no PROG section")
    try:
        text = sections["PROG"].decode("utf-8")
        program = _json(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise NeffError(f"PROG section is not valid UTF-8 JSON: {e}") from None
    except RecursionError:
        raise NeffError("PROG section nests JSON too deeply") from None
    main = _program(program, text, sections.get("DATA", b""), limits)
    for n in range(1, len(sections)):
        tag = f"COR{n}"
        if tag not in sections:
            break
        try:
            peer_text = sections[tag].decode("utf-8")
            doc = _json(peer_text)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise NeffError(f"{tag} section is not valid UTF-8 JSON: {e}") from None
        except RecursionError:
            raise NeffError(f"{tag} section nests JSON too deeply") from None
        main.peers.append(
            _peer(main, _program(doc, peer_text, sections.get(f"DAT{n}", b""), limits), n)
        )
    lnc = program.get("lnc", 1) if isinstance(program, dict) else 1
    if lnc != 1 + len(main.peers):
        raise NeffError(f"program declares LNC={lnc} but holds {1 + len(main.peers)} core(s)")
    return main


def _peer(main: Program, peer: Program, core: int) -> Program:
    """Check core `core`'s program against core 0's: same kernel, target and launch, and
    every shared tensor the same HBM tensor as the core-0 tensor it names."""
    launch = (main.kernel, main.target, main.lnc, core)
    if (peer.kernel, peer.target, peer.lnc, peer.core) != launch:
        raise NeffError(f"core {core}'s program does not belong to the launch of core 0")
    for t in peer.tensors.values():
        if t.shared is None:
            continue
        other = main.tensors.get(t.shared)
        if other is None or t.on_chip or other.on_chip:
            raise NeffError(f"core {core} tensor {t.id} ({t.name}) shares no core-0 HBM tensor")
        if (other.dtype, other.shape) != (t.dtype, t.shape):
            raise NeffError(
                f"core {core} tensor {t.id} ({t.name}) and the core-0 tensor it shares differ "
                "in dtype or shape"
            )
    return peer


def read_file(source) -> bytes:
    """A neff's bytes: from a regular file (never a FIFO or device), of bounded size."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        blob = bytes(source)
    else:
        path = os.fspath(source)
        try:
            # non-blocking: opening a FIFO must not wait for a writer
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as e:
            raise NeffError(f"cannot read {printable(path)}: {e.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise NeffError(f"{printable(path)} is not a regular file")
        with os.fdopen(fd, "rb") as f:
            blob = f.read(fmt.MAX_FILE_BYTES + 1)
    if len(blob) > fmt.MAX_FILE_BYTES:
        raise NeffError(f"file larger than the {format_size(fmt.MAX_FILE_BYTES)} a neff may have")
    return blob


#: A run of 16 or more digits: only an integer literal that long can leave the range (2**53
#: has 16 digits).
_LONG_DIGITS = re.compile(r"[0-9]{16,}")


def _json(text: str) -> Any:
    """A program's JSON, its integers checked: by a hook per integer only when the text has a
    long digit run that is not a fraction (the plain parse is twice as fast)."""
    for run in _LONG_DIGITS.finditer(text):
        if run.start() == 0 or text[run.start() - 1] != ".":
            return json.loads(text, parse_int=_json_int)
    return json.loads(text)


def _json_int(text: str) -> int:
    if len(text) > 17 or abs(int(text)) > fmt.MAX_INT:
        raise NeffError(f"integer {text[:20]} in the program is out of range (|n| <= 2**53)")
    return int(text)


def _inflate(tag: str, payload: bytes, cap: int) -> bytes:
    """Decompress at most `cap` bytes: a zlib bomb is refused before it is inflated."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(payload, cap + 1)
    except zlib.error as e:
        raise NeffError(f"section {tag} does not decompress: {e}") from None
    if len(out) > cap or inflater.unconsumed_tail:
        raise NeffError(f"section {tag} inflates past {format_size(cap)}")
    if not inflater.eof:
        raise NeffError(f"section {tag} does not decompress: truncated stream")
    return out


def program_sizes(source: bytes | str | os.PathLike) -> dict[str, int]:
    """Inflated bytes of each program section (`PROG`, `COR1`, ...) of a `.neff`, the size
    `MAX_PROG_BYTES` bounds; the container is checked as `read_neff` checks it, the programs
    are not parsed."""
    return {
        tag: len(payload)
        for tag, payload in _sections(read_file(source)).items()
        if tag == "PROG" or tag.startswith("COR")
    }


def _sections(blob: bytes, limits: Limits = DEFAULT) -> dict[str, bytes]:
    if len(blob) < HEADER.size:
        raise NeffError(f"file too short for a neff header ({len(blob)} < {HEADER.size} bytes)")
    magic, major, _minor, count, digest = HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise NeffError(f"not a nkic neff (magic {magic!r}, expected {MAGIC!r})")
    if major != MAJOR_VERSION:
        raise NeffError(f"unsupported neff format major version {major} (reader supports 1)")
    if hashlib.sha256(blob[HEADER.size :]).digest() != digest:
        raise NeffError("neff checksum mismatch (file corrupted or truncated)")
    table_end = HEADER.size + count * SECTION.size
    if table_end > len(blob):
        raise NeffError(f"section table of {count} sections extends past the end of the file")
    sections: dict[str, bytes] = {}
    for i in range(count):
        raw_tag, flags, offset, length = SECTION.unpack_from(blob, HEADER.size + i * SECTION.size)
        tag = printable(raw_tag.decode("ascii", errors="replace"))
        if offset < table_end or offset + length > len(blob):
            raise NeffError(
                f"section {tag} (offset {offset}, length {length}) lies outside the file "
                f"payload area [{table_end}, {len(blob)})"
            )
        if tag in sections:
            raise NeffError(f"section {tag} appears twice")
        core = tag[:3] in ("COR", "DAT") and tag[3:].isdigit()  # LNC=2: core n's program
        if tag not in KNOWN_SECTIONS and not core:
            continue
        payload = blob[offset : offset + length]
        program = tag == "PROG" or tag.startswith("COR")
        cap = MAX_PROG_BYTES if program else min(fmt.MAX_SECTION_BYTES, limits.max_memory)
        if flags & COMPRESSED:
            payload = _inflate(tag, payload, cap)
        elif len(payload) > cap:
            raise NeffError(f"section {tag} is larger than {format_size(cap)}")
        sections[tag] = payload
    return sections


def _program(doc: Any, text: str, data: bytes, limits: Limits = DEFAULT) -> Program:
    """The program of the JSON document `doc` (parsed from `text`), validated and compiled."""
    check = _Checker()
    check.is_dict(doc, "program")
    kernel = check.name(check.field(doc, "kernel", str, "program"), "kernel name")
    target = check.field(doc, "target", str, "program")
    if target not in TARGETS:
        raise NeffError(
            f"program: unknown target '{printable(target)}' (expected one of {sorted(TARGETS)})"
        )
    files = check.entries(doc, "files")
    for f in files:
        # source paths only label messages: the runtime never opens them
        check.kind(f, str, "files entry")
        check.name(f, "files entry")
    check.files = len(files)
    check.file_names = files
    tensors = {}
    for raw in check.entries(doc, "tensors"):
        tensor = _tensor(check, raw, target, data)
        if tensor.id in tensors:
            raise NeffError(f"tensor id {tensor.id} is defined twice")
        tensors[tensor.id] = tensor
    check.tensors = tensors
    inputs = [_tensor_ref(check, t, "inputs") for t in check.entries(doc, "inputs")]
    outputs = [_tensor_ref(check, t, "outputs") for t in check.entries(doc, "outputs")]
    for tensor in (*inputs, *outputs):
        # parameter and result names name files (NAME.npy) and --in options
        if tensor.name and not tensor.name.isidentifier():
            raise NeffError(
                f"tensor {tensor.id}: parameter or result name {tensor.name!r} is not a plain "
                "identifier"
            )
    check.unrolled_names = _unrolled_names(check, doc)
    body = check.field(doc, "body", list, "program")
    for node in body:
        check.node(node, frozenset())
    for inst_id, producer in check.waited:
        if producer not in check.instruction_ids:
            raise NeffError(f"instruction {inst_id} waits on unknown instruction id {producer}")
    check.deadlocks(body)
    stats = doc.get("stats", {})
    check.is_dict(stats, "program field 'stats'")
    names = _output_names(outputs)
    if not outputs:
        written = check.written_tensors
        outputs = [t for t in inputs if t.id in written]
        names = [t.name for t in outputs]
    program = Program(kernel, target, files, tensors, inputs, outputs, names, text, stats, limits)
    program.output_views = _output_views(check, doc, outputs)
    program.unrolled_names = check.unrolled_names
    program.core = doc.get("core", 0)
    program.lnc = doc.get("lnc", 1)
    if not (_is_int(program.lnc) and _is_int(program.core) and 0 <= program.core < program.lnc):
        raise NeffError(f"program: core {program.core!r} of LNC={program.lnc!r} is not valid")
    instances, program.has_dynamic_loops = count_instances(body)
    program.instance_count = instances
    if instances > limits.max_instances:
        raise NeffError(
            f"one run would issue {instances:,} instruction instances, more than the limit of "
            f"{limits.max_instances:,} (raise it with --max-instances)"
        )
    # per-instruction checks that need the access patterns and cost rules (operands present);
    # runs start from this compiled form
    program.compiled = compile_program(program, TARGETS[target], semantics_table()[0], body)
    return program


def engines_for(op: str) -> tuple[str, ...]:
    """The engines that can execute instruction `op` (ISA §4 master index)."""
    if op in DMA_OPS:
        return ("dma",)
    if op == "nc_transpose":
        return ("tensor", "vector")  # ISA §5.2: TensorE or VectorE
    if op in TENSOR_OPS:
        return ("tensor",)
    return ("vector", "scalar", "gpsimd")


def _output_names(outputs: list[TensorInfo]) -> list[str]:
    names = [t.name for t in outputs]
    if all(names) and len(set(names)) == len(names):
        return names
    return [f"out{i}" for i in range(len(outputs))]


def _tensor_ref(check: _Checker, value: Any, where: str) -> TensorInfo:
    check.kind(value, int, f"{where} entry")
    if value not in check.tensors:
        raise NeffError(f"{where} names unknown tensor id {value}")
    tensor = check.tensors[value]
    if tensor.on_chip:
        raise NeffError(f"{where} names {tensor.buffer} tensor {value}; parameters live in HBM")
    return tensor


def _tensor(check: _Checker, raw: Any, target: str, data: bytes) -> TensorInfo:
    check.is_dict(raw, "tensor")
    tid = check.field(raw, "id", int, "tensor")
    where = f"tensor {tid}"
    name = check.name(check.field(raw, "name", str, where), f"{where} name")
    kind = check.choice(raw, "kind", KINDS, where)
    buffer = check.choice(raw, "buffer", BUFFERS, where)
    dtype = check.choice(raw, "dtype", tuple(dtypes.STORAGE), where)
    shape = tuple(check.field(raw, "shape", list, where))
    if len(shape) > fmt.MAX_RANK:
        raise NeffError(f"{where} ({name}): rank {len(shape)} exceeds {fmt.MAX_RANK}")
    for d in shape:
        check.kind(d, int, f"{where} shape entry")
        if d < 1:
            raise NeffError(f"{where} ({name}): shape {list(shape)} has a non-positive dimension")
    if prod(shape) * dtypes.itemsize(dtype) > MAX_TENSOR_BYTES:
        raise NeffError(
            f"{where} ({name}): shape {list(shape)} takes more than the "
            f"{format_size(MAX_TENSOR_BYTES)} a tensor may have"
        )
    address = rotate = None
    if buffer in ("sbuf", "psum"):
        if not shape:
            raise NeffError(f"{where} ({name}): on-chip tensor needs a partition dimension")
        addr = check.field(raw, "address", dict, where)
        partition = check.field(addr, "partition", int, f"{where} address")
        byte = check.field(addr, "byte", int, f"{where} address")
        address = (partition, byte)
        limit = TARGETS[target].sbuf_partition_bytes if buffer == "sbuf" else PSUM_PARTITION_BYTES
        row = prod(shape[1:]) * dtypes.itemsize(dtype)
        if "rotate" in raw:
            spec = check.field(raw, "rotate", dict, where)
            var = check.field(spec, "var", str, f"{where} rotate")
            count = check.field(spec, "count", int, f"{where} rotate")
            stride = check.field(spec, "stride", int, f"{where} rotate")
            phase = spec.get("phase", 0)
            if count < 1 or stride < 0 or type(phase) is not int or not 0 <= phase < count:
                raise NeffError(
                    f"{where} ({name}): rotate needs count >= 1, stride >= 0 and a phase in "
                    "0..count - 1"
                )
            rotate = (var, count, stride, phase)
            row += (count - 1) * stride  # every slot must fit
        if partition < 0 or partition + shape[0] > PARTITIONS:
            raise NeffError(
                f"{where} ({name}): partitions {partition}..{partition + shape[0] - 1} "
                f"exceed the {PARTITIONS} partitions of {buffer}"
            )
        if byte < 0 or byte + row > limit:
            raise NeffError(
                f"{where} ({name}): bytes {byte}..{byte + row - 1} exceed the {limit}-byte "
                f"{buffer} partition of {target}"
            )
    constant = None
    if kind == "constant":
        offset = check.field(raw, "data_offset", int, where)
        length = check.field(raw, "data_length", int, where)
        expected = prod(shape) * dtypes.itemsize(dtype)
        if length != expected:
            raise NeffError(f"{where} ({name}): data_length {length} != {expected} bytes")
        if offset < 0 or offset + length > len(data):
            raise NeffError(f"{where} ({name}): constant data lies outside the DATA section")
        constant = data[offset : offset + length]
    shared = raw.get("shared")
    if shared is not None and not _is_int(shared):
        raise NeffError(f"{where} ({name}): shared must be a tensor id")
    view = _view(check, raw, where, name, shape) if "view" in raw else None
    spill = raw.get("spill", False)
    if not isinstance(spill, bool):
        raise NeffError(f"{where} ({name}): spill must be true or false")
    return TensorInfo(
        tid, name, kind, buffer, dtype, shape, address, constant, rotate, shared, view, spill
    )


def _unrolled_names(check: _Checker, doc: dict) -> list[tuple[str, ...]]:
    """The loop-name tuples of the iterations instructions were unrolled from: each a
    non-empty list of loop variable names, outermost first, no tuple listed twice."""
    if "unrolled_names" not in doc:
        return []
    entries = check.field(doc, "unrolled_names", list, "program")
    out: list[tuple[str, ...]] = []
    for n, entry in enumerate(entries):
        if not (isinstance(entry, list) and entry and all(isinstance(v, str) for v in entry)):
            raise NeffError(
                f"program: unrolled_names entry {n} must be a non-empty list of loop variable names"
            )
        for name in entry:
            check.name(name, f"program: unrolled_names entry {n} loop variable")
        out.append(tuple(entry))
    if len(set(out)) != len(out):
        raise NeffError("program: unrolled_names lists a tuple of loop names twice")
    return out


def _output_views(check: _Checker, doc: dict, outputs: list[TensorInfo]) -> list:
    """Per output, the view of it the kernel returned (shape, offset, strides), or None."""
    if "output_views" not in doc:
        return [None] * len(outputs)
    views = check.field(doc, "output_views", list, "program")
    if len(views) != len(outputs):
        raise NeffError("program: output_views does not have one entry per output")
    return [
        None if v is None else _view(check, {"view": v}, f"output {t.id}", t.name, t.shape)
        for v, t in zip(views, outputs)
    ]


def _view(check: _Checker, raw: dict, where: str, name: str, shape: tuple[int, ...]):
    """An input's or output's `view` (shape, offset, strides), checked to lie inside its
    buffer."""
    spec = check.field(raw, "view", dict, where)
    vshape = tuple(check.field(spec, "shape", list, f"{where} view"))
    offset = check.field(spec, "offset", int, f"{where} view")
    strides = tuple(check.field(spec, "strides", list, f"{where} view"))
    for d in (*vshape, *strides):
        check.kind(d, int, f"{where} view entry")
    if len(strides) != len(vshape) or any(d < 1 for d in vshape):
        raise NeffError(f"{where} ({name}): view shape {list(vshape)} and strides disagree")
    lo = offset + sum(min(0, (n - 1) * s) for n, s in zip(vshape, strides))
    hi = offset + sum(max(0, (n - 1) * s) for n, s in zip(vshape, strides))
    if raw.get("kind", "input") != "input" or lo < 0 or hi >= prod(shape):
        raise NeffError(f"{where} ({name}): view reaches outside its buffer")
    return vshape, offset, strides


#: Largest tensor (more than any NeuronCore's HBM).
MAX_TENSOR_BYTES = 1 << 40


class _Checker:
    """Schema checks of the program JSON; remembers ids seen so references can be resolved."""

    def __init__(self) -> None:
        self.files = 0
        self.tensors: dict[int, TensorInfo] = {}
        self.instruction_ids: set[int] = set()
        self.waited: list[tuple[int, int]] = []
        self.written_tensors: set[int] = set()
        #: per instruction id: (program-order index, queue, enclosing loops' numbers, label)
        self.placed: dict[int, tuple[int, str, tuple[int, ...], str]] = {}
        #: numbers of the loops enclosing the node being checked
        self.loops: list[int] = []
        self.loop_count = 0
        #: how many static loops enclose the node being checked (no dynamic loop may)
        self.loops_static = 0
        self.file_names: list[str] = []
        #: the program's "unrolled_names": the loop-name tuples instructions' "unrolled" name
        self.unrolled_names: list[tuple[str, ...]] = []

    def entries(self, doc: dict, key: str) -> list:
        value = self.field(doc, key, list, "program")
        if len(value) > fmt.MAX_ENTRIES:
            raise NeffError(f"program: {len(value)} {key} entries exceed {fmt.MAX_ENTRIES}")
        return value

    @staticmethod
    def name(value: str, where: str) -> str:
        """A name printed in messages: bounded, no control or format characters."""
        if len(value) > fmt.MAX_NAME:
            raise NeffError(f"{where}: longer than {fmt.MAX_NAME} characters")
        if printable(value) != value:
            raise NeffError(f"{where} '{printable(value)}' contains control characters")
        return value

    def deadlocks(self, body: list) -> None:
        """Refuse a wait for an instruction that is issued later and shares no loop with the
        waiting one: the simulator would skip it, the hardware would wait, and when the
        producer is ordered after the waiting instruction (by its queue and other waits) it
        never comes (a deadlock)."""
        order = sorted(self.placed.items(), key=lambda item: item[1][0])
        ids = [inst_id for inst_id, _ in order]
        forward: dict[int, list[int]] = {i: [] for i in ids}  # edges in program order
        last_on_queue: dict[str, int] = {}
        for inst_id, (_, queue, _, _) in order:
            if queue in last_on_queue:
                forward[last_on_queue[queue]].append(inst_id)
            last_on_queue[queue] = inst_id
        backward = []
        for consumer, producer in self.waited:
            c_index, _, c_loops, _ = self.placed[consumer]
            p_index, _, p_loops, _ = self.placed[producer]
            if p_index < c_index:
                forward[producer].append(consumer)
            elif not set(c_loops) & set(p_loops):
                backward.append((consumer, producer))
        for consumer, producer in backward:
            path = self._path(forward, consumer, producer)
            what = self._describe(consumer), self._describe(producer)
            if path:
                chain = " -> ".join(str(i) for i in path)
                raise NeffError(
                    f"deadlock: {what[0]} waits on {what[1]}, which cannot run before it "
                    f"completes (queue order and waits: {chain})"
                )
            raise NeffError(
                f"{what[0]} waits on {what[1]}, which is issued after it in no common loop"
            )

    def _describe(self, inst_id: int) -> str:
        return f"instruction {inst_id} ({self.placed[inst_id][3]})"

    @staticmethod
    def _path(edges: dict[int, list[int]], source: int, target: int) -> list[int] | None:
        parent = {source: source}
        frontier = [source]
        while frontier:
            nxt = []
            for node in frontier:
                for succ in edges[node]:
                    if succ not in parent:
                        parent[succ] = node
                        nxt.append(succ)
            frontier = nxt
        if target not in parent:
            return None
        path = [target]
        while path[-1] != source:
            path.append(parent[path[-1]])
        return path[::-1]

    @staticmethod
    def kind(value: Any, expected: type, where: str) -> None:
        if expected is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, expected)
        if not ok:
            raise NeffError(f"{where}: expected {expected.__name__}, got {json.dumps(value)[:60]}")

    def is_dict(self, value: Any, where: str) -> None:
        self.kind(value, dict, where)

    def field(self, obj: dict, key: str, expected: type, where: str) -> Any:
        if key not in obj:
            raise NeffError(f"{where}: missing field {key!r}")
        self.kind(obj[key], expected, f"{where} field {key!r}")
        return obj[key]

    def choice(self, obj: dict, key: str, allowed: tuple[str, ...], where: str) -> str:
        value = self.field(obj, key, str, where)
        if value not in allowed:
            raise NeffError(f"{where}: unknown {key} {value!r}")
        return value

    def loc(self, value: Any, where: str) -> None:
        self.kind(value, list, f"{where} loc")
        if len(value) != 5 or not all(isinstance(v, int) for v in value):
            raise NeffError(f"{where}: loc must be [file, line, col, end_line, end_col]")
        if not 0 <= value[0] < self.files:
            raise NeffError(f"{where}: loc names file index {value[0]} of {self.files} files")

    def node(self, node: Any, loop_vars: frozenset[str]) -> None:
        self.is_dict(node, "body node")
        kind = self.field(node, "kind", str, "body node")
        if kind == "inst":
            self.instruction(node, loop_vars)
        elif kind == "loop":
            self.loop(node, loop_vars)
        elif kind == "dynloop":
            self.dynloop(node, loop_vars)
        else:
            raise NeffError(f"body node: unknown kind {kind!r}")

    def loop(self, node: dict, loop_vars: frozenset[str]) -> None:
        var = self.name(self.field(node, "var", str, "loop"), "loop variable")
        where = f"loop {var}"
        if len(loop_vars) >= fmt.MAX_DEPTH:
            raise NeffError(f"{where}: loops nest deeper than {fmt.MAX_DEPTH}")
        for key in ("start", "stop", "step"):
            self.field(node, key, int, where)
        if node["step"] <= 0:
            raise NeffError(f"{where}: step {node['step']} must be positive")
        self.choice(node, "mode", LOOP_MODES, where)
        if "name" in node:
            self.field(node, "name", str, where)
        self.loc(node.get("loc"), where)
        if var in loop_vars:
            raise NeffError(f"{where}: shadows an enclosing loop variable")
        self.loop_count += 1
        self.loops.append(self.loop_count)
        self.loops_static += 1
        for child in self.field(node, "body", list, where):
            self.node(child, loop_vars | {var})
        self.loops_static -= 1
        self.loops.pop()

    def register(self, value: Any, where: str) -> None:
        tensor = self.tensors.get(value) if isinstance(value, int) else None
        if tensor is None or tensor.buffer != "reg":
            raise NeffError(f"{where}: {json.dumps(value)[:40]} is not a register tensor")

    def dynloop(self, node: dict, loop_vars: frozenset[str]) -> None:
        """A loop whose trip count is read from registers at run time (docs/neff-format.md)."""
        var = self.name(self.field(node, "var", str, "dynamic loop"), "loop variable")
        where = f"dynamic loop {var}"
        if len(loop_vars) >= fmt.MAX_DEPTH:
            raise NeffError(f"{where}: loops nest deeper than {fmt.MAX_DEPTH}")
        if self.loops_static:
            raise NeffError(f"{where}: inside a static loop")
        kind = self.choice(node, "loop", ("for", "while"), where)
        if kind == "for":
            for key in ("start", "stop"):
                bound = self.field(node, key, dict, where)
                if "reg" in bound:
                    self.register(bound["reg"], f"{where} {key}")
                elif not _is_int(bound.get("imm")):
                    raise NeffError(f"{where}: {key} must be {{'imm': int}} or {{'reg': id}}")
            if self.field(node, "step", int, where) <= 0:
                raise NeffError(f"{where}: step {node['step']} must be positive")
            if "counter" in node:
                self.register(node["counter"], f"{where} counter")
        else:
            self.register(self.field(node, "cond", int, where), f"{where} cond")
        if "name" in node:
            self.name(self.field(node, "name", str, where), f"{where} name")
        self.loc(node.get("loc"), where)
        if var in loop_vars:
            raise NeffError(f"{where}: shadows an enclosing loop variable")
        self.loop_count += 1
        self.loops.append(self.loop_count)
        for child in self.field(node, "body", list, where):
            self.node(child, loop_vars | {var})
        self.loops.pop()

    def instruction(self, node: dict, loop_vars: frozenset[str]) -> None:
        inst_id = self.field(node, "id", int, "instruction")
        where = f"instruction {inst_id}"
        if inst_id in self.instruction_ids:
            raise NeffError(f"{where}: id used twice")
        self.instruction_ids.add(inst_id)
        op = self.field(node, "op", str, where)
        if op not in OPCODES:
            raise NeffError(f"{where}: unknown opcode '{printable(op)}'")
        where = f"instruction {inst_id} ({op})"
        engine = self.choice(node, "engine", ENGINES, where)
        if engine not in engines_for(op):
            raise NeffError(f"{where}: {op} cannot run on the {engine} engine")
        queue = self.field(node, "queue", str, where)
        allowed = DMA_QUEUES if engine == "dma" else (engine,)
        if queue not in allowed:
            raise NeffError(f"{where}: unknown queue '{printable(queue)}' for the {engine} engine")
        if "queues" in node:
            queues = self.field(node, "queues", int, where)
            if engine != "dma" or not int(queue[3:]) < queues <= len(DMA_QUEUES):
                raise NeffError(
                    f"{where}: 'queues' {queues} must rotate a DMA over dma0..dma<queues - 1> "
                    f"(at most {len(DMA_QUEUES)}) starting at its queue"
                )
            stride = node.get("stride", 1)
            if not (_is_int(stride) and 0 < stride < queues) and not _is_affine(stride, loop_vars):
                raise NeffError(
                    f"{where}: 'stride' must be an int in 1..queues - 1 or an affine "
                    "{'c': int, 't': {loop_var: int}} of enclosing loop variables"
                )
            if not self.loops_static or len(self.loops) != self.loops_static:
                raise NeffError(f"{where}: only a DMA in static loops rotates over queues")
        self.loc(node.get("loc"), where)
        loc = node["loc"]
        label = f"{op} at {self.file_names[loc[0]]}:{loc[1]}"
        self.placed[inst_id] = (len(self.placed), queue, tuple(self.loops), label)
        stack = node.get("stack", [])
        self.kind(stack, list, f"{where} stack")
        for frame in stack:
            self.loc(frame, f"{where} stack")
        if "unrolled" in node:
            self.unrolled(node["unrolled"], where)
        attrs = node.get("attrs", {})
        self.is_dict(attrs, f"{where} attrs")
        accumulate = attrs.get("accumulate")
        if isinstance(accumulate, dict):
            first = accumulate.get("unless_first")
            if not isinstance(first, list) or not all(
                isinstance(v, str) and v in loop_vars for v in first
            ):
                raise NeffError(
                    f"{where}: accumulate {json.dumps(accumulate)} must list enclosing loop "
                    "variables under 'unless_first'"
                )
        operands = self.field(node, "operands", dict, where)
        for name, operand in operands.items():
            self.operand(operand, f"{where} operand {name!r}", loop_vars)
            if is_output_operand(name) and "tensor" in operand:
                self.written_tensors.add(operand["tensor"])
        for name, operand in operands.items():
            if "dynamic" in operand:
                self.dynamic(op, operands, operand, f"{where} operand {name!r}")
        waits = node.get("waits", [])
        self.kind(waits, list, f"{where} waits")
        for wait in waits:
            if (
                not isinstance(wait, list)
                or len(wait) != 2
                or not _is_int(wait[0])
                or not ((_is_int(wait[1]) and wait[1] >= 0) or _is_affine_skip(wait[1], loop_vars))
            ):
                raise NeffError(
                    f"{where}: wait {wait!r} must be [producer_id, skip >= 0] (skip may be an "
                    "affine {'c': int, 't': {loop_var: int}} of enclosing loop variables, "
                    "with 'clamp': true to wait for the newest instance where it is negative)"
                )
            self.waited.append((inst_id, wait[0]))

    def unrolled(self, unrolled: Any, where: str) -> None:
        """An instruction's unrolled iteration: an entry of "unrolled_names", then one int
        per name in it."""
        if not (
            isinstance(unrolled, list)
            and unrolled
            and all(_is_int(v) for v in unrolled)
            and 0 <= unrolled[0] < len(self.unrolled_names)
        ):
            raise NeffError(
                f"{where}: 'unrolled' must be [index into unrolled_names, one int per name] "
                f"(the program has {len(self.unrolled_names)} unrolled_names entries)"
            )
        names = self.unrolled_names[unrolled[0]]
        if len(unrolled) != 1 + len(names):
            raise NeffError(
                f"{where}: 'unrolled' gives {len(unrolled) - 1} values for the "
                f"{len(names)} loop names of unrolled_names entry {unrolled[0]}"
            )

    def dynamic(self, op: str, operands: dict, operand: dict, where: str) -> None:
        """A runtime offset: a DMA operand on a tensor off chip, indexed by another operand of
        the instruction, an int32/uint32 SBUF tile of one column (docs/neff-format.md)."""
        dyn = operand["dynamic"]
        self.is_dict(dyn, f"{where} dynamic")
        kind = self.choice(dyn, "kind", ("vector", "scalar", "indirect"), f"{where} dynamic")
        if kind == "indirect":
            indirect.check_operand(op, operands, operand, self.tensors, where)
            return
        index = self.field(dyn, "index", str, f"{where} dynamic")
        dim = self.field(dyn, "dim", int, f"{where} dynamic")
        unit = dyn.get("unit", 0)
        if not isinstance(unit, int) or isinstance(unit, bool) or unit < 0:
            raise NeffError(f"{where} dynamic: unit must be a non-negative integer")
        if op not in ("dma_copy", "dma_compute", "dma_transpose"):
            raise NeffError(
                f"{where}: only dma_copy, dma_compute and dma_transpose operands may have a "
                "dynamic offset"
            )
        tensor = self.tensors[operand["tensor"]]
        rank = len(tensor.shape) if "unit" not in dyn else dim + 1  # with a unit: any view's dim
        if tensor.on_chip or not 0 <= dim < rank or (kind == "vector" and dim):
            raise NeffError(f"{where}: a {kind} offset needs an off-chip tensor and a valid dim")
        ix = operands.get(index)
        ix_tensor = (
            self.tensors.get(ix["tensor"]) if isinstance(ix, dict) and "pattern" in ix else None
        )
        if (
            ix_tensor is None
            or ix_tensor.buffer not in (("sbuf", "reg") if kind == "scalar" else ("sbuf",))
            or ix.get("dtype", ix_tensor.dtype)
            not in (
                ("int32", "uint32", "int64") if ix_tensor.buffer == "reg" else ("int32", "uint32")
            )
            or "dynamic" in ix
        ):
            raise NeffError(
                f"{where}: index operand {index!r} must be an int32/uint32 SBUF tile"
                + (" or a register" if kind == "scalar" else "")
            )
        rows = operand["pattern"][0][1] if kind == "vector" else 1
        if [pair[1] for pair in ix["pattern"]][0] != rows:
            raise NeffError(f"{where}: index operand {index!r} needs {rows} partitions")

    def operand(self, operand: Any, where: str, loop_vars: frozenset[str]) -> None:
        self.is_dict(operand, where)
        if "imm" in operand:
            if not isinstance(operand["imm"], (int, float, str, bool)):
                raise NeffError(f"{where}: immediate must be a number, bool or string")
            return
        tid = self.field(operand, "tensor", int, where)
        if tid not in self.tensors:
            raise NeffError(f"{where}: unknown tensor id {tid}")
        offset = operand.get("offset", 0)
        if isinstance(offset, dict):
            self.field(offset, "c", int, f"{where} offset")
            terms = self.field(offset, "t", dict, f"{where} offset")
            for var, coeff in terms.items():
                self.kind(coeff, int, f"{where} offset coefficient")
                if var not in loop_vars:
                    raise NeffError(f"{where}: offset uses {var!r}, not an enclosing loop variable")
        else:
            self.kind(offset, int, f"{where} offset")
        pattern = self.field(operand, "pattern", list, where)
        if not pattern:
            raise NeffError(f"{where}: empty access pattern")
        for pair in pattern:
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
                or pair[1] < 1
            ):
                raise NeffError(f"{where}: pattern entry {pair!r} must be [step, num >= 1]")
        if "dtype" in operand and (
            not isinstance(operand["dtype"], str) or operand["dtype"] not in dtypes.STORAGE
        ):
            raise NeffError(f"{where}: unknown dtype '{printable(str(operand['dtype']))}'")
        tensor = self.tensors[tid]
        if tensor.rotate is not None and tensor.rotate[0] not in loop_vars:
            raise NeffError(
                f"{where}: {tensor.name} rotates over loop {tensor.rotate[0]!r}, "
                "which does not enclose this access"
            )
        itemsize = dtypes.itemsize(operand.get("dtype", tensor.dtype))
        last = tensor.shape[-1] if tensor.shape else 1
        row_bytes = tensor.partition_bytes if tensor.on_chip else last * tensor.itemsize
        if row_bytes % itemsize:
            raise NeffError(
                f"{where}: {operand['dtype']} does not evenly reinterpret {tensor.dtype} rows"
            )
        step, num = pattern[0]
        if tensor.on_chip and num > 1 and step % (row_bytes // itemsize):
            raise NeffError(f"{where}: partition step {step} is not a whole partition")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_affine(value: Any, loop_vars: frozenset[str]) -> bool:
    """An affine `{"c": int, "t": {var: int}}` over enclosing loop variables."""
    return (
        isinstance(value, dict)
        and set(value) <= {"c", "t"}
        and _is_int(value.get("c", 0))
        and isinstance(value.get("t", {}), dict)
        and all(var in loop_vars and _is_int(k) for var, k in value.get("t", {}).items())
    )


def _is_affine_skip(value: Any, loop_vars: frozenset[str]) -> bool:
    """A per-iteration skip `{"c": int, "t": {var: int}}` over enclosing loop variables
    (`"clamp": true`: a negative value waits for the newest instance)."""
    return (
        isinstance(value, dict)
        and set(value) <= {"c", "t", "clamp"}
        and value.get("clamp", True) is True
        and _is_int(value.get("c", 0))
        and isinstance(value.get("t", {}), dict)
        and all(var in loop_vars and _is_int(k) for var, k in value.get("t", {}).items())
    )
