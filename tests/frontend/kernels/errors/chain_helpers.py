import nki.isa as nisa


def fill(t):
    nisa.memset(dst=t, value=0.0, engine=9)


def fill_twice(t):
    fill(t)
    fill(t[:, 0:64])
