# SPDX-License-Identifier: Apache-2.0
"""Tests of the Python binding. The vectors directory comes from QMDB_VECTORS (the test runner
passes ../shared/vectors); python3 -m unittest discover -s tests."""
import os
import shutil
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import qmdb  # noqa: E402

VECTORS = os.environ.get("QMDB_VECTORS",
                         os.path.join(os.path.dirname(__file__), "../../../../shared/vectors"))


def apply_ops(db, path):
    """Applies an op script through the binding; returns [(height, root)] per commit."""
    roots, batch, height = [], None, None
    with open(path) as f:
        for line in f:
            tok = line.split("#", 1)[0].split()
            if not tok:
                continue
            if tok[0] == "block":
                height = int(tok[1])
                batch = qmdb.Batch()
            elif tok[0] == "tx":
                batch.tx()
            elif tok[0] == "put":
                batch.put(bytes.fromhex(tok[1]), bytes.fromhex(tok[2]))
            elif tok[0] == "del":
                batch.delete(bytes.fromhex(tok[1]))
            elif tok[0] == "commit":
                roots.append((height, db.commit(height, batch)))
                batch.free()
            else:
                raise ValueError(f"bad op line {line!r}")
    return roots


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qmdb-py-")
        self.dir = os.path.join(self.tmp, "db")
        qmdb.create(self.dir)
        self.db = qmdb.open(self.dir)

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.tmp)


class TestVectors(Base):
    def test_example_roots(self):
        ops = os.path.join(VECTORS, "example.ops")
        expected = []
        with open(os.path.join(VECTORS, "example.expected")) as f:
            for line in f:
                h, r = line.split()
                expected.append((int(h), bytes.fromhex(r)))
        got = apply_ops(self.db, ops)
        self.assertEqual(len(got), len(expected))
        for (h, r), (eh, er) in zip(got, expected):
            self.assertEqual(h, eh)
            self.assertEqual(r.hex(), er.hex(), f"root of height {h}")
        self.assertEqual(self.db.height(), expected[-1][0])
        self.assertEqual(self.db.root(), expected[-1][1])
        self.assertEqual(self.db.root(2), expected[1][1])
        self.assertEqual(self.db.get(b"alice"), b"\x08")
        self.assertIsNone(self.db.get(b"zed"))


