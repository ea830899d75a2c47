// SPDX-License-Identifier: Apache-2.0
//! Safe Rust interface to libqmdb, the Quick Merkle Database: a verifiable key-value store
//! that commits a Merkle root over its whole state every block and proves values.
//!
//! ```no_run
//! let dir = "/tmp/qmdb-doc";
//! qmdb::Db::create(dir, &qmdb::Options::default())?;
//! let db = qmdb::Db::open(dir, &qmdb::Options::default())?;
//! let mut b = qmdb::Batch::new()?;
//! b.put(b"alice", b"\x64")?;
//! let root = db.commit(db.height()? + 1, &b)?;
//! assert_eq!(db.get(b"alice")?.as_deref(), Some(&b"\x64"[..]));
//! let proof = db.prove(b"alice", None)?;
//! proof.verify(&root, b"alice", Some(b"\x64"), None)?;
//! # Ok::<(), qmdb::Error>(())
//! ```
//!
//! Threads (the C library's rules, enforced here): `Db` is `Send + Sync`. `get`, `get_many`,
//! `get_committed`, `height` and `root` run concurrently from any number of threads, also
//! while another thread commits; the other methods of one `Db` are serialized by an internal
//! mutex. `close` waits for the calls in progress; afterwards every call is
//! `Err(ErrorKind::Closed)`. `Batch` is `Send` but not `Sync` (one thread at a time).

use qmdb_sys as sys;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::{Mutex, RwLock};

/// A 32-byte state root.
pub type Root = [u8; sys::QMDB_HASH_LEN];

/// What went wrong: one kind per error code of the C library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    Corrupt,
    Invalid,
    BufferTooSmall,
    Exists,
    NotADatabase,
    VersionMismatch,
    /// A durable write failed earlier; close and reopen.
    Panic,
    BadHeight,
    Pruned,
    BadProof,
    TooMany,
    Busy,
    /// From `close` only: every block is durable, only the index checkpoint was lost.
    NoCheckpoint,
    /// A system error: the errno value.
    Os(i32),
    /// A call on a closed `Db`.
    Closed,
    /// A code this version of the binding does not know.
    Unknown(i32),
}

