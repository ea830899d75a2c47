# SPDX-License-Identifier: Apache-2.0
"""qmdb -- Python bindings (ctypes) for libqmdb, the Quick Merkle Database.

    import qmdb
    qmdb.create("/tmp/db")
    with qmdb.open("/tmp/db") as db:
        b = qmdb.Batch()
        b.put(b"alice", b"\\x64")
        root = db.commit(db.height() + 1, b)
        assert db.get(b"alice") == b"\\x64"

Every error code of the C library is raised as an exception: QmdbError subclasses for the
library's codes (NotFound, InvalidArgument, BadHeight, BadProof, ...) and OSError for
negated errno values. A closed Db or Batch raises Closed (also a ValueError, like a closed
file). Memory the library allocates (handles, batches, proofs) is freed by close()/free(),
by the with-statement, or at garbage collection.

The library is found through, in order: the QMDB_LIB environment variable (a path to
libqmdb.so), `pkg-config --variable=libdir qmdb`, then ctypes.util.find_library("qmdb").
"""
import ctypes
import ctypes.util
import errno as _errno
import os
import subprocess
import threading

__all__ = [
    "QmdbError", "NotFound", "Corrupt", "InvalidArgument", "BufferTooSmall", "Exists",
    "NotADatabase", "VersionMismatch", "Panic", "BadHeight", "Pruned", "BadProof", "TooMany",
    "Busy", "NoCheckpoint", "Closed", "Db", "Batch", "create", "open", "verify_proof",
    "proof_info", "verify_proof_many", "verify_witness", "chunk_verify", "snapshot_restore",
    "version", "version_number", "LATEST", "AUTO", "MPROOF_MAX_KEYS",
    "INDEXER_AUTO", "INDEXER_MEMORY", "INDEXER_HYBRID",
]

HASH_LEN = 32
LATEST = (1 << 64) - 1
AUTO = -1
INDEXER_MEMORY, INDEXER_HYBRID, INDEXER_AUTO = 0, 1, 0xFFFFFFFF
OPEN_FAST, OPEN_NO_AUTO_PRUNE, OPEN_SET_HISTORY, OPEN_RDONLY = 0x1, 0x2, 0x4, 0x8
OPEN_NO_PIPELINE, OPEN_DIRECT_IO, OPEN_SALVAGE = 0x10, 0x20, 0x40
MPROOF_MAX_KEYS = 1 << 20


# ---- errors ------------------------------------------------------------------------------

class QmdbError(Exception):
    """An error code of libqmdb; .code is the C value, .detail the library's message."""
    code = None

    def __init__(self, code, message, detail=""):
        self.code = code
        self.detail = detail
        super().__init__(f"{message}: {detail}" if detail else message)


class NotFound(QmdbError, KeyError):
    code = -30900

    def __str__(self):  # KeyError would quote the message
        return Exception.__str__(self)


class Corrupt(QmdbError): code = -30901
class InvalidArgument(QmdbError, ValueError): code = -30902
class BufferTooSmall(QmdbError): code = -30903
class Exists(QmdbError, FileExistsError): code = -30904
class NotADatabase(QmdbError): code = -30905
class VersionMismatch(QmdbError): code = -30906
class Panic(QmdbError): code = -30907
class BadHeight(QmdbError, ValueError): code = -30908
class Pruned(QmdbError): code = -30909
class BadProof(QmdbError): code = -30910
class TooMany(QmdbError): code = -30911
class Busy(QmdbError): code = -30912
class NoCheckpoint(QmdbError): code = -30913


class Closed(QmdbError, ValueError):
    """An operation on a closed Db or Batch."""

    def __init__(self, what="handle"):
        super().__init__(None, f"operation on a closed {what}")


_BY_CODE = {c.code: c for c in (NotFound, Corrupt, InvalidArgument, BufferTooSmall, Exists,
                                NotADatabase, VersionMismatch, Panic, BadHeight, Pruned,
                                BadProof, TooMany, Busy, NoCheckpoint)}


# ---- loading ----------------------------------------------------------------------------