class TestApi(Base):
    def commit_kv(self, pairs):
        with qmdb.Batch() as b:
            for k, v in pairs:
                b.put(k, v)
            return self.db.commit(self.db.height() + 1, b)

    def test_version(self):
        self.assertRegex(qmdb.version(), r"^\d+\.\d+\.\d+$")
        a, b, c = map(int, qmdb.version().split("."))
        self.assertEqual(qmdb.version_number(), a * 10000 + b * 100 + c)

    def test_proof_round_trip(self):
        self.commit_kv([(b"k%d" % i, b"v%d" % i) for i in range(100)])
        root = self.db.root()
        p = self.db.prove(b"k42")
        self.assertEqual(qmdb.verify_proof(p, root, b"k42", b"v42", 1), 1)
        info = qmdb.proof_info(p)
        self.assertEqual(info["absent"], 0)
        self.assertEqual(info["height"], 1)
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_proof(p, root, b"k42", b"v43", 1)
        bad = bytearray(p)
        bad[len(bad) // 2] ^= 1
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_proof(bytes(bad), root, b"k42", b"v42", 1)
        ex = self.db.prove(b"absent-key")
        self.assertEqual(qmdb.verify_proof(ex, root, b"absent-key", None, 1), 1)
        self.assertTrue(qmdb.proof_info(ex)["absent"])
        with self.assertRaises(qmdb.BadProof):
            qmdb.proof_info(b"\x00" * 10)

    def test_bad_key(self):
        with qmdb.Batch() as b:
            with self.assertRaises(qmdb.InvalidArgument) as cm:
                b.put(b"", b"x")
            self.assertEqual(cm.exception.code, -30902)
            with self.assertRaises(ValueError):
                b.put(b"k" * 256, b"x")
        with self.assertRaises(qmdb.InvalidArgument):
            self.db.get(b"")
        with self.assertRaises(qmdb.InvalidArgument):
            self.db.prove(b"k" * 300)
        with self.assertRaises(TypeError):
            self.db.get(42)

    def test_wrong_height(self):
        self.commit_kv([(b"a", b"1")])
        with qmdb.Batch() as b:
            b.put(b"a", b"2")
            with self.assertRaises(qmdb.BadHeight):
                self.db.commit(5, b)
            with self.assertRaises(qmdb.BadHeight):
                self.db.commit(1, b)
        self.assertEqual(self.db.get(b"a"), b"1")
        with self.assertRaises(qmdb.NotFound):
            self.db.root(99)
        with self.assertRaises(KeyError):
            self.db[b"nope"]

    def test_rollback(self):
        r1 = self.commit_kv([(b"a", b"1")])
        self.commit_kv([(b"a", b"2"), (b"b", b"3")])
        with self.assertRaises(qmdb.BadHeight):
            self.db.rollback(3)
        self.db.rollback(1)
        self.assertEqual(self.db.root(), r1)
        self.assertEqual(self.db.get(b"a"), b"1")
        with self.assertRaises(KeyError):
            self.db[b"b"]
        self.commit_kv([(b"c", b"4")])  # block 2 again, another one
        self.assertEqual(self.db.get(b"c"), b"4")

    def test_closed_handle(self):
        b = qmdb.Batch()
        b.put(b"a", b"1")
        self.db.close()
        for call in (lambda: self.db.get(b"a"), lambda: self.db.height(),
                     lambda: self.db.commit(1, b), lambda: self.db.prove(b"a"),
                     lambda: self.db.stat(), lambda: self.db.root()):
            with self.assertRaises(qmdb.Closed):
                call()
        self.db.close()  # a second close is a no-op
        b.free()
        with self.assertRaises(qmdb.Closed):
            b.put(b"a", b"1")
        self.db = qmdb.open(self.dir)  # for tearDown

    def test_close_while_reading(self):
        self.commit_kv([(b"a", b"1")])
        outcomes = []

        def reader():
            try:
                while True:
                    if self.db.get(b"a") != b"1":
                        outcomes.append("wrong value")
                        return
            except qmdb.Closed:
                outcomes.append("closed")

        ts = [threading.Thread(target=reader) for _ in range(3)]
        for t in ts:
            t.start()
        self.db.close()  # waits for the reads in progress; the next ones raise Closed
        for t in ts:
            t.join()
        self.assertEqual(outcomes, ["closed"] * 3)
        self.db = qmdb.open(self.dir)  # for tearDown

    def test_open_errors(self):
        with self.assertRaises(qmdb.NotADatabase):
            qmdb.open(os.path.join(self.tmp, "nothing-here"))
        with self.assertRaises(qmdb.Exists):
            qmdb.create(self.dir)
        with self.assertRaises(qmdb.Busy):
            qmdb.open(self.dir)  # self.db holds the lock
        with self.assertRaises(qmdb.InvalidArgument):
            qmdb.create(os.path.join(self.tmp, "x"), worker_threads=99)
        with self.assertRaises(TypeError):
            qmdb.create(os.path.join(self.tmp, "y"), no_such_option=1)

    def test_get_many_submit_wait_stat(self):
        self.commit_kv([(b"k%d" % i, b"v" * (i + 1)) for i in range(300)])
        vals = self.db.get_many([b"k0", b"k299", b"missing"], cap=64)
        self.assertEqual(vals, [b"v", b"v" * 300, None])  # 300 > cap: refetched
        with qmdb.Batch() as b:
            b.put(b"k0", b"new")
            self.db.submit(2, b)
            self.assertEqual(self.db.get(b"k0"), b"new")
            root = self.db.wait(2)
        self.assertEqual(root, self.db.root(2))
        self.assertEqual(self.db.get_committed(b"k0"), b"new")
        st = self.db.stat()
        self.assertEqual(st["height"], 2)
        self.assertEqual(st["live_entries"], 300)

    def test_options_reach_the_library(self):
        self.db.close()
        self.db = qmdb.open(self.dir, pipeline=0, io_uring=0, worker_threads=0)
        st = self.db.stat()
        self.assertEqual(st["pipeline"], 0)
        self.assertEqual(st["io_uring"], 0)

    def test_reads_concurrent_with_commits(self):
        self.commit_kv([(b"ctr", b"0")])
        stop, errors = threading.Event(), []

        def reader():
            while not stop.is_set():
                v = self.db.get(b"ctr")
                if v is None or not v.isdigit():
                    errors.append(v)

        ts = [threading.Thread(target=reader) for _ in range(2)]
        for t in ts:
            t.start()
        for i in range(1, 30):
            self.commit_kv([(b"ctr", str(i).encode())])
        stop.set()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.db.get(b"ctr"), b"29")


if __name__ == "__main__":
    unittest.main()
