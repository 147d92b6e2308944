"""Control flow: if/elif/else, conditional expressions, for over iterables, while,
break/continue/pass, for-else."""

import nki
import nki.language as nl


@nki.jit
def control(x, mode="b"):
    if mode == "a":
        r = 1
    elif mode == "b":
        r = 2
    else:
        r = 3
    assert r == 2
    total = 0
    for v in [1, 2, 3, 4, 5]:
        if v == 2:
            continue
        if v == 5:
            break
        total += v
    else:
        total = -1
    assert total == 8
    for _ in []:
        pass
    else:
        total += 100
    assert total == 108
    i, acc = 0, []
    while i < 10:
        i += 1
        if i % 3:
            continue
        acc.append(i)
    assert acc == [3, 6, 9]
    while True:
        break
    pairs = []
    for k, v in {"a": 1, "b": 2}.items():
        pairs.append(k * v)
    assert pairs == ["a", "bb"]
    for ch in "xy":
        pairs.append(ch)
    assert pairs[-2:] == ["x", "y"]
    for i in nl.static_range(3):
        total += i
    assert total == 111
    P, F = x.shape
    n_tiles = F // 128 if F % 128 == 0 else F // 128 + 1
    assert n_tiles == 2
    tiles = []
    for j in range(n_tiles):
        tiles.append(x[:, j * 128 : min(F, (j + 1) * 128)])
    assert [t.shape for t in tiles] == [(128, 128), (128, 128)]
    with nl.no_reorder():
        flag = True
    assert flag