def _find_library():
    path = os.environ.get("QMDB_LIB")
    if path:
        return path
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "qmdb"], capture_output=True,
                                text=True, check=True).stdout.strip()
        for name in ("libqmdb.so.0", "libqmdb.so"):
            if libdir and os.path.exists(os.path.join(libdir, name)):
                return os.path.join(libdir, name)
    except (OSError, subprocess.CalledProcessError):
        pass
    name = ctypes.util.find_library("qmdb")
    if name:
        return name
    raise ImportError("libqmdb not found: set QMDB_LIB to libqmdb.so, or PKG_CONFIG_PATH")


_lib = ctypes.CDLL(_find_library())
_c = ctypes
_vp, _sz, _u64, _u8p = _c.c_void_p, _c.c_size_t, _c.c_uint64, _c.POINTER(_c.c_uint8)


class _Options(_c.Structure):
    _fields_ = [("struct_size", _sz), ("compact_thres", _u64), ("utilization_ratio", _c.c_uint32),
                ("utilization_div", _c.c_uint32), ("entry_segment_bytes", _u64),
                ("twig_segment_bytes", _u64), ("history_blocks", _u64), ("flags", _c.c_uint32),
                ("read_queue_depth", _c.c_uint32), ("indexer", _c.c_uint32),
                ("worker_threads", _c.c_int32), ("pipeline", _c.c_int32),
                ("io_uring", _c.c_int32), ("hybrid_merge_changes", _c.c_uint32)]


class _Read(_c.Structure):
    _fields_ = [("key", _vp), ("klen", _sz), ("buf", _vp), ("cap", _sz), ("vlen", _sz),
                ("rc", _c.c_int)]


_STAT_FIELDS = [
    ("height", _u64), ("live_entries", _u64), ("live_with_sentries", _u64),
    ("total_entries", _u64), ("unpruned_entries", _u64), ("index_dram_bytes", _u64),
    ("index_ssd_bytes", _u64), ("index_merges", _u64), ("index_page_reads", _u64),
    ("indexer", _c.c_uint32), ("index_resumed_shards", _c.c_uint32), ("tree_dram_bytes", _u64),
    ("cache_dram_bytes", _u64), ("ssd_bytes", _u64), ("entry_file_bytes", _u64),
    ("twig_file_bytes", _u64), ("compactions", _u64), ("warm_hits", _u64),
    ("pruned_twigs", _u64), ("batched_reads", _u64), ("sha256_compressions", _u64),
    ("blocks_committed", _u64), ("pipeline", _c.c_uint32), ("io_uring", _c.c_uint32),
    ("compact_thres", _u64), ("utilization_ratio", _c.c_uint32),
    ("utilization_div", _c.c_uint32), ("history_blocks", _u64),
    ("index_replayed_blocks", _u64), ("index_replayed_changes", _u64),
    ("rollback_reactivated", _u64), ("rollback_entries_read", _u64), ("rollback_walked", _u64),
    ("page_cache_reads", _u64)]


class _Stats(_c.Structure):
    _fields_ = [("struct_size", _sz)] + _STAT_FIELDS


class _ProofInfo(_c.Structure):
    _fields_ = [("struct_size", _sz), ("format_version", _c.c_uint32), ("absent", _c.c_int),
                ("deactivated", _c.c_int), ("shard", _c.c_uint), ("height", _u64),
                ("entries", _c.c_uint), ("upper_levels", _c.c_uint)]


class _ProofAnswer(_c.Structure):
    _fields_ = [("present", _c.c_int), ("value", _vp), ("vlen", _sz)]


class _BlockOp(_c.Structure):
    _fields_ = [("tx", _c.c_uint32), ("key", _vp), ("klen", _sz), ("value", _vp), ("vlen", _sz)]


class _CompactionParams(_c.Structure):
    _fields_ = [("compact_thres", _u64), ("utilization_ratio", _c.c_uint32),
                ("utilization_div", _c.c_uint32)]


class _ChunkInfo(_c.Structure):
    _fields_ = [("struct_size", _sz), ("format_version", _c.c_uint32), ("shard", _c.c_uint),
                ("tail", _c.c_int), ("height", _u64), ("next_sn", _u64), ("sn_start", _u64),
                ("twig_begin", _u64), ("twig_end", _u64), ("summaries", _u64),
                ("log_bytes", _u64), ("entries", _u64), ("live", _u64)]


