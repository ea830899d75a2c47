# SPDX-License-Identifier: Apache-2.0
"""The bindings benchmark in Python (see examples/kvbench.c): N puts in blocks of 10,000 via
Batch.put_many, one commit per block; N single gets; N gets via get_many in batches of 10,000.

    python3 examples/kvbench.py DIR [N]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import qmdb  # noqa: E402

BLOCK = 10000


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: kvbench.py DIR [N]")
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    keys = [b"key%013d" % i for i in range(n)]
    val = b"\xab" * 32
    qmdb.create(path)
    with qmdb.open(path) as db, qmdb.Batch() as b:
        t0 = time.perf_counter()
        h = 0
        for i in range(0, n, BLOCK):
            b.reset()
            b.put_many((k, val) for k in keys[i:i + BLOCK])
            h += 1
            db.commit(h, b)
        t_put = time.perf_counter() - t0

        t0 = time.perf_counter()
        get = db.get
        for k in keys:
            if get(k) is None:
                sys.exit("kvbench: a key is missing")
        t_get = time.perf_counter() - t0

        t0 = time.perf_counter()
        for i in range(0, n, BLOCK):
            vals = db.get_many(keys[i:i + BLOCK], cap=64)
            if None in vals:
                sys.exit("kvbench: a key is missing")
        t_many = time.perf_counter() - t0
    print(f"lang=python n={n} put_commit_ops_s={n / t_put:.0f} get_ops_s={n / t_get:.0f} "
          f"get_many_ops_s={n / t_many:.0f}")


if __name__ == "__main__":
    main()
