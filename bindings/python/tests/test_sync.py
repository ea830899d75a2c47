# SPDX-License-Identifier: Apache-2.0
"""Tests of the multi-key proof, block witness and state sync functions of the Python binding
(python3 -m unittest discover -s tests)."""
import ctypes
import glob
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import qmdb  # noqa: E402

# Block 2 of two_blocks(): two transactions of updates, inserts and a delete.
BLOCK2 = [(0, b"k3", b"three"), (0, b"new1", b"n1"), (1, b"k7", None), (1, b"k3", b"drei"),
          (1, b"new2", b"n2")]


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qmdb-py-sync-")
        self.dir = os.path.join(self.tmp, "db")
        qmdb.create(self.dir)
        self.db = qmdb.open(self.dir)
        self.roots = self.two_blocks()

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.tmp)

    def two_blocks(self):
        """Block 1 puts k0..k199, block 2 is BLOCK2; returns the roots of heights 0..2."""
        roots = [self.db.root()]
        with qmdb.Batch() as b:
            for i in range(200):
                b.put(f"k{i}".encode(), f"v{i}".encode())
            roots.append(self.db.commit(1, b))
        with qmdb.Batch() as b:
            tx = 0
            for t, k, v in BLOCK2:
                if t != tx:
                    b.tx()
                    tx = t
                if v is None:
                    b.delete(k)
                else:
                    b.put(k, v)
            roots.append(self.db.commit(2, b))
        return roots