class _SnapshotStat(_c.Structure):
    _fields_ = [("struct_size", _sz), ("height", _u64), ("root", _c.c_uint8 * HASH_LEN),
                ("chunks", _u64), ("accepted", _u64), ("rejected", _u64), ("missing", _u64),
                ("bytes", _u64), ("entries", _u64), ("live", _u64)]


_RESTORE_FN = _c.CFUNCTYPE(None, _vp, _c.c_char_p, _c.c_int, _c.c_char_p)


def _fn(name, res, *args):
    f = getattr(_lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_c_int = _c.c_int
_strerror = _fn("qmdb_strerror", _c.c_char_p, _c_int)
_version = _fn("qmdb_version", _c.c_char_p)
_version_number = _fn("qmdb_version_number", _c_int)
_options_init = _fn("qmdb_options_init", None, _c.POINTER(_Options))
_create = _fn("qmdb_create", _c_int, _c.c_char_p, _c.POINTER(_Options))
_open = _fn("qmdb_open", _c_int, _c.c_char_p, _c.POINTER(_Options), _c.POINTER(_vp))
_open_error = _fn("qmdb_open_error", _c.c_char_p)
_close = _fn("qmdb_close", _c_int, _vp)
_last_error = _fn("qmdb_last_error", _c.c_char_p, _vp)
_height = _fn("qmdb_height", _u64, _vp)
_root = _fn("qmdb_root", _c_int, _vp, _u64, _c.c_char_p)
_get = _fn("qmdb_get", _c_int, _vp, _c.c_char_p, _sz, _c.c_char_p, _sz, _c.POINTER(_sz))
_get_committed = _fn("qmdb_get_committed", _c_int, _vp, _c.c_char_p, _sz, _c.c_char_p, _sz,
                     _c.POINTER(_sz))
_get_many = _fn("qmdb_get_many", _c_int, _vp, _c.POINTER(_Read), _sz)
_batch_new = _fn("qmdb_batch_new", _c_int, _c.POINTER(_vp))
_batch_free = _fn("qmdb_batch_free", None, _vp)
_batch_reset = _fn("qmdb_batch_reset", None, _vp)
_batch_tx = _fn("qmdb_batch_tx", _c_int, _vp)
_batch_put = _fn("qmdb_batch_put", _c_int, _vp, _c.c_char_p, _sz, _c.c_char_p, _sz)
_batch_del = _fn("qmdb_batch_del", _c_int, _vp, _c.c_char_p, _sz)
_batch_ops = _fn("qmdb_batch_ops", _sz, _vp)
_commit = _fn("qmdb_commit", _c_int, _vp, _u64, _vp, _c.c_char_p)
_submit = _fn("qmdb_submit", _c_int, _vp, _u64, _vp)
_wait = _fn("qmdb_wait", _c_int, _vp, _u64, _c.c_char_p)
_prune = _fn("qmdb_prune", _c_int, _vp)
_rollback = _fn("qmdb_rollback", _c_int, _vp, _u64)
_stat = _fn("qmdb_stat", _c_int, _vp, _c.POINTER(_Stats))
_prove = _fn("qmdb_prove", _c_int, _vp, _c.c_char_p, _sz, _u64, _c.POINTER(_u8p),
             _c.POINTER(_sz))
_proof_free = _fn("qmdb_proof_free", None, _u8p)
_proof_verify = _fn("qmdb_proof_verify", _c_int, _c.c_char_p, _sz, _c.c_char_p, _c.c_char_p,
                    _sz, _c.c_char_p, _sz, _u64, _c.POINTER(_u64), _c.POINTER(_c.c_char_p))
_proof_info_get = _fn("qmdb_proof_info_get", _c_int, _c.c_char_p, _sz, _c.POINTER(_ProofInfo))
_prove_many = _fn("qmdb_prove_many", _c_int, _vp, _c.POINTER(_vp), _c.POINTER(_sz), _sz, _u64,
                  _c.POINTER(_u8p), _c.POINTER(_sz))
_proof_verify_many = _fn("qmdb_proof_verify_many", _c_int, _c.c_char_p, _sz, _c.c_char_p,
                         _c.POINTER(_vp), _c.POINTER(_sz), _sz, _u64, _c.POINTER(_u64),
                         _c.POINTER(_ProofAnswer), _c.POINTER(_c.c_char_p))
_witness = _fn("qmdb_witness", _c_int, _vp, _u64, _c.POINTER(_BlockOp), _sz, _c.POINTER(_u8p),
               _c.POINTER(_sz))
_witness_verify = _fn("qmdb_witness_verify", _c_int, _c.c_char_p, _sz, _c.c_char_p, _u64,
                      _c.POINTER(_BlockOp), _sz, _c.POINTER(_CompactionParams), _c.c_char_p,
                      _c.POINTER(_c.c_char_p))
_chunk_verify = _fn("qmdb_chunk_verify", _c_int, _c.c_char_p, _sz, _c.c_char_p, _u64,
                    _c.POINTER(_ChunkInfo), _c.POINTER(_c.c_char_p))
_snapshot_export = _fn("qmdb_snapshot_export", _c_int, _vp, _c.c_char_p, _u64, _u64,
                       _c.POINTER(_SnapshotStat))
_snapshot_restore = _fn("qmdb_snapshot_restore", _c_int, _c.c_char_p, _c.c_char_p, _c.c_char_p,
                        _u64, _RESTORE_FN, _vp, _c.POINTER(_SnapshotStat))
_backup = _fn("qmdb_backup", _c_int, _vp, _c.c_char_p)


def _error(rc, detail=""):
    """The exception for return code rc."""
    msg = _strerror(rc).decode()
    cls = _BY_CODE.get(rc)
    if cls is not None:
        return cls(rc, msg, detail)
    if rc < 0:
        e = OSError(-rc, os.strerror(-rc) + (f": {detail}" if detail else ""))
        return e
    return QmdbError(rc, msg, detail)


def _bytes(x, what):
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"{what} must be bytes or str, not {type(x).__name__}")


