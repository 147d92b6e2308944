"""The cores of an LNC launch run concurrently and meet at cross-core instructions.

Each core's executor runs in its own thread, but only one runs at a time (a baton), so a run
is deterministic: a core runs until it reaches a cross-core instruction (`core_barrier`,
`sendrecv`), then hands the baton on. When every core has reached one, the last to arrive
performs the exchange for all (values and timing) and continues; the others continue after
it hands the baton on. Cores that reach different instructions, or a core waiting for a
peer that has finished, are run-time faults naming both sides.
"""

from __future__ import annotations

import threading

import numpy as np

from nkirt import dtypes
from nkirt.cost.collectives import V_COLLECTIVES, exchange_ns
from nkirt.dma_engines import DmaEngines
from nkirt.errors import RuntimeFault

#: How far (ns of simulated time) one core may run ahead of another before it hands over.
STEP_NS = 2000.0


class _Abort(Exception):
    """Unwinds a core's thread after another core failed."""


class Launch:
    """The executors of one launch (index = physical core) and their meeting point."""

    def __init__(self, executors: list):
        self.executors = executors
        self.cond = threading.Condition()
        self.turn = 0
        self.done: set[int] = set()
        self.arrived: dict[int, tuple] = {}
        self.meetings = 0
        #: each core's latest DMA issue time (`step`)
        self.clock = [0.0] * len(executors)
        self.error: BaseException | None = None
        #: per core, the trip count of each dynamic loop execution so far, in order
        self.dynamic: dict[int, list[tuple[str, int]]] = {}
        for core, executor in enumerate(executors):
            executor.launch, executor.core = self, core
        #: The HBM stack both cores of the launch share: every byte either core's DMAs read
        #: from or write to HBM passes it at the stack's bandwidth (cost/tables.py).
        table = executors[0].table
        self.hbm = None
        if executors[0].shared_hbm is not None:
            self.hbm = DmaEngines(lambda: min(ex.horizon() for ex in executors), count=1)
            for executor in executors:
                executor.shared_hbm = (self.hbm, table.hbm_stack_gbps)

    def trips(self, core: int, node, count: int) -> None:
        """A core finished a dynamic loop after `count` iterations. Every core of a launch
        must run the same control flow (the hardware checks that the cores' programs branch
        alike: aws-neuron-sdk issue 1388); a trip count that differs from another core's for
        the same execution of the loop is a fault."""
        mine = self.dynamic.setdefault(core, [])
        mine.append((node.where, count))
        n = len(mine) - 1
        for other, theirs in self.dynamic.items():
            if other != core and n < len(theirs) and theirs[n] != mine[n]:
                raise RuntimeFault(
                    f"control flow diverges between the cores of the LNC launch: the dynamic "
                    f"loop at {node.where} ran {count} iterations on core {core} but "
                    f"{theirs[n][1]} on core {other} (all cores must run the same trip counts)"
                )

    def run(self) -> None:
        threads = [
            threading.Thread(target=self._core, args=(core,), name=f"nkirt-core{core}")
            for core in range(len(self.executors))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error

    def _core(self, core: int) -> None:
        try:
            with self.cond:
                self._wait(lambda: self.turn == core)
            self.executors[core].run()
        except _Abort:
            return
        except BaseException as e:  # handed to the caller of run()
            with self.cond:
                if self.error is None:
                    self.error = e
                self.cond.notify_all()
            return
        with self.cond:
            self.done.add(core)
            if self.arrived:
                waiting = next(iter(self.arrived))
                self._set_error(
                    f"{self._where(waiting)} waits for core {core}, which finished the kernel "
                    "without reaching it (the cores' control flow diverged)"
                )
            self._pass(core)

    def step(self, core: int, now: float) -> None:
        """Called by a core's executor after it issues a DMA at simulated time `now`: a core
        that runs `STEP_NS` ahead of another that can still run hands it the baton, so the
        cores reserve the HBM stack they share in about time order (a fair share, not the
        first core's traffic first)."""
        self.clock[core] = now
        behind = [
            c
            for c in range(len(self.executors))
            if c != core and c not in self.done and c not in self.arrived
            and self.clock[c] < now - STEP_NS
        ]  # fmt: skip
        if not behind:
            return
        with self.cond:
            self.turn = behind[0]
            self.cond.notify_all()
            self._wait(lambda: self.turn == core)

    def _wait(self, ready) -> None:
        while not ready():
            if self.error is not None:
                raise _Abort
            self.cond.wait()
        if self.error is not None:
            raise _Abort

    def _pass(self, core: int) -> None:
        """Hand the baton to the next core that can run."""
        n = len(self.executors)
        for step in range(1, n + 1):
            other = (core + step) % n
            if other not in self.done and other not in self.arrived:
                self.turn = other
                break
        self.cond.notify_all()

    def _set_error(self, message: str) -> None:
        if self.error is None:
            self.error = RuntimeFault(message)
        self.cond.notify_all()

    def _fail(self, message: str) -> None:
        self._set_error(message)
        raise _Abort

    def _where(self, core: int) -> str:
        inst, env, _, _ = self.arrived[core]
        return f"core {core} at {inst.describe(env)}"

    def meet(self, core: int, inst, env: dict, inputs: list, outputs: list) -> None:
        """Called by a core's executor at a cross-core instruction it has issued."""
        with self.cond:
            self.arrived[core] = (inst, dict(env), inputs, outputs)
            if len(self.arrived) + len(self.done) < len(self.executors):
                meeting = self.meetings
                self._pass(core)
                self._wait(lambda: self.meetings > meeting and self.turn == core)
                return
            if self.done:
                self._fail(
                    f"{self._where(core)} waits for core {min(self.done)}, which finished the "
                    "kernel without reaching it (the cores' control flow diverged)"
                )
            self._exchange()
            self.arrived.clear()
            self.meetings += 1
            self.turn = core
            self.cond.notify_all()

    def _exchange(self) -> None:
        ops = {inst.op for inst, *_ in self.arrived.values()}
        if len(ops) > 1:
            sides = " and ".join(self._where(c) for c in sorted(self.arrived))
            self._fail(f"the cores meet at different instructions: {sides}")
        op = ops.pop()
        both = max(ex.records[-1][1] for ex in self.executors)
        prepared = any(inst.attrs.get("prepared") for inst, *_ in self.arrived.values())
        if op == "sendrecv":
            nbytes = self._sendrecv()
        elif op == "core_barrier":
            nbytes = 4
        elif op in V_COLLECTIVES:
            nbytes, setup_done = self._collective_v(op)
            both = max(both, setup_done)
        elif op in ("collective_permute", "collective_permute_reduce"):
            nbytes = self._permute(op)
        else:
            nbytes = self._collective(op)
        table = self.executors[0].table
        done = both + exchange_ns(op, nbytes, table, prepared)
        for core, (inst, *_rest) in self.arrived.items():
            self.executors[core].settle(inst, done)

    def _sendrecv(self) -> int:
        """Move each core's `src` into its receiver's `dst`; the bytes one core sends."""
        received = {}
        for core, (inst, *_) in self.arrived.items():
            to, source = inst.attrs["send_to_rank"], inst.attrs["recv_from_rank"]
            n = len(self.executors)
            if not (0 <= to < n and 0 <= source < n) or to == core or source == core:
                self._fail(
                    f"{self._where(core)} sends to rank {to} and receives from rank {source}; "
                    f"in an LNC={n} launch each must be another core (0..{n - 1})"
                )
            peer = self.arrived[source]
            if peer[0].attrs["send_to_rank"] != core:
                self._fail(
                    f"{self._where(core)} receives from core {source}, which sends to core "
                    f"{peer[0].attrs['send_to_rank']}"
                )
            received[core] = source
        nbytes = 0
        values = {}
        for core, (_, _, inputs, _) in self.arrived.items():
            ap, where = inputs[0]
            memory = self.executors[core].memory
            nbytes = int(np.prod(ap.nums)) * ap.itemsize
            if memory is not None:
                values[core] = np.array(memory.view(ap, where, writable=False))
        for core, source in received.items():
            ap, where = self.arrived[core][3][0]
            memory = self.executors[core].memory
            if memory is None:
                continue
            value = values[source]
            if value.size != int(np.prod(ap.nums)):
                self._fail(
                    f"{self._where(core)} receives {value.size} elements into a `dst` of "
                    f"{int(np.prod(ap.nums))}"
                )
            memory.view(ap, where, writable=True)[...] = dtypes.cast(
                value.reshape(ap.nums), ap.dtype
            )
            memory.mark_written(ap, where)
        return nbytes

    _REDUCE = {"add": np.add, "minimum": np.minimum, "maximum": np.maximum}

    def _collective(self, op: str) -> int:
        """An `nki.collectives` call between the cores: each core's `dst` from every core's
        `src` (reductions in fp32); the bytes one core sends to another."""
        n = len(self.executors)
        cores = sorted(self.arrived)
        first = self.arrived[cores[0]][0]
        dim = first.attrs.get("collective_dim", 0)
        srcs = []
        for core in cores:
            ap, where = self.arrived[core][2][0]
            memory = self.executors[core].memory
            if memory is None:
                srcs.append(None)
                continue
            srcs.append(dtypes.to_fp32(np.array(memory.view(ap, where, writable=False)), ap.dtype))
        src_ap = self.arrived[cores[0]][2][0][0]
        nbytes = int(np.prod(src_ap.nums)) * src_ap.itemsize
        if op in ("reduce_scatter", "all_to_all"):
            nbytes //= n
        if srcs[0] is None:  # timing only
            return nbytes
        if op in ("all_reduce", "reduce_scatter"):
            reduce_op = first.attrs.get("op")
            if reduce_op not in self._REDUCE:
                self._fail(f"{self._where(cores[0])}: op {reduce_op!r} (add, minimum or maximum)")
            total = srcs[0]
            for other in srcs[1:]:
                total = self._REDUCE[reduce_op](total, other)
        for core in cores:
            ap, where = self.arrived[core][3][0]
            try:
                if op == "all_reduce":
                    value = total
                elif op == "all_gather":
                    value = np.concatenate(srcs, axis=dim)
                elif op == "reduce_scatter":
                    value = np.split(total, n, axis=dim)[core]
                else:
                    value = np.concatenate([np.split(s, n, axis=dim)[core] for s in srcs], axis=dim)
            except (ValueError, IndexError) as e:
                self._fail(f"{self._where(core)}: the cores' tensors do not fit {op}: {e}")
            if value.shape != tuple(ap.nums):
                self._fail(
                    f"{self._where(core)}: {op} gives a result of shape {list(value.shape)} "
                    f"for a `dst` of shape {list(ap.nums)}"
                )
            memory = self.executors[core].memory
            memory.view(ap, where, writable=True)[...] = dtypes.cast(value, ap.dtype)
            memory.mark_written(ap, where)
        return nbytes

    def _operand(self, core: int, name: str, side: int = 2):
        """(ap, where) of operand `name` of the instruction `core` arrived at (side 2: inputs,
        3: outputs), or None."""
        for ap, where in self.arrived[core][side]:
            if ap.name == name:
                return ap, where
        return None

    def _metadata(self, core: int, op: str) -> tuple[np.ndarray | None, float]:
        """Core `core`'s counts and displacements (rows x ranks) and when its setup is done:
        a trigger's come from its prepare (the values it read then), a plain call's now."""
        inst = self.arrived[core][0]
        executor = self.executors[core]
        if inst.attrs.get("prepared"):
            slot = executor.prepared
            if slot is None or slot[0] != op:
                self._fail(f"{self._where(core)}: a trigger without a pending {op}_prepare")
            executor.prepared = None
            values, ready = slot[1], slot[2]
        else:
            ap, where = self._operand(core, "metadata")
            memory = executor.memory
            values = None if memory is None else np.array(memory.view(ap, where, writable=False))
            ready = 0.0
        if values is None:
            return None, ready
        ranks = len(self.executors)
        return values.reshape(-1, ranks).astype(np.int64), ready

    def _collective_v(self, op: str) -> tuple[int, float]:
        """all_to_all_v / all_gather_v over flat buffers (nki.collectives docs): sender s's
        chunk for rank d is src[send_displ : send_displ + send_count] (per destination for
        all_to_all_v, the same chunk for all with all_gather_v); it lands in d's dst at
        recv_displs[s] with has_rdispls, else at s * (dst elements / ranks); row 2 of d's
        metadata receives the counts unless recv_counts_known. The bytes the busiest core
        sends to the other, and when both setups are done."""
        cores = sorted(self.arrived)
        n = len(self.executors)
        metas, ready = {}, 0.0
        for core in cores:
            metas[core], done = self._metadata(core, op)
            ready = max(ready, done)
        first = self.arrived[cores[0]][0]
        dst_ap = self._operand(cores[0], "dst", 3)[0]
        src_ap = self._operand(cores[0], "src")[0]
        slot = int(np.prod(dst_ap.nums)) // n
        if metas[cores[0]] is None:  # timing only: the counts are unknown, a full slot each
            return slot * src_ap.itemsize, ready

        def count(s: int, d: int) -> tuple[int, int]:
            meta = metas[s]
            column = d if op == "all_to_all_v" else 0
            return int(meta[0, column]), int(meta[1, column])

        srcs, dsts = {}, {}
        for core in cores:
            memory = self.executors[core].memory
            ap, where = self._operand(core, "src")
            srcs[core] = np.array(memory.view(ap, where, writable=False)).reshape(-1)
            ap, where = self._operand(core, "dst", 3)
            dsts[core] = np.array(memory.view(ap, where, writable=False)).reshape(-1)
        has_rdispls = bool(first.attrs.get("has_rdispls"))
        sent = 0
        for s in cores:
            for d in cores:
                cnt, disp = count(s, d)
                if disp + cnt > srcs[s].size:
                    self._fail(
                        f"{self._where(s)}: sends elements {disp}..{disp + cnt - 1} of a `src` of "
                        f"{srcs[s].size} elements to rank {d}"
                    )
                at = int(metas[d][3, s]) if has_rdispls else s * slot
                if (not has_rdispls and cnt > slot) or at + cnt > dsts[d].size:
                    self._fail(
                        f"{self._where(d)}: receives {cnt} elements from rank {s} at element {at} "
                        f"of a `dst` of {dsts[d].size} elements"
                        + ("" if has_rdispls else f" (slots of {slot} elements per rank)")
                    )
                dsts[d][at : at + cnt] = srcs[s][disp : disp + cnt]
                metas[d][2, s] = cnt
                if d != s:
                    sent = max(sent, cnt)
        for core in cores:
            memory = self.executors[core].memory
            ap, where = self._operand(core, "dst", 3)
            memory.view(ap, where, writable=True)[...] = dsts[core].reshape(ap.nums)
            memory.mark_written(ap, where)
            counts = self._operand(core, "dst_counts", 3)
            if counts is not None:  # row 2 receives the counts; the other rows stay
                ap, where = counts
                now = np.array(memory.view(ap, where, writable=False)).reshape(-1, n)
                now[2] = metas[core][2]
                memory.view(ap, where, writable=True)[...] = now.reshape(ap.nums).astype(
                    ap.np_dtype
                )
                memory.mark_written(ap, where)
        return sent * src_ap.itemsize, ready

    def _permute(self, op: str) -> int:
        """collective_permute: each (source, target) pair moves the source core's `src` into
        the target core's `dst`; the reducing form sends op(src, src1). The bytes one core
        sends."""
        cores = sorted(self.arrived)
        first = self.arrived[cores[0]][0]
        flat = first.attrs.get("pairs", (0, 1, 1, 0))  # the reducing ring: the other core
        pairs = list(zip(flat[::2], flat[1::2], strict=True))
        src_ap = self._operand(cores[0], "src")[0]
        nbytes = int(np.prod(src_ap.nums)) * src_ap.itemsize
        if self.executors[cores[0]].memory is None:
            return nbytes
        sent = {}
        for core in cores:
            memory = self.executors[core].memory
            ap, where = self._operand(core, "src")
            value = dtypes.to_fp32(np.array(memory.view(ap, where, writable=False)), ap.dtype)
            if op == "collective_permute_reduce":
                ap1, where1 = self._operand(core, "src1")
                other = dtypes.to_fp32(
                    np.array(memory.view(ap1, where1, writable=False)), ap1.dtype
                )
                reduce_op = first.attrs.get("op")
                if reduce_op not in self._REDUCE:
                    self._fail(f"{self._where(core)}: op {reduce_op!r} (add, minimum or maximum)")
                value = self._REDUCE[reduce_op](value, other)
            sent[core] = value
        for source, target in pairs:
            ap, where = self._operand(target, "dst", 3)
            memory = self.executors[target].memory
            memory.view(ap, where, writable=True)[...] = dtypes.cast(
                sent[source].reshape(ap.nums), ap.dtype
            )
            memory.mark_written(ap, where)
        return nbytes