class TestMultiKeyProof(Base):
    def test_present_and_absent(self):
        keys = [b"k3", b"nobody", b"k150", b"k7", b"k3"]
        p = self.db.prove_many(keys)
        h, vals = qmdb.verify_proof_many(p, self.roots[2], keys, 2)
        self.assertEqual(h, 2)
        want = [b"drei", None, b"v150", None, b"drei"]
        self.assertEqual(vals, want)
        self.assertEqual(qmdb.verify_proof_many(p, self.roots[2], keys), (2, want))
        # Height 1 under the latest root: k3's old value, k7 still there.
        h1 = self.db.prove_many(keys, 1)
        self.assertEqual(qmdb.verify_proof_many(h1, self.roots[2], keys, 1)[1],
                         [b"v3", None, b"v150", b"v7", b"v3"])

    def test_rejected(self):
        keys = [b"k3", b"nobody", b"k150"]
        p = bytearray(self.db.prove_many(keys))
        p[len(p) // 2] ^= 1
        with self.assertRaises(qmdb.BadProof) as cm:
            qmdb.verify_proof_many(bytes(p), self.roots[2], keys, 2)
        self.assertTrue(cm.exception.detail)
        p[len(p) // 2] ^= 1
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_proof_many(p, self.roots[1], keys)
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_proof_many(p, self.roots[2], [b"k3", b"nobody", b"k151"], 2)
        with self.assertRaises(qmdb.InvalidArgument):
            qmdb.verify_proof_many(p, b"short", keys)
        with self.assertRaises(qmdb.InvalidArgument):
            self.db.prove_many([])
        with self.assertRaises(qmdb.NotFound):
            self.db.prove_many(keys, 9)


class TestWitness(Base):
    def test_verifies_to_the_post_root(self):
        w = self.db.witness(2, BLOCK2)
        self.assertEqual(qmdb.verify_witness(w, self.roots[1], 2, BLOCK2), self.roots[2])
        # The chain's parameters (db.stat() carries them); others are rejected.
        st = self.db.stat()
        self.assertEqual(qmdb.verify_witness(w, self.roots[1], 2, BLOCK2, st), self.roots[2])
        other = dict(st, compact_thres=st["compact_thres"] + 1)
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_witness(w, self.roots[1], 2, BLOCK2, other)
        # From the log alone (block 2 deletes no absent key).
        wl = self.db.witness(2)
        self.assertEqual(qmdb.verify_witness(wl, self.roots[1], 2, BLOCK2), self.roots[2])

    def test_rejected(self):
        w = self.db.witness(2, BLOCK2)
        changed = list(BLOCK2)
        changed[1] = (0, b"new1", b"other")
        with self.assertRaises(qmdb.BadProof) as cm:
            qmdb.verify_witness(w, self.roots[1], 2, changed)
        self.assertTrue(cm.exception.detail)
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_witness(w, self.roots[1], 2, BLOCK2[1:])
        with self.assertRaises(qmdb.BadProof):
            qmdb.verify_witness(w, self.roots[0], 2, BLOCK2)
        bad = bytearray(w)
        bad[len(bad) // 2] ^= 0x10
        with self.assertRaises(qmdb.QmdbError):
            qmdb.verify_witness(bytes(bad), self.roots[1], 2, BLOCK2)
        with self.assertRaises(qmdb.InvalidArgument):
            qmdb.verify_witness(w, self.roots[1], 2, list(reversed(BLOCK2)))
        with self.assertRaises(qmdb.NotFound):
            self.db.witness(3)


class TestSnapshot(Base):
    def export(self):
        snap = os.path.join(self.tmp, "snap")
        st = self.db.snapshot_export(snap)
        return snap, st, sorted(glob.glob(os.path.join(snap, "*.qmsc")))

    def test_export_and_chunk_verify(self):
        snap, st, files = self.export()
        self.assertEqual((st["height"], st["root"]), (2, self.roots[2]))
        self.assertGreater(st["chunks"], 0)
        self.assertEqual(len(files), st["chunks"])
        with self.assertRaises(qmdb.Exists):
            self.db.snapshot_export(snap)
        entries = 0
        for f in files:
            with open(f, "rb") as fh:
                info = qmdb.chunk_verify(fh.read(), self.roots[2], 2)
            self.assertEqual(info["height"], 2)
            self.assertLess(info["shard"], 16)
            self.assertLess(info["twig_begin"], info["twig_end"])
            entries += info["entries"]
        self.assertGreaterEqual(entries, 200)
        with open(files[0], "rb") as fh:
            c = bytearray(fh.read())
        c[len(c) // 2] ^= 1
        with self.assertRaises(qmdb.BadProof) as cm:
            qmdb.chunk_verify(bytes(c), self.roots[2], 2)
        self.assertTrue(cm.exception.detail)
        c[len(c) // 2] ^= 1
        with self.assertRaises(qmdb.BadProof):
            qmdb.chunk_verify(bytes(c), self.roots[1], 2)

    def test_restore(self):
        snap, st, files = self.export()
        newdir = os.path.join(self.tmp, "restored")
        wrong = bytearray(self.roots[2])
        wrong[0] ^= 1
        seen = []
        with self.assertRaises(qmdb.BadProof) as cm:
            qmdb.snapshot_restore(newdir, snap, bytes(wrong),
                                  on_chunk=lambda name, err: seen.append((name, err)))
        self.assertTrue(cm.exception.detail)
        self.assertTrue(seen)
        self.assertTrue(all(isinstance(e, qmdb.BadProof) for _, e in seen))
        self.assertFalse(os.path.exists(os.path.join(newdir, "META")))

        kept = []
        rst = qmdb.snapshot_restore(newdir, snap, self.roots[2], 2,
                                    on_chunk=lambda name, err: kept.append((name, err)))
        self.assertEqual(len(kept), st["chunks"])
        self.assertTrue(all(e is None for _, e in kept))
        self.assertEqual((rst["accepted"], rst["rejected"], rst["missing"]),
                         (st["chunks"], 0, 0))
        self.assertEqual(rst["root"], self.roots[2])
        with self.assertRaises(qmdb.Exists):
            qmdb.snapshot_restore(newdir, snap, self.roots[2])
        with qmdb.open(newdir) as r, qmdb.Batch() as b:
            self.assertEqual(r.height(), 2)
            self.assertEqual(r.root(), self.roots[2])
            self.assertEqual(r.get(b"k3"), b"drei")
            self.assertIsNone(r.get(b"k7"))
            self.assertEqual(r.get(b"k199"), b"v199")
            self.assertEqual(r.get(b"new2"), b"n2")
            b.put(b"after", b"x")  # the restored database goes on with the source's roots
            self.assertEqual(r.commit(3, b), self.db.commit(3, b))

    def test_restore_resumes_and_callback_errors(self):
        snap, st, files = self.export()
        aside = os.path.join(self.tmp, "aside")
        os.rename(files[0], aside)
        newdir = os.path.join(self.tmp, "restored")
        with self.assertRaises(qmdb.NotFound) as cm:
            qmdb.snapshot_restore(newdir, snap, self.roots[2])
        self.assertEqual(cm.exception.stat["missing"], 1)
        self.assertEqual(cm.exception.stat["accepted"], st["chunks"] - 1)
        os.rename(aside, files[0])

        def boom(name, err):
            raise RuntimeError("from the callback")
        with self.assertRaisesRegex(RuntimeError, "from the callback"):
            qmdb.snapshot_restore(os.path.join(self.tmp, "other"), snap, self.roots[2],
                                  on_chunk=boom)
        rst = qmdb.snapshot_restore(newdir, snap, self.roots[2])
        self.assertEqual(rst["accepted"], st["chunks"])
        with qmdb.open(newdir) as r:
            self.assertEqual(r.root(), self.roots[2])

    def test_struct_sizes(self):
        # The library refuses a struct_size below its own: one byte less is refused, ours is
        # not (so ours is exactly the library's).
        st = qmdb._SnapshotStat()
        st.struct_size = ctypes.sizeof(st) - 1
        nowhere = b"/nonexistent/qmdb-py-layout"
        rc = qmdb._snapshot_restore(nowhere, nowhere, bytes(32), qmdb.LATEST,
                                    qmdb._RESTORE_FN(lambda *a: None), None, ctypes.byref(st))
        self.assertEqual(rc, qmdb.InvalidArgument.code)
        st.struct_size = ctypes.sizeof(st)
        rc = qmdb._snapshot_restore(nowhere, nowhere, bytes(32), qmdb.LATEST,
                                    qmdb._RESTORE_FN(lambda *a: None), None, ctypes.byref(st))
        self.assertNotIn(rc, (0, qmdb.InvalidArgument.code))
        info = qmdb._ChunkInfo()
        info.struct_size = ctypes.sizeof(info) - 1
        self.assertEqual(qmdb._chunk_verify(b"x", 1, bytes(32), 1, ctypes.byref(info), None),
                         qmdb.InvalidArgument.code)
        info.struct_size = ctypes.sizeof(info)
        self.assertEqual(qmdb._chunk_verify(b"x", 1, bytes(32), 1, ctypes.byref(info), None),
                         qmdb.BadProof.code)


class TestBackup(Base):
    def test_backup_opens_with_the_same_root(self):
        out = os.path.join(self.tmp, "backup")
        self.db.backup(out)
        with self.assertRaises(qmdb.Exists) as cm:
            self.db.backup(out)
        self.assertTrue(cm.exception.detail)
        with qmdb.open(out) as b:
            self.assertEqual(b.height(), 2)
            self.assertEqual(b.root(), self.roots[2])
            self.assertEqual(b.get(b"k3"), b"drei")
            self.assertIsNone(b.get(b"k7"))
            self.assertEqual(b.get(b"new1"), b"n1")
        self.db.close()
        with self.assertRaises(qmdb.Closed):
            self.db.backup(out + "2")


if __name__ == "__main__":
    unittest.main()