/// An error of the library, with its detail message (file, offset, reason) when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    fn from_code(rc: c_int, detail: String) -> Error {
        let kind = match rc {
            sys::QMDB_NOTFOUND => ErrorKind::NotFound,
            sys::QMDB_CORRUPT => ErrorKind::Corrupt,
            sys::QMDB_INVALID => ErrorKind::Invalid,
            sys::QMDB_BUFFER_TOO_SMALL => ErrorKind::BufferTooSmall,
            sys::QMDB_EXISTS => ErrorKind::Exists,
            sys::QMDB_NOTADB => ErrorKind::NotADatabase,
            sys::QMDB_VERSION_MISMATCH => ErrorKind::VersionMismatch,
            sys::QMDB_PANIC => ErrorKind::Panic,
            sys::QMDB_BAD_HEIGHT => ErrorKind::BadHeight,
            sys::QMDB_PRUNED => ErrorKind::Pruned,
            sys::QMDB_BAD_PROOF => ErrorKind::BadProof,
            sys::QMDB_TOO_MANY => ErrorKind::TooMany,
            sys::QMDB_BUSY => ErrorKind::Busy,
            sys::QMDB_NO_CHECKPOINT => ErrorKind::NoCheckpoint,
            rc if rc < 0 && rc > -4096 => ErrorKind::Os(-rc),
            rc => ErrorKind::Unknown(rc),
        };
        Error { kind, detail }
    }

    fn closed() -> Error {
        Error {
            kind: ErrorKind::Closed,
            detail: String::new(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The library's detail message ("" if none).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The C return code (0 for `Closed`, which has none).
    pub fn code(&self) -> i32 {
        match self.kind {
            ErrorKind::NotFound => sys::QMDB_NOTFOUND,
            ErrorKind::Corrupt => sys::QMDB_CORRUPT,
            ErrorKind::Invalid => sys::QMDB_INVALID,
            ErrorKind::BufferTooSmall => sys::QMDB_BUFFER_TOO_SMALL,
            ErrorKind::Exists => sys::QMDB_EXISTS,
            ErrorKind::NotADatabase => sys::QMDB_NOTADB,
            ErrorKind::VersionMismatch => sys::QMDB_VERSION_MISMATCH,
            ErrorKind::Panic => sys::QMDB_PANIC,
            ErrorKind::BadHeight => sys::QMDB_BAD_HEIGHT,
            ErrorKind::Pruned => sys::QMDB_PRUNED,
            ErrorKind::BadProof => sys::QMDB_BAD_PROOF,
            ErrorKind::TooMany => sys::QMDB_TOO_MANY,
            ErrorKind::Busy => sys::QMDB_BUSY,
            ErrorKind::NoCheckpoint => sys::QMDB_NO_CHECKPOINT,
            ErrorKind::Os(e) => -e,
            ErrorKind::Closed => 0,
            ErrorKind::Unknown(rc) => rc,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = match self.kind {
            ErrorKind::Closed => "use of a closed database handle".to_string(),
            _ => cstr(unsafe { sys::qmdb_strerror(self.code()) }),
        };
        if self.detail.is_empty() {
            write!(f, "qmdb: {msg}")
        } else {
            write!(f, "qmdb: {msg}: {}", self.detail)
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        match e.kind {
            ErrorKind::Os(errno) => std::io::Error::from_raw_os_error(errno),
            ErrorKind::NotFound => std::io::Error::new(std::io::ErrorKind::NotFound, e),
            ErrorKind::Invalid => std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
            _ => std::io::Error::other(e),
        }
    }
}

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn check(rc: c_int) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::from_code(rc, String::new()))
    }
}

/// The loaded library's version, "major.minor.patch".
pub fn version() -> String {
    cstr(unsafe { sys::qmdb_version() })
}

/// MAJOR*10000 + MINOR*100 + PATCH of the loaded library.
pub fn version_number() -> i32 {
    unsafe { sys::qmdb_version_number() }
}

/// Options of `Db::create` and `Db::open` (the fields of `qmdb_options`); `default()` gives
/// the library's defaults.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    raw: sys::qmdb_options,
}

impl Default for Options {
    fn default() -> Options {
        let mut raw = unsafe { std::mem::zeroed::<sys::qmdb_options>() };
        unsafe { sys::qmdb_options_init(&mut raw) };
        Options { raw }
    }
}

impl Options {
    /// Worker threads of the commit: `None` = the library's choice, `Some(0)` = none.
    pub fn worker_threads(mut self, n: Option<u32>) -> Self {
        self.raw.worker_threads = n
            .map(|n| n.min(i32::MAX as u32) as i32)
            .unwrap_or(sys::QMDB_AUTO);
        self
    }
    /// The block pipeline on or off (`None`: the library's choice).
    pub fn pipeline(mut self, on: Option<bool>) -> Self {
        self.raw.pipeline = on.map(|b| b as i32).unwrap_or(sys::QMDB_AUTO);
        self
    }
    /// Batched reads through io_uring, or the pread pool (`None`: the library's choice).
    pub fn io_uring(mut self, on: Option<bool>) -> Self {
        self.raw.io_uring = on.map(|b| b as i32).unwrap_or(sys::QMDB_AUTO);
        self
    }
    /// `sys::QMDB_INDEXER_MEMORY`, `_HYBRID` or `_AUTO`.
    pub fn indexer(mut self, indexer: u32) -> Self {
        self.raw.indexer = indexer;
        self
    }
    /// `sys::QMDB_OPEN_*` flags.
    pub fn flags(mut self, flags: u32) -> Self {
        self.raw.flags = flags;
        self
    }
    pub fn read_queue_depth(mut self, qd: u32) -> Self {
        self.raw.read_queue_depth = qd;
        self
    }
    pub fn history_blocks(mut self, n: u64) -> Self {
        self.raw.history_blocks = n;
        self
    }
    pub fn compact_thres(mut self, n: u64) -> Self {
        self.raw.compact_thres = n;
        self
    }
    /// The raw C options, for fields without a setter.
    pub fn raw_mut(&mut self) -> &mut sys::qmdb_options {
        &mut self.raw
    }
}

