# args: x=float32[128,512]
import nki
import nki.language as nl


def forever(n):
    return forever(n + 1)  # expect: err_specialisation_limit@12


@nki.jit
def values(x):
    P, F = x.shape
    a = "s" + 1  # expect: err_type_error@9
    b = [1, 2][5]  # expect: err_value_error@9
    c = {"a": 1}["b"]  # expect: err_value_error@9
    d = {1: 2}  # expect: err_type_error@10
    e = 1 / 0  # expect: err_value_error@9
    big = 65536 * 65536  # expect: err_value_error@11
    p, q = (1, 2, 3)  # expect: err_value_error@5
    r = len(3)  # expect: err_type_error@9
    s = (1).foo  # expect: err_attribute_error@9
    forever(0)
    while True:  # expect: err_specialisation_limit@5
        pass
