"""`nki.collectives` within one LNC=2 launch: all-reduce, all-gather, reduce-scatter and
all-to-all between the launch's two cores, one tensor per call, each lowered to one
cross-core instruction of the catalogue (`nkic/ir/isa.py`)."""

from __future__ import annotations

from . import nki_api as api
from .values import Builtin, UserError

#: The one replica group a launch's own cores form.
LAUNCH_GROUP = ((0, 1),)


def replica_group(ip, call, groups=None, *args, **kwargs):
    """`ncc.ReplicaGroup(groups)`: the groups as a tuple of rank tuples."""
    try:
        return tuple(tuple(int(r) for r in g) for g in groups)
    except (TypeError, ValueError):
        raise UserError(
            "err_invalid_argument",
            f"ReplicaGroup expects lists of ranks, got {groups!r}",
            call.node,
            "ncc.ReplicaGroup([[0, 1]]) for the two cores of the launch",
        ) from None


def _one(call, what: str, tensors, name: str):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != 1:
        raise UserError(
            "err_unsupported_api",
            f"ncc.{name}: {what} must be a list of one tensor (coalesced collectives over "
            "several tensors are not supported by nkic yet)",
            call.node,
            f"call ncc.{name} once per tensor",
        )
    return tensors[0]


def _emit(ip, call, name: str, srcs, dsts, group, **attrs):
    src, dst = _one(call, "srcs", srcs, name), _one(call, "dsts", dsts, name)
    if group is not None and tuple(map(tuple, group)) != LAUNCH_GROUP:
        raise UserError(
            "err_unsupported_api",
            f"ncc.{name}: replica group {group!r}; nkic simulates collectives between the two "
            "cores of one LNC=2 launch only",
            call.node,
            "use ncc.ReplicaGroup([[0, 1]])",
        )
    values = {"dst": dst, "src": src, **{k: v for k, v in attrs.items() if v is not None}}
    api.emit_isa(ip, name, values, {k: call.node for k in values}, call)


def _all_reduce(ip, call, srcs, dsts, replica_group=None, op=None, priority=None, name=None):
    _emit(ip, call, "all_reduce", srcs, dsts, replica_group, op=op)


def _all_gather(
    ip, call, srcs, dsts, replica_group=None, collective_dim=0, priority=None, name=None
):
    _emit(ip, call, "all_gather", srcs, dsts, replica_group, collective_dim=collective_dim)


def _reduce_scatter(
    ip, call, srcs, dsts, replica_group=None, collective_dim=0, op=None, priority=None, name=None
):
    _emit(
        ip, call, "reduce_scatter", srcs, dsts, replica_group, collective_dim=collective_dim, op=op
    )


def _all_to_all(
    ip, call, srcs, dsts, replica_group=None, collective_dim=0, priority=None, name=None
):
    _emit(ip, call, "all_to_all", srcs, dsts, replica_group, collective_dim=collective_dim)


def _rank_id(ip, call, name=None):
    ip.kernel.reads_core = True
    return ip.kernel.core


def bindings() -> dict[str, object]:
    fns = {
        "all_reduce": _all_reduce,
        "all_gather": _all_gather,
        "reduce_scatter": _reduce_scatter,
        "all_to_all": _all_to_all,
        "rank_id": _rank_id,
    }
    out: dict[str, object] = {n: Builtin(f"ncc.{n}", fn, nki_api=True) for n, fn in fns.items()}
    out["ReplicaGroup"] = Builtin("ncc.ReplicaGroup", replica_group)
    return out