fn path_c(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error {
        kind: ErrorKind::Invalid,
        detail: "path holds a NUL byte".into(),
    })
}

// The detail of a failed create/open is per C thread: read it on the same thread, right away.
fn open_error(rc: c_int) -> Error {
    Error::from_code(rc, cstr(unsafe { sys::qmdb_open_error() }))
}

#[derive(Clone, Copy)]
struct Handle(NonNull<sys::qmdb_db>);
// The C library allows a handle to move between threads and documents which calls may run
// concurrently; Db enforces the rest with its locks.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

/// An open database.
pub struct Db {
    handle: RwLock<Option<Handle>>,
    writer: Mutex<()>,
}

/// The main statistics of an open database (all fields of `qmdb_stats`).
pub type Stats = sys::qmdb_stats;

impl Db {
    /// Creates a database at height 0 in `dir` (created if missing).
    pub fn create<P: AsRef<Path>>(dir: P, opt: &Options) -> Result<()> {
        let d = path_c(dir.as_ref())?;
        let rc = unsafe { sys::qmdb_create(d.as_ptr(), &opt.raw) };
        if rc != 0 {
            return Err(open_error(rc));
        }
        Ok(())
    }

    /// Opens the database in `dir`, recovering to its latest committed height.
    pub fn open<P: AsRef<Path>>(dir: P, opt: &Options) -> Result<Db> {
        let d = path_c(dir.as_ref())?;
        let mut h = ptr::null_mut();
        let rc = unsafe { sys::qmdb_open(d.as_ptr(), &opt.raw, &mut h) };
        if rc != 0 {
            return Err(open_error(rc));
        }
        let h = NonNull::new(h).expect("qmdb_open returned 0 and no handle");
        Ok(Db {
            handle: RwLock::new(Some(Handle(h))),
            writer: Mutex::new(()),
        })
    }