def version():
    """The loaded library's version string, "major.minor.patch"."""
    return _version().decode()


def version_number():
    """MAJOR*10000 + MINOR*100 + PATCH of the loaded library."""
    return _version_number()


def _options(kw):
    o = _Options()
    _options_init(_c.byref(o))
    for k, v in kw.items():
        if k not in dict(_Options._fields_) or k == "struct_size":
            raise TypeError(f"unknown option {k!r}")
        setattr(o, k, v)
    return o


def create(path, **options):
    """Creates a database at height 0 (options: the fields of qmdb_options)."""
    o = _options(options)
    rc = _create(os.fsencode(path), _c.byref(o))
    if rc:
        raise _error(rc, _open_error().decode(errors="replace"))


def open(path, **options):  # noqa: A001 (the module's API mirrors qmdb_open)
    """Opens a database; returns a Db (a context manager)."""
    return Db(path, **options)


# ---- batches ----------------------------------------------------------------------------

class Batch:
    """One block's worth of transactions (not thread-safe). Transaction 0 is open."""

    def __init__(self):
        h = _vp()
        rc = _batch_new(_c.byref(h))
        if rc:
            raise _error(rc)
        self._b = h.value

    def _h(self):
        if self._b is None:
            raise Closed("batch")
        return self._b

    def tx(self):
        """Starts the next transaction."""
        rc = _batch_tx(self._h())
        if rc:
            raise _error(rc)
        return self

    def put(self, key, value):
        k, v = _bytes(key, "key"), _bytes(value, "value")
        rc = _batch_put(self._h(), k, len(k), v, len(v))
        if rc:
            raise _error(rc)
        return self

    def put_many(self, items):
        """Adds put(key, value) for every (key, value) pair of items (bytes only): the fast
        path for bulk writes."""
        b = self._h()
        put = _batch_put
        for k, v in items:
            rc = put(b, k, len(k), v, len(v))
            if rc:
                raise _error(rc)
        return self

    def delete(self, key):
        k = _bytes(key, "key")
        rc = _batch_del(self._h(), k, len(k))
        if rc:
            raise _error(rc)
        return self

    def reset(self):
        _batch_reset(self._h())

    def __len__(self):
        return _batch_ops(self._h())

    def free(self):
        if self._b is not None:
            _batch_free(self._b)
            self._b = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __del__(self):
        if getattr(self, "_b", None) is not None and _batch_free is not None:
            self.free()


