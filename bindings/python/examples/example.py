# SPDX-License-Identifier: Apache-2.0
"""A tour of the Python binding: create, commit a block, read, prove and verify.

    python3 examples/example.py /tmp/qmdb-py-example
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import qmdb  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else "qmdb-py-example"
qmdb.create(path)
with qmdb.open(path) as db:
    with qmdb.Batch() as b:
        b.put(b"alice", b"\x64").put(b"bob", b"\x07")
        b.tx().delete(b"bob")
        root = db.commit(db.height() + 1, b)
    print("height", db.height(), "root", root.hex())
    print("alice =", db.get(b"alice"), " bob =", db.get(b"bob"))
    proof = db.prove(b"alice")
    # A light client needs only the proof, the trusted root and the claim:
    print("proof of alice verified at height", qmdb.verify_proof(proof, root, b"alice", b"\x64"))
    try:
        qmdb.verify_proof(proof, root, b"alice", b"\x65")
    except qmdb.BadProof as e:
        print("a false claim is refused:", e)