    /// Closes the handle; later calls return `ErrorKind::Closed`, a second close is `Ok`.
    /// Waits for the calls in progress on other threads.
    pub fn close(&self) -> Result<()> {
        let mut g = self.handle.write().unwrap_or_else(|e| e.into_inner());
        match g.take() {
            None => Ok(()),
            Some(h) => {
                let rc = unsafe { sys::qmdb_close(h.0.as_ptr()) };
                if rc != 0 {
                    return Err(open_error(rc));
                }
                Ok(())
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.handle
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Runs f with the handle, concurrently with other readers.
    fn read<T>(&self, f: impl FnOnce(*mut sys::qmdb_db) -> Result<T>) -> Result<T> {
        let g = self.handle.read().unwrap_or_else(|e| e.into_inner());
        let h = g.ok_or_else(Error::closed)?;
        f(h.0.as_ptr())
    }

    /// Runs f with the handle, one writer at a time (readers still run); a failure carries
    /// qmdb_last_error's detail.
    fn write<T>(
        &self,
        f: impl FnOnce(*mut sys::qmdb_db) -> c_int,
        ok: impl FnOnce() -> T,
    ) -> Result<T> {
        let g = self.handle.read().unwrap_or_else(|e| e.into_inner());
        let h = g.ok_or_else(Error::closed)?;
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let rc = f(h.0.as_ptr());
        if rc != 0 {
            let detail = cstr(unsafe { sys::qmdb_last_error(h.0.as_ptr()) });
            return Err(Error::from_code(rc, detail));
        }
        Ok(ok())
    }

    /// The latest durable height.
    pub fn height(&self) -> Result<u64> {
        self.read(|h| Ok(unsafe { sys::qmdb_height(h) }))
    }

    /// The state root of `height` (`None`: the latest).
    pub fn root(&self, height: Option<u64>) -> Result<Root> {
        let mut out = [0u8; 32];
        self.read(|h| {
            check(unsafe { sys::qmdb_root(h, height.unwrap_or(u64::MAX), out.as_mut_ptr()) })
        })?;
        Ok(out)
    }

    fn get_impl(&self, key: &[u8], committed: bool) -> Result<Option<Vec<u8>>> {
        self.read(|h| {
            let mut buf = vec![0u8; 256];
            loop {
                let mut vlen = 0usize;
                let rc = unsafe {
                    let f = if committed {
                        sys::qmdb_get_committed
                    } else {
                        sys::qmdb_get
                    };
                    f(
                        h,
                        key.as_ptr().cast(),
                        key.len(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        &mut vlen,
                    )
                };
                match rc {
                    0 => {
                        buf.truncate(vlen);
                        return Ok(Some(buf));
                    }
                    sys::QMDB_NOTFOUND => return Ok(None),
                    sys::QMDB_BUFFER_TOO_SMALL => buf.resize(vlen, 0),
                    rc => return Err(Error::from_code(rc, String::new())),
                }
            }
        })
    }

    /// The value of `key` after the latest committed or submitted block (`None`: absent).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_impl(key, false)
    }

    /// The value of `key` at the latest durable height.
    pub fn get_committed(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_impl(key, true)
    }

    /// Reads many keys in one batch of SSD reads.
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        const SLOT: usize = 256;
        let mut vals = vec![0u8; keys.len() * SLOT];
        let mut reads: Vec<sys::qmdb_read> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| sys::qmdb_read {
                key: k.as_ref().as_ptr().cast(),
                klen: k.as_ref().len(),
                buf: unsafe { vals.as_mut_ptr().add(i * SLOT) }.cast::<c_void>(),
                cap: SLOT,
                vlen: 0,
                rc: 0,
            })
            .collect();
        self.read(|h| check(unsafe { sys::qmdb_get_many(h, reads.as_mut_ptr(), reads.len()) }))?;
        let mut out = Vec::with_capacity(keys.len());
        for (i, r) in reads.iter().enumerate() {
            out.push(match r.rc {
                0 => Some(vals[i * SLOT..i * SLOT + r.vlen].to_vec()),
                sys::QMDB_NOTFOUND => None,
                sys::QMDB_BUFFER_TOO_SMALL => self.get(keys[i].as_ref())?,
                rc => return Err(Error::from_code(rc, String::new())),
            });
        }
        Ok(out)
    }

    /// Applies `b` as block `height` (the latest + 1), makes it durable, returns its root.
    pub fn commit(&self, height: u64, b: &Batch) -> Result<Root> {
        let mut out = [0u8; 32];
        self.write(
            |h| unsafe { sys::qmdb_commit(h, height, b.raw.as_ptr(), out.as_mut_ptr()) },
            || (),
        )?;
        Ok(out)
    }

    /// Applies `b` as block `height`; returns once its writes are visible to `get`.
    pub fn submit(&self, height: u64, b: &Batch) -> Result<()> {
        self.write(
            |h| unsafe { sys::qmdb_submit(h, height, b.raw.as_ptr()) },
            || (),
        )
    }

    /// Waits until submitted block `height` is durable; returns its root.
    pub fn wait(&self, height: u64) -> Result<Root> {
        let mut out = [0u8; 32];
        self.write(
            |h| unsafe { sys::qmdb_wait(h, height, out.as_mut_ptr()) },
            || (),
        )?;
        Ok(out)
    }

    /// Prunes what the history setting allows.
    pub fn prune(&self) -> Result<()> {
        self.write(|h| unsafe { sys::qmdb_prune(h) }, || ())
    }

    /// Rolls back to committed block `height` (a chain reorganization); the next block is
    /// `height + 1`. `BadHeight` above the latest, `Pruned` outside the window (nothing
    /// changed in either case).
    pub fn rollback(&self, height: u64) -> Result<()> {
        self.write(|h| unsafe { sys::qmdb_rollback(h, height) }, || ())
    }

    /// The statistics (waits for blocks in flight).
    pub fn stat(&self) -> Result<Stats> {
        let mut st = Stats {
            struct_size: std::mem::size_of::<Stats>(),
            ..Default::default()
        };
        self.write(|h| unsafe { sys::qmdb_stat(h, &mut st) }, || ())?;
        Ok(st)
    }

    /// A proof of `key`'s value or absence at `height` (`None`: the latest).
    pub fn prove(&self, key: &[u8], height: Option<u64>) -> Result<Proof> {
        let mut p: *mut u8 = ptr::null_mut();
        let mut n = 0usize;
        self.write(
            |h| unsafe {
                sys::qmdb_prove(
                    h,
                    key.as_ptr().cast(),
                    key.len(),
                    height.unwrap_or(u64::MAX),
                    &mut p,
                    &mut n,
                )
            },
            || (),
        )?;
        Ok(Proof(unsafe { take_proof_bytes(p, n) }))
    }

    /// One proof of the values (or absence) of all `keys` at `height` (`None`: the latest),
    /// sharing what the keys have in common. Repeats are allowed; 1 to
    /// `qmdb_sys::QMDB_MPROOF_MAX_KEYS` keys.
    pub fn prove_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        height: Option<u64>,
    ) -> Result<MultiProof> {
        let (ptrs, lens) = key_arrays(keys);
        let mut p: *mut u8 = ptr::null_mut();
        let mut n = 0usize;
        self.write(
            |h| unsafe {
                sys::qmdb_prove_many(
                    h,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    ptrs.len(),
                    height.unwrap_or(u64::MAX),
                    &mut p,
                    &mut n,
                )
            },
            || (),
        )?;
        Ok(MultiProof(unsafe { take_proof_bytes(p, n) }))
    }