# ---- the database ------------------------------------------------------------------------

class _Use:
    """A call in progress on a Db: holds the handle open (close waits for it) and, for the
    calls C wants one at a time, the writer lock."""
    __slots__ = ("db", "writer", "h")

    def __init__(self, db, writer):
        self.db, self.writer = db, writer

    def __enter__(self):
        db = self.db
        with db._cv:
            if db._db is None:
                raise Closed("database")
            db._users += 1
            self.h = db._db
        if self.writer:
            db._wlock.acquire()
        return self.h

    def __exit__(self, *exc):
        db = self.db
        if self.writer:
            db._wlock.release()
        with db._cv:
            db._users -= 1
            if db._users == 0:
                db._cv.notify_all()


class Db:
    """An open database. get/get_many/get_committed/height/root may be called from any
    thread, also while another thread commits; the other methods are serialized by the Db
    (one at a time, as C requires). close() waits for the calls in progress; later calls
    raise Closed."""

    def __init__(self, path, **options):
        o = _options(options)
        h = _vp()
        self._db = None
        self._users = 0
        self._cv = threading.Condition()
        self._wlock = threading.Lock()
        rc = _open(os.fsencode(path), _c.byref(o), _c.byref(h))
        if rc:
            raise _error(rc, _open_error().decode(errors="replace"))
        self._db = h.value

    def _read(self):
        return _Use(self, False)

    def _write(self):
        return _Use(self, True)

    @staticmethod
    def _err(h, rc):
        """The exception of a writer call (qmdb_last_error is read under the writer lock)."""
        return _error(rc, _last_error(h).decode(errors="replace"))

    def close(self):
        """Closes the handle (a second close does nothing); waits for calls in progress.
        NoCheckpoint: every block is durable, only the index checkpoint was lost."""
        with self._cv:
            db, self._db = self._db, None
            while self._users:
                self._cv.wait()
        if db is not None:
            rc = _close(db)
            if rc:
                raise _error(rc, _open_error().decode(errors="replace"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_db", None) is not None and _close is not None:
            try:
                self.close()
            except Exception:  # noqa: BLE001 (no raising from a finalizer)
                pass

    @property
    def closed(self):
        return self._db is None

    def height(self):
        with self._read() as h:
            return _height(h)

    def root(self, height=LATEST):
        """The 32-byte state root of height (default: the latest)."""
        out = _c.create_string_buffer(HASH_LEN)
        with self._read() as h:
            rc = _root(h, height, out)
        if rc:
            raise _error(rc)
        return out.raw

    def _get(self, fn, key):
        k = _bytes(key, "key")
        cap = 256
        with self._read() as h:
            while True:
                buf = _c.create_string_buffer(cap)
                vlen = _sz()
                rc = fn(h, k, len(k), buf, cap, _c.byref(vlen))
                if rc == 0:
                    return buf.raw[:vlen.value]
                if rc == NotFound.code:
                    return None
                if rc == BufferTooSmall.code:
                    cap = vlen.value
                    continue
                raise _error(rc)

    def get(self, key):
        """The value of key after the latest committed or submitted block, or None."""
        return self._get(_get, key)

    def get_committed(self, key):
        """The value of key at the latest durable height, or None."""
        return self._get(_get_committed, key)

    def __getitem__(self, key):
        v = self.get(key)
        if v is None:
            raise NotFound(NotFound.code, "not found", repr(key))
        return v

    def get_many(self, keys, cap=256):
        """Values of many keys (None where absent), read in one batch. The keys are copied
        into C memory for the call."""
        keys = [_bytes(k, "key") for k in keys]
        n = len(keys)
        reads = (_Read * n)()
        kbuf = _c.create_string_buffer(b"".join(keys), sum(map(len, keys)) + 1)
        vbuf = _c.create_string_buffer(cap * n)
        base_k, base_v = _c.addressof(kbuf), _c.addressof(vbuf)
        off = 0
        for i, k in enumerate(keys):
            r = reads[i]
            r.key, r.klen = base_k + off, len(k)
            r.buf, r.cap = base_v + i * cap, cap
            off += len(k)
        with self._read() as h:
            rc = _get_many(h, reads, n)
        if rc:
            raise _error(rc)
        out = []
        for i in range(n):
            r = reads[i]
            if r.rc == 0:
                out.append(_c.string_at(base_v + i * cap, r.vlen))
            elif r.rc == NotFound.code:
                out.append(None)
            elif r.rc == BufferTooSmall.code:
                out.append(self.get(keys[i]))
            else:
                raise _error(r.rc)
        return out

    def commit(self, height, batch):
        """Applies batch as block height (the latest + 1) and makes it durable; returns the
        new state root."""
        out = _c.create_string_buffer(HASH_LEN)
        b = batch._h()
        with self._write() as h:
            rc = _commit(h, height, b, out)
            if rc:
                raise self._err(h, rc)
        return out.raw

    def submit(self, height, batch):
        """Applies batch as block height; returns once its writes are visible to get()."""
        b = batch._h()
        with self._write() as h:
            rc = _submit(h, height, b)
            if rc:
                raise self._err(h, rc)

    def wait(self, height):
        """Waits until submitted block height is durable; returns its state root."""
        out = _c.create_string_buffer(HASH_LEN)
        with self._write() as h:
            rc = _wait(h, height, out)
            if rc:
                raise self._err(h, rc)
        return out.raw

    def prune(self):
        with self._write() as h:
            rc = _prune(h)
            if rc:
                raise self._err(h, rc)

    def rollback(self, height):
        """Rolls back to committed block height (a chain reorganization); the next block is
        height + 1. BadHeight above the latest, Pruned outside the window (nothing changed)."""
        with self._write() as h:
            rc = _rollback(h, height)
            if rc:
                raise self._err(h, rc)

    def stat(self):
        """Statistics as a dict (the fields of qmdb_stats)."""
        st = _Stats()
        st.struct_size = _c.sizeof(_Stats)
        with self._write() as h:
            rc = _stat(h, _c.byref(st))
            if rc:
                raise self._err(h, rc)
        return {name: getattr(st, name) for name, _ in _STAT_FIELDS}

    def prove(self, key, height=LATEST):
        """A proof (bytes) of key's value or absence at height (default: the latest)."""
        k = _bytes(key, "key")
        p, n = _u8p(), _sz()
        with self._write() as h:
            rc = _prove(h, k, len(k), height, _c.byref(p), _c.byref(n))
            if rc:
                raise self._err(h, rc)
        return _take_proof(p, n)

    def prove_many(self, keys, height=LATEST):
        """One proof (bytes) of the values or absence of all keys at height (default: the
        latest), with what they share written once. Repeats allowed; 1..MPROOF_MAX_KEYS."""
        ks = _KeyArrays(keys)
        p, n = _u8p(), _sz()
        with self._write() as h:
            rc = _prove_many(h, ks.ptrs, ks.lens, ks.n, height, _c.byref(p), _c.byref(n))
            if rc:
                raise self._err(h, rc)
        return _take_proof(p, n)

    def witness(self, height, ops=None):
        """The witness (bytes) of committed block height: what a verifier without a database
        needs to compute the block's root from the root of height - 1. ops: the block's
        operations as committed, (tx, key, value) with value None for a delete; None builds
        it from the log alone (it then does not cover a delete of an absent key)."""
        arr, n, _keep = _block_ops(ops)
        p, pn = _u8p(), _sz()
        with self._write() as h:
            rc = _witness(h, height, arr, n, _c.byref(p), _c.byref(pn))
            if rc:
                raise self._err(h, rc)
        return _take_proof(p, pn)

    def snapshot_export(self, outdir, height=LATEST, twigs_per_chunk=0):
        """Writes a snapshot of the state of height (default: the latest) into outdir: chunk
        files of up to twigs_per_chunk twigs of one shard (0: the library's default), then
        the MANIFEST. Returns what it wrote as a dict (the fields of qmdb_snapshot_stat)."""
        st = _SnapshotStat()
        st.struct_size = _c.sizeof(_SnapshotStat)
        with self._write() as h:
            rc = _snapshot_export(h, os.fsencode(outdir), height, twigs_per_chunk,
                                  _c.byref(st))
            if rc:
                raise self._err(h, rc)
        return _stat_dict(st)

    def backup(self, outdir):
        """Writes a consistent, openable copy of the committed state into outdir (new, or
        without a database), verified by a full open before it returns."""
        with self._write() as h:
            rc = _backup(h, os.fsencode(outdir))
            if rc:
                raise self._err(h, rc)


def _take_proof(p, n):
    """Copies a buffer the library allocated into bytes and frees it (qmdb_proof_free)."""
    try:
        return _c.string_at(p, n.value)
    finally:
        _proof_free(p)


class _KeyArrays:
    """The key pointer and length arrays of the multi-key calls, over one buffer it owns."""

    def __init__(self, keys):
        keys = [_bytes(k, "key") for k in keys]
        self.n = len(keys)
        self.buf = _c.create_string_buffer(b"".join(keys), sum(map(len, keys)) + 1)
        self.ptrs = (_vp * max(self.n, 1))()
        self.lens = (_sz * max(self.n, 1))()
        base, off = _c.addressof(self.buf), 0
        for i, k in enumerate(keys):
            self.ptrs[i], self.lens[i] = base + off, len(k)
            off += len(k)


def _block_ops(ops):
    """(array, count, buffers to keep alive) for a list of (tx, key, value or None)."""
    if ops is None:
        return None, 0, None
    ops = [(tx, _bytes(k, "key"), None if v is None else _bytes(v, "value")) for tx, k, v in ops]
    arr = (_BlockOp * max(len(ops), 1))()
    keep = []
    for i, (tx, k, v) in enumerate(ops):
        kb = _c.create_string_buffer(k, len(k) + 1)
        keep.append(kb)
        arr[i].tx, arr[i].key, arr[i].klen = tx, _c.addressof(kb), len(k)
        if v is not None:
            vb = _c.create_string_buffer(v, len(v) + 1)
            keep.append(vb)
            arr[i].value, arr[i].vlen = _c.addressof(vb), len(v)
    return arr, len(ops), keep


def _stat_dict(st):
    d = {name: getattr(st, name) for name, _ in _SnapshotStat._fields_[1:]}
    d["root"] = bytes(st.root)
    return d


def _root_arg(root, what="root"):
    r = _bytes(root, what)
    if len(r) != HASH_LEN:
        raise InvalidArgument(InvalidArgument.code, "invalid argument", f"{what} must be 32 bytes")
    return r


# ---- proofs (no database needed) -----------------------------------------------------------

def verify_proof(proof, root, key, value, height=LATEST):
    """Checks that key has value (None: is absent) at height under the trusted root. Returns
    the height the proof states; raises BadProof (or InvalidArgument for a malformed claim)."""
    p, r, k = _bytes(proof, "proof"), _bytes(root, "root"), _bytes(key, "key")
    if len(r) != HASH_LEN:
        raise InvalidArgument(InvalidArgument.code, "invalid argument", "root must be 32 bytes")
    v = None if value is None else _bytes(value, "value")
    proved, why = _u64(), _c.c_char_p()
    rc = _proof_verify(p, len(p), r, k, len(k), v, 0 if v is None else len(v), height,
                       _c.byref(proved), _c.byref(why))
    if rc:
        raise _error(rc, why.value.decode() if why.value else "")
    return proved.value


def proof_info(proof):
    """What a proof's header says (not verified), as a dict."""
    p = _bytes(proof, "proof")
    info = _ProofInfo()
    info.struct_size = _c.sizeof(_ProofInfo)
    rc = _proof_info_get(p, len(p), _c.byref(info))
    if rc:
        raise _error(rc)
    return {name: getattr(info, name) for name, _ in _ProofInfo._fields_[1:]}


def verify_proof_many(proof, root, keys, height=LATEST):
    """Checks a multi-key proof for keys (the list it was built for, in the same order) at
    height (default: the root's height) under the trusted root. Returns (height, values):
    the height the proof states and, per key, its value (None: absent). Raises BadProof with
    the reason, InvalidArgument for malformed arguments."""
    p, r = _bytes(proof, "proof"), _root_arg(root)
    ks = _KeyArrays(keys)
    answers = (_ProofAnswer * max(ks.n, 1))()
    proved, why = _u64(), _c.c_char_p()
    rc = _proof_verify_many(p, len(p), r, ks.ptrs, ks.lens, ks.n, height, _c.byref(proved),
                            answers, _c.byref(why))
    if rc:
        raise _error(rc, why.value.decode() if why.value else "")
    # The values point into p, alive here: copy them out.
    values = [_c.string_at(a.value, a.vlen) if a.present and a.value else None
              for a in answers[:ks.n]]
    return proved.value, values


def verify_witness(witness, pre_root, height, ops, params=None):
    """Checks the witness of block height against the trusted root of height - 1 and the
    block's ops ((tx, key, value or None) tuples) and returns the block's post-state root.
    params: the chain's compaction parameters, a mapping with compact_thres,
    utilization_ratio and utilization_div (db.stat() is one), which the witness must state;
    None takes the witness's. Raises BadProof with the reason, InvalidArgument for malformed
    ops."""
    w, r = _bytes(witness, "witness"), _root_arg(pre_root, "pre_root")
    arr, n, _keep = _block_ops(ops)
    par = None
    if params is not None:
        par = _CompactionParams(params["compact_thres"], params["utilization_ratio"],
                                params["utilization_div"])
    post, why = _c.create_string_buffer(HASH_LEN), _c.c_char_p()
    rc = _witness_verify(w, len(w), r, height, arr, n, None if par is None else _c.byref(par),
                         post, _c.byref(why))
    if rc:
        raise _error(rc, why.value.decode() if why.value else "")
    return post.raw


def chunk_verify(chunk, root, height):
    """Verifies one snapshot chunk (a file written by Db.snapshot_export) against the trusted
    state root of height; returns what it holds as a dict (the fields of qmdb_chunk_info).
    Raises BadProof with the reason."""
    c, r = _bytes(chunk, "chunk"), _root_arg(root)
    info = _ChunkInfo()
    info.struct_size = _c.sizeof(_ChunkInfo)
    why = _c.c_char_p()
    rc = _chunk_verify(c, len(c), r, height, _c.byref(info), _c.byref(why))
    if rc:
        raise _error(rc, why.value.decode() if why.value else "")
    return {name: getattr(info, name) for name, _ in _ChunkInfo._fields_[1:]}


def snapshot_restore(newdir, indir, root, height=LATEST, on_chunk=None):
    """Restores the snapshot in indir (MANIFEST and chunks) into the new database newdir,
    trusting only root (and height; default: the manifest's). Every chunk is verified before
    it is kept; call again as more chunks arrive. on_chunk(name, error) is called for every
    kept (error None) and rejected (error a BadProof with the reason) chunk. Returns a dict
    (the fields of qmdb_snapshot_stat) once the database is built and opens with root.
    Raises NotFound while chunks are missing, BadProof if any was rejected (the good ones stay
    kept), Exists if newdir holds a database; the exception's .stat is the same dict. An
    exception raised by on_chunk is raised again once the library returned."""
    r = _root_arg(root)
    st = _SnapshotStat()
    st.struct_size = _c.sizeof(_SnapshotStat)
    raised = []

    def cb(_arg, chunk, rc, why):
        if on_chunk is None or raised:
            return
        err = _error(rc, why.decode(errors="replace") if why else "") if rc else None
        try:
            on_chunk(chunk.decode(errors="replace") if chunk else "", err)
        except BaseException as e:  # noqa: BLE001 (handed back to the caller below)
            raised.append(e)

    fn = _RESTORE_FN(cb)
    rc = _snapshot_restore(os.fsencode(newdir), os.fsencode(indir), r, height, fn, None,
                           _c.byref(st))
    # The detail is per C thread: this one's, read before anything else runs on it.
    detail = _open_error().decode(errors="replace") if rc else ""
    if raised:
        raise raised[0]
    if rc:
        e = _error(rc, detail)
        e.stat = _stat_dict(st)
        raise e
    return _stat_dict(st)
