"""Missing semaphores are found by happens-before, whatever the simulated timing.

Each wait of the example kernels is removed in turn. A brute-force oracle, independent of the
runtime, enumerates every instruction instance with its byte footprint and decides whether
the removal leaves two conflicting accesses on different queues unordered (reachability in the
graph of instance starts and completions: a queue starts its instances in order and completes
them in order; a wait orders the producer's completion before the consumer's start). The
runtime must report exactly those removals, naming both instructions and the tensor.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nkirt
import pytest
from neff_builder import read_program, write_neff

import nkic
from nkic.frontend import TensorSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "uint32": 4, "int8": 1}

CASES = {
    "tensor_add": {"a": TensorSpec((128, 256), "float32"), "b": TensorSpec((128, 256), "float32")},
    "tiled_add": {"a": TensorSpec((384, 256), "float32"), "b": TensorSpec((384, 256), "float32")},
    "matmul_tiled": {
        "lhsT": TensorSpec((256, 128), "bfloat16"),
        "rhs": TensorSpec((256, 1024), "bfloat16"),
    },
    "matmul_hoisted": {
        "lhsT": TensorSpec((256, 256), "bfloat16"),
        "rhs": TensorSpec((256, 1024), "bfloat16"),
    },
    "matmul_blocked": {
        "lhsT": TensorSpec((256, 256), "bfloat16"),
        "rhs": TensorSpec((256, 1024), "bfloat16"),
    },
    "softmax": {"x": TensorSpec((256, 128), "float32")},
}


def _written(name: str) -> bool:
    return name in ("dst", "reduce_res") or name.startswith("dst_") or name.endswith("_dst")


def _footprint(program: dict, operand: dict, env: dict, executions: dict) -> dict:
    """{(memory, partition): [(first byte, end byte), ...]} of an operand instance."""
    tensor = program["tensors"][operand["tensor"]]
    size = ITEMSIZE[operand.get("dtype", tensor["dtype"])]
    offset = operand.get("offset", 0)
    if isinstance(offset, dict):
        offset = offset["c"] + sum(k * env[v] for v, k in offset["t"].items())
    *outer, (step, num) = operand["pattern"]
    starts = [offset]
    for s, n in outer:
        starts = [e + k * s for e in starts for k in range(n)]
    if step == 1:  # contiguous innermost runs
        runs = [(e * size, (e + num) * size) for e in starts]
    else:
        runs = [
            ((e + k * step) * size, (e + k * step + 1) * size) for e in starts for k in range(num)
        ]
    out: dict = {}
    if tensor["buffer"] in ("hbm", "shared_hbm"):
        out[(tensor["id"], 0)] = runs
        return out
    row = ITEMSIZE[tensor["dtype"]]
    for d in tensor["shape"][1:]:
        row *= d
    base = tensor["address"]["byte"]
    if "rotate" in tensor:
        spec = tensor["rotate"]
        slot = (executions[spec["var"]] + spec.get("phase", 0)) % spec["count"]
        base += slot * spec["stride"]
    for lo, hi in runs:
        while lo < hi:  # split at partition boundaries
            partition, col = divmod(lo, row)
            length = min(hi - lo, row - col)
            key = (tensor["buffer"], tensor["address"]["partition"] + partition)
            out.setdefault(key, []).append((base + col, base + col + length))
            lo += length
    return out


def _merge(into: dict, footprint: dict) -> None:
    for key, runs in footprint.items():
        into.setdefault(key, []).extend(runs)


def _overlap(a: dict, b: dict) -> bool:
    for key, runs in a.items():
        other = b.get(key)
        if other and any(lo < ohi and olo < hi for lo, hi in runs for olo, ohi in other):
            return True
    return False


def unordered_pairs(program: dict) -> set[tuple[int, int]]:
    """(earlier instruction id, later instruction id) of conflicting instance pairs on
    different queues that no chain of queue order and waits orders."""
    instances = []  # (inst id, queue, reads, writes, waited instance indices)
    issued: dict[int, list[int]] = {}
    # a waiter on a DMA rotating over queues waits for every earlier instance of it too
    rotating = {n["id"] for n in instructions(program["body"]) if n.get("queues", 1) > 1}
    executions: dict[str, int] = {}
    counts: dict[str, int] = {}

    def walk(nodes, env):
        for node in nodes:
            if node["kind"] == "loop":
                var = node["var"]
                for value in range(node["start"], node["stop"], node["step"]):
                    executions[var] = counts.get(var, 0)
                    counts[var] = executions[var] + 1
                    walk(node["body"], {**env, var: value})
                continue
            reads, writes = {}, {}
            for name, operand in node["operands"].items():
                if "imm" in operand:
                    continue
                footprint = _footprint(program, operand, env, executions)
                _merge(writes if _written(name) else reads, footprint)
            waited = []
            for producer, skip in node.get("waits", []):
                if isinstance(skip, dict):
                    skip = skip.get("c", 0) + sum(k * env[v] for v, k in skip["t"].items())
                history = issued.get(producer, [])
                if len(history) > skip:
                    reach = history[: len(history) - skip]
                    waited += reach if producer in rotating else reach[-1:]
            queue = node["queue"]
            if node.get("queues", 1) > 1:  # instance k on dma((first + k·stride) mod queues)
                stride = node["stride"]
                if isinstance(stride, dict):  # or dma((first + stride(loop values)) mod queues)
                    step = stride.get("c", 0) + sum(k * env[v] for v, k in stride["t"].items())
                else:
                    step = len(issued.get(node["id"], [])) * stride
                queue = f"dma{(int(queue[3:]) + step) % node['queues']}"
            issued.setdefault(node["id"], []).append(len(instances))
            instances.append((node["id"], queue, reads, writes, waited))

    walk(program["body"], {})
    # node 2n = start of instance n, 2n+1 = its completion; edges only go forward in issue
    # order, so one pass in that order computes every node's ancestors as a bit set
    last: dict[str, int] = {}
    ancestors: list[int] = []
    for n, (_, queue, _, _, waited) in enumerate(instances):
        start = 0
        if queue in last:
            start |= ancestors[2 * last[queue]] | 1 << (2 * last[queue])
        for w in waited:
            start |= ancestors[2 * w + 1] | 1 << (2 * w + 1)
        done = start | 1 << (2 * n)
        if queue in last:
            done |= ancestors[2 * last[queue] + 1] | 1 << (2 * last[queue] + 1)
        ancestors += [start, done]
        last[queue] = n
    pairs = set()
    for x, (xid, xq, xr, xw, _) in enumerate(instances):
        for y in range(x):
            yid, yq, yr, yw, _ = instances[y]
            if yq == xq or ancestors[2 * x] >> (2 * y + 1) & 1:
                continue
            if _overlap(xw, yr) or _overlap(xw, yw) or _overlap(xr, yw):
                pairs.add((yid, xid))
    return pairs


def compiled(name: str) -> dict:
    kernel = nkic.compile(str(EXAMPLES / f"{name}.py"), kernel=name, **CASES[name])
    program, data = read_program(kernel.neff)
    assert not data
    return program


def instructions(nodes):
    for node in nodes:
        if node["kind"] == "loop":
            yield from instructions(node["body"])
        else:
            yield node


def removals(program: dict):
    """(consumer id, removed wait, program without that wait) for every wait."""
    for node in instructions(program["body"]):
        for i in range(len(node.get("waits", []))):
            changed = copy.deepcopy(program)
            target = next(n for n in instructions(changed["body"]) if n["id"] == node["id"])
            removed = target["waits"].pop(i)
            yield node["id"], removed, changed


def reported(program: dict) -> str | None:
    try:
        nkirt.execute(nkirt.load(write_neff(program)), timing_only=True)
    except nkirt.RuntimeFault as fault:
        return str(fault)
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_wait_removal_that_breaks_a_dependency_is_reported(name):
    program = compiled(name)
    assert unordered_pairs(program) == set()
    assert reported(program) is None
    by_id = {n["id"]: n for n in instructions(program["body"])}
    broken = redundant = 0
    for consumer, wait, changed in removals(program):
        pairs = unordered_pairs(changed)
        fault = reported(changed)
        if not pairs:
            redundant += 1
            assert fault is None, f"wait {wait} of {consumer} is redundant, yet: {fault}"
            continue
        broken += 1
        assert fault is not None, f"removing wait {wait} of {consumer} unorders {pairs}"
        match = re.match(
            r"missing semaphore \(compiler bug\): (\w+) at \S+:(\d+).* waits for nothing on "
            r"(\w+) at \S+:(\d+) \((RAW|WAR|WAW) hazard on operand '\w+', tensor \w+",
            fault,
        )
        assert match, fault
        named = {
            (p, c)
            for p, c in pairs
            if (by_id[c]["op"], by_id[c]["loc"][1]) == (match[1], int(match[2]))
            and (by_id[p]["op"], by_id[p]["loc"][1]) == (match[3], int(match[4]))
        }
        assert named, f"{fault} names no unordered pair of {pairs}"
    assert broken > 0, (broken, redundant)