    /// The witness of committed block `height`: what a verifier without a database needs to
    /// compute the block's root from the root of `height - 1`. `ops`: the block's operations
    /// as committed; `None` builds it from the log alone (see `qmdb_witness`).
    pub fn witness(&self, height: u64, ops: Option<&[BlockOp]>) -> Result<Witness> {
        let raw = ops.map(raw_ops);
        let (op_ptr, nops) = match &raw {
            Some(r) => (r.as_ptr(), r.len()),
            None => (ptr::null(), 0),
        };
        let mut p: *mut u8 = ptr::null_mut();
        let mut n = 0usize;
        self.write(
            |h| unsafe { sys::qmdb_witness(h, height, op_ptr, nops, &mut p, &mut n) },
            || (),
        )?;
        Ok(Witness(unsafe { take_proof_bytes(p, n) }))
    }

    /// Writes a snapshot of the state of `height` (`None`: the latest) into `outdir`: chunk
    /// files of up to `twigs_per_chunk` twigs (0: the library's default), then the MANIFEST.
    pub fn snapshot_export<P: AsRef<Path>>(
        &self,
        outdir: P,
        height: Option<u64>,
        twigs_per_chunk: u64,
    ) -> Result<SnapshotStat> {
        let d = path_c(outdir.as_ref())?;
        let mut st = SnapshotStat {
            struct_size: std::mem::size_of::<SnapshotStat>(),
            ..Default::default()
        };
        self.write(
            |h| unsafe {
                sys::qmdb_snapshot_export(
                    h,
                    d.as_ptr(),
                    height.unwrap_or(u64::MAX),
                    twigs_per_chunk,
                    &mut st,
                )
            },
            || (),
        )?;
        Ok(st)
    }

    /// Writes a consistent, openable copy of the committed state into `outdir` (a new
    /// directory, or one without a database), verified by a full open before it returns.
    pub fn backup<P: AsRef<Path>>(&self, outdir: P) -> Result<()> {
        let d = path_c(outdir.as_ref())?;
        self.write(|h| unsafe { sys::qmdb_backup(h, d.as_ptr()) }, || ())
    }
}

/// Copies a proof the library allocated into a `Vec` and frees it with `qmdb_proof_free`.
unsafe fn take_proof_bytes(p: *mut u8, n: usize) -> Vec<u8> {
    let bytes = std::slice::from_raw_parts(p, n).to_vec();
    sys::qmdb_proof_free(p);
    bytes
}

/// The key pointer and length arrays of the multi-key calls (borrowing `keys`).
fn key_arrays<K: AsRef<[u8]>>(keys: &[K]) -> (Vec<*const c_void>, Vec<usize>) {
    keys.iter()
        .map(|k| (k.as_ref().as_ptr().cast::<c_void>(), k.as_ref().len()))
        .unzip()
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// One block's worth of transactions; transaction 0 is open.
pub struct Batch {
    raw: NonNull<sys::qmdb_batch>,
}

// A batch is plain memory owned by its holder: it may move to another thread, but is not
// safe to share (no Sync).
unsafe impl Send for Batch {}

impl Batch {
    pub fn new() -> Result<Batch> {
        let mut b = ptr::null_mut();
        check(unsafe { sys::qmdb_batch_new(&mut b) })?;
        Ok(Batch {
            raw: NonNull::new(b).expect("qmdb_batch_new returned 0 and no batch"),
        })
    }

    /// Starts the next transaction.
    pub fn tx(&mut self) -> Result<()> {
        check(unsafe { sys::qmdb_batch_tx(self.raw.as_ptr()) })
    }

    /// Adds put(key, value) to the current transaction.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check(unsafe {
            sys::qmdb_batch_put(
                self.raw.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        })
    }

    /// Adds delete(key) to the current transaction.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        check(unsafe { sys::qmdb_batch_del(self.raw.as_ptr(), key.as_ptr().cast(), key.len()) })
    }

    /// Empties the batch for reuse.
    pub fn reset(&mut self) {
        unsafe { sys::qmdb_batch_reset(self.raw.as_ptr()) }
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        unsafe { sys::qmdb_batch_ops(self.raw.as_ptr()) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        unsafe { sys::qmdb_batch_free(self.raw.as_ptr()) }
    }
}

/// What a proof's header says (not verified).
pub type ProofInfo = sys::qmdb_proof_info;

/// A proof made by `Db::prove`: plain bytes, checked by `verify` without any database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof(pub Vec<u8>);

impl Proof {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Checks that `key` has `value` (`None`: is absent) at `height` (`None`: the height of
    /// `root`) under the trusted `root`; returns the height the proof states.
    pub fn verify(
        &self,
        root: &Root,
        key: &[u8],
        value: Option<&[u8]>,
        height: Option<u64>,
    ) -> Result<u64> {
        verify(&self.0, root, key, value, height)
    }

    pub fn info(&self) -> Result<ProofInfo> {
        let mut info = ProofInfo {
            struct_size: std::mem::size_of::<ProofInfo>(),
            ..Default::default()
        };
        check(unsafe { sys::qmdb_proof_info_get(self.0.as_ptr(), self.0.len(), &mut info) })?;
        Ok(info)
    }
}

/// The verifier on raw proof bytes (see `Proof::verify`).
pub fn verify(
    proof: &[u8],
    root: &Root,
    key: &[u8],
    value: Option<&[u8]>,
    height: Option<u64>,
) -> Result<u64> {
    let mut proved = 0u64;
    let mut why: *const c_char = ptr::null();
    let (vp, vl) = match value {
        Some(v) => (v.as_ptr().cast::<c_void>(), v.len()),
        None => (ptr::null(), 0),
    };
    let rc = unsafe {
        sys::qmdb_proof_verify(
            proof.as_ptr(),
            proof.len(),
            root.as_ptr(),
            key.as_ptr().cast(),
            key.len(),
            vp,
            vl,
            height.unwrap_or(u64::MAX),
            &mut proved,
            &mut why,
        )
    };
    if rc != 0 {
        return Err(Error::from_code(rc, cstr(why)));
    }
    Ok(proved)
}

/// A multi-key proof made by `Db::prove_many`: plain bytes, checked by `verify` without any
/// database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiProof(pub Vec<u8>);

/// What a verified multi-key proof shows: its height and, per key in the order given, the
/// value (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiProofAnswer {
    pub height: u64,
    pub values: Vec<Option<Vec<u8>>>,
}

impl MultiProof {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Checks the proof for `keys` (the list it was built for, in the same order) at
    /// `height` (`None`: the height of `root`) under the trusted `root`.
    pub fn verify<K: AsRef<[u8]>>(
        &self,
        root: &Root,
        keys: &[K],
        height: Option<u64>,
    ) -> Result<MultiProofAnswer> {
        verify_many(&self.0, root, keys, height)
    }
}

/// The multi-key verifier on raw proof bytes (see `MultiProof::verify`).
pub fn verify_many<K: AsRef<[u8]>>(
    proof: &[u8],
    root: &Root,
    keys: &[K],
    height: Option<u64>,
) -> Result<MultiProofAnswer> {
    let (ptrs, lens) = key_arrays(keys);
    let mut answers = vec![
        sys::qmdb_proof_answer {
            present: 0,
            value: ptr::null(),
            vlen: 0,
        };
        keys.len()
    ];
    let mut proved = 0u64;
    let mut why: *const c_char = ptr::null();
    let rc = unsafe {
        sys::qmdb_proof_verify_many(
            proof.as_ptr(),
            proof.len(),
            root.as_ptr(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            ptrs.len(),
            height.unwrap_or(u64::MAX),
            &mut proved,
            answers.as_mut_ptr(),
            &mut why,
        )
    };
    if rc != 0 {
        return Err(Error::from_code(rc, cstr(why)));
    }
    // The answers point into `proof`, which outlives this copy.
    let values = answers
        .iter()
        .map(|a| {
            (a.present != 0 && !a.value.is_null())
                .then(|| unsafe { std::slice::from_raw_parts(a.value, a.vlen) }.to_vec())
        })
        .collect();
    Ok(MultiProofAnswer {
        height: proved,
        values,
    })
}

/// One operation of a block, for witnesses: transaction `tx` (0-based, non-decreasing along
/// the block), `key`, and `value` (`None`: delete).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockOp<'a> {
    pub tx: u32,
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

fn raw_ops(ops: &[BlockOp]) -> Vec<sys::qmdb_block_op> {
    ops.iter()
        .map(|o| sys::qmdb_block_op {
            tx: o.tx,
            key: o.key.as_ptr().cast(),
            klen: o.key.len(),
            value: o.value.map_or(ptr::null(), |v| v.as_ptr().cast()),
            vlen: o.value.map_or(0, |v| v.len()),
        })
        .collect()
}

/// The compaction parameters of a chain (fixed when its database was created).
pub type CompactionParams = sys::qmdb_compaction_params;

/// A block witness made by `Db::witness`: plain bytes, checked by `verify` without any
/// database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness(pub Vec<u8>);

impl Witness {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Checks the witness of block `height` against the trusted root of `height - 1` and
    /// the block's operations; returns the block's post-state root. `params`: the chain's
    /// compaction parameters, which the witness must state (`None`: take the witness's).
    pub fn verify(
        &self,
        pre_root: &Root,
        height: u64,
        ops: &[BlockOp],
        params: Option<&CompactionParams>,
    ) -> Result<Root> {
        verify_witness(&self.0, pre_root, height, ops, params)
    }
}

/// The witness verifier on raw bytes (see `Witness::verify`).
pub fn verify_witness(
    witness: &[u8],
    pre_root: &Root,
    height: u64,
    ops: &[BlockOp],
    params: Option<&CompactionParams>,
) -> Result<Root> {
    let raw = raw_ops(ops);
    let mut post = [0u8; sys::QMDB_HASH_LEN];
    let mut why: *const c_char = ptr::null();
    let rc = unsafe {
        sys::qmdb_witness_verify(
            witness.as_ptr(),
            witness.len(),
            pre_root.as_ptr(),
            height,
            if raw.is_empty() {
                ptr::null()
            } else {
                raw.as_ptr()
            },
            raw.len(),
            params.map_or(ptr::null(), |p| p as *const CompactionParams),
            post.as_mut_ptr(),
            &mut why,
        )
    };
    if rc != 0 {
        return Err(Error::from_code(rc, cstr(why)));
    }
    Ok(post)
}

/// What a verified snapshot chunk holds.
pub type ChunkInfo = sys::qmdb_chunk_info;

/// Verifies one snapshot chunk (a file of `Db::snapshot_export`) against the trusted state
/// `root` of `height`.
pub fn chunk_verify(chunk: &[u8], root: &Root, height: u64) -> Result<ChunkInfo> {
    let mut info = ChunkInfo {
        struct_size: std::mem::size_of::<ChunkInfo>(),
        ..Default::default()
    };
    let mut why: *const c_char = ptr::null();
    let rc = unsafe {
        sys::qmdb_chunk_verify(
            chunk.as_ptr(),
            chunk.len(),
            root.as_ptr(),
            height,
            &mut info,
            &mut why,
        )
    };
    if rc != 0 {
        return Err(Error::from_code(rc, cstr(why)));
    }
    Ok(info)
}

/// What a snapshot export wrote or a restore did.
pub type SnapshotStat = sys::qmdb_snapshot_stat;

struct RestoreCb<'a> {
    f: &'a mut dyn FnMut(&str, Result<()>),
    panic: Option<Box<dyn std::any::Any + Send>>,
}

unsafe extern "C" fn restore_trampoline(
    arg: *mut c_void,
    chunk: *const c_char,
    rc: c_int,
    why: *const c_char,
) {
    let cb = &mut *arg.cast::<RestoreCb>();
    if cb.panic.is_some() {
        return;
    }
    let name = cstr(chunk);
    let res = if rc == 0 {
        Ok(())
    } else {
        Err(Error::from_code(rc, cstr(why)))
    };
    // A panic must not unwind into C: keep it and resume it once the library returned.
    let f = &mut *cb.f;
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&name, res))) {
        cb.panic = Some(p);
    }
}

/// Restores the snapshot in `indir` (MANIFEST + chunks) into the new database `newdir`,
/// trusting only `root` (and `height`; `None`: the manifest's). Every chunk is verified
/// before it is kept; the call can be repeated as more chunks arrive. `on_chunk` is called
/// with each chunk's file name and `Ok(())` when it was kept or the error (`BadProof`, with
/// the reason) when it was rejected. Returns once the database is built and opens with
/// `root`; `Err(NotFound)` while chunks are missing, `Err(BadProof)` if any was rejected
/// (the good ones stay kept), `Err(Exists)` if `newdir` already holds a database.
pub fn snapshot_restore<P: AsRef<Path>, Q: AsRef<Path>>(
    newdir: P,
    indir: Q,
    root: &Root,
    height: Option<u64>,
    mut on_chunk: impl FnMut(&str, Result<()>),
) -> Result<SnapshotStat> {
    let nd = path_c(newdir.as_ref())?;
    let id = path_c(indir.as_ref())?;
    let mut st = SnapshotStat {
        struct_size: std::mem::size_of::<SnapshotStat>(),
        ..Default::default()
    };
    let mut cb = RestoreCb {
        f: &mut on_chunk,
        panic: None,
    };
    let rc = unsafe {
        sys::qmdb_snapshot_restore(
            nd.as_ptr(),
            id.as_ptr(),
            root.as_ptr(),
            height.unwrap_or(u64::MAX),
            Some(restore_trampoline),
            (&mut cb as *mut RestoreCb).cast(),
            &mut st,
        )
    };
    // The detail of a failed restore is per C thread: read it right away.
    let err = (rc != 0).then(|| open_error(rc));
    if let Some(p) = cb.panic.take() {
        std::panic::resume_unwind(p);
    }
    match err {
        Some(e) => Err(e),
        None => Ok(st),
    }
}
