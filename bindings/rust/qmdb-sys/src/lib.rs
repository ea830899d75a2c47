// SPDX-License-Identifier: Apache-2.0
//! Raw declarations of the C API in `qmdb.h` (libqmdb 0.1). Everything here is `unsafe`;
//! the `qmdb` crate is the safe interface. Struct layouts mirror the header exactly; the
//! tests check them against the sizes the library reports in `struct_size`.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

pub const QMDB_HASH_LEN: usize = 32;
pub const QMDB_MAX_KEY_LEN: usize = 255;
pub const QMDB_MPROOF_MAX_KEYS: usize = 1 << 20;
pub const QMDB_VERSION_MAJOR: c_int = 0;
pub const QMDB_VERSION_MINOR: c_int = 1;
pub const QMDB_VERSION_PATCH: c_int = 0;
pub const QMDB_VERSION_NUMBER: c_int =
    QMDB_VERSION_MAJOR * 10000 + QMDB_VERSION_MINOR * 100 + QMDB_VERSION_PATCH;

pub const QMDB_OK: c_int = 0;
pub const QMDB_NOTFOUND: c_int = -30900;
pub const QMDB_CORRUPT: c_int = -30901;
pub const QMDB_INVALID: c_int = -30902;
pub const QMDB_BUFFER_TOO_SMALL: c_int = -30903;
pub const QMDB_EXISTS: c_int = -30904;
pub const QMDB_NOTADB: c_int = -30905;
pub const QMDB_VERSION_MISMATCH: c_int = -30906;
pub const QMDB_PANIC: c_int = -30907;
pub const QMDB_BAD_HEIGHT: c_int = -30908;
pub const QMDB_PRUNED: c_int = -30909;
pub const QMDB_BAD_PROOF: c_int = -30910;
pub const QMDB_TOO_MANY: c_int = -30911;
pub const QMDB_BUSY: c_int = -30912;
pub const QMDB_NO_CHECKPOINT: c_int = -30913;

pub const QMDB_AUTO: i32 = -1;
pub const QMDB_INDEXER_AUTO: u32 = 0xffff_ffff;
pub const QMDB_INDEXER_MEMORY: u32 = 0;
pub const QMDB_INDEXER_HYBRID: u32 = 1;
pub const QMDB_OPEN_FAST: u32 = 0x1;
pub const QMDB_OPEN_NO_AUTO_PRUNE: u32 = 0x2;
pub const QMDB_OPEN_SET_HISTORY: u32 = 0x4;
pub const QMDB_OPEN_RDONLY: u32 = 0x8;
pub const QMDB_OPEN_NO_PIPELINE: u32 = 0x10;
pub const QMDB_OPEN_DIRECT_IO: u32 = 0x20;
pub const QMDB_OPEN_SALVAGE: u32 = 0x40;

#[repr(C)]
pub struct qmdb_db {
    _private: [u8; 0],
}
#[repr(C)]
pub struct qmdb_batch {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qmdb_options {
    pub struct_size: usize,
    pub compact_thres: u64,
    pub utilization_ratio: u32,
    pub utilization_div: u32,
    pub entry_segment_bytes: u64,
    pub twig_segment_bytes: u64,
    pub history_blocks: u64,
    pub flags: u32,
    pub read_queue_depth: u32,
    pub indexer: u32,
    pub worker_threads: i32,
    pub pipeline: i32,
    pub io_uring: i32,
    pub hybrid_merge_changes: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qmdb_read {
    pub key: *const c_void,
    pub klen: usize,
    pub buf: *mut c_void,
    pub cap: usize,
    pub vlen: usize,
    pub rc: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct qmdb_stats {
    pub struct_size: usize,
    pub height: u64,
    pub live_entries: u64,
    pub live_with_sentries: u64,
    pub total_entries: u64,
    pub unpruned_entries: u64,
    pub index_dram_bytes: u64,
    pub index_ssd_bytes: u64,
    pub index_merges: u64,
    pub index_page_reads: u64,
    pub indexer: u32,
    pub index_resumed_shards: u32,
    pub tree_dram_bytes: u64,
    pub cache_dram_bytes: u64,
    pub ssd_bytes: u64,
    pub entry_file_bytes: u64,
    pub twig_file_bytes: u64,
    pub compactions: u64,
    pub warm_hits: u64,
    pub pruned_twigs: u64,
    pub batched_reads: u64,
    pub sha256_compressions: u64,
    pub blocks_committed: u64,
    pub pipeline: u32,
    pub io_uring: u32,
    pub compact_thres: u64,
    pub utilization_ratio: u32,
    pub utilization_div: u32,
    pub history_blocks: u64,
    pub index_replayed_blocks: u64,
    pub index_replayed_changes: u64,
    pub rollback_reactivated: u64,
    pub rollback_entries_read: u64,
    pub rollback_walked: u64,
    pub page_cache_reads: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct qmdb_proof_info {
    pub struct_size: usize,
    pub format_version: u32,
    pub absent: c_int,
    pub deactivated: c_int,
    pub shard: c_uint,
    pub height: u64,
    pub entries: c_uint,
    pub upper_levels: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qmdb_proof_answer {
    pub present: c_int,
    pub value: *const u8,
    pub vlen: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct qmdb_block_op {
    pub tx: u32,
    pub key: *const c_void,
    pub klen: usize,
    /// NULL: delete.
    pub value: *const c_void,
    pub vlen: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct qmdb_compaction_params {
    pub compact_thres: u64,
    pub utilization_ratio: u32,
    pub utilization_div: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct qmdb_chunk_info {
    pub struct_size: usize,
    pub format_version: u32,
    pub shard: c_uint,
    pub tail: c_int,
    pub height: u64,
    pub next_sn: u64,
    pub sn_start: u64,
    pub twig_begin: u64,
    pub twig_end: u64,
    pub summaries: u64,
    pub log_bytes: u64,
    pub entries: u64,
    pub live: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct qmdb_snapshot_stat {
    pub struct_size: usize,
    pub height: u64,
    pub root: [u8; QMDB_HASH_LEN],
    pub chunks: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub missing: u64,
    pub bytes: u64,
    pub entries: u64,
    pub live: u64,
}

pub type qmdb_restore_fn = Option<
    unsafe extern "C" fn(arg: *mut c_void, chunk: *const c_char, rc: c_int, why: *const c_char),
>;

pub type qmdb_check_fn = Option<unsafe extern "C" fn(arg: *mut c_void, problem: *const c_char)>;

extern "C" {
    pub fn qmdb_strerror(rc: c_int) -> *const c_char;
    pub fn qmdb_version() -> *const c_char;
    pub fn qmdb_version_number() -> c_int;
    pub fn qmdb_options_init(opt: *mut qmdb_options);
    pub fn qmdb_create(dir: *const c_char, opt: *const qmdb_options) -> c_int;
    pub fn qmdb_open(dir: *const c_char, opt: *const qmdb_options, out: *mut *mut qmdb_db)
        -> c_int;
    pub fn qmdb_open_error() -> *const c_char;
    pub fn qmdb_close(db: *mut qmdb_db) -> c_int;
    pub fn qmdb_last_error(db: *mut qmdb_db) -> *const c_char;
    pub fn qmdb_height(db: *mut qmdb_db) -> u64;
    pub fn qmdb_root(db: *mut qmdb_db, height: u64, out: *mut u8) -> c_int;
    pub fn qmdb_shard_root(db: *mut qmdb_db, shard: c_uint, out: *mut u8) -> c_int;
    pub fn qmdb_get(
        db: *mut qmdb_db,
        key: *const c_void,
        klen: usize,
        buf: *mut c_void,
        cap: usize,
        vlen: *mut usize,
    ) -> c_int;
    pub fn qmdb_get_many(db: *mut qmdb_db, reads: *mut qmdb_read, n: usize) -> c_int;
    pub fn qmdb_get_committed(
        db: *mut qmdb_db,
        key: *const c_void,
        klen: usize,
        buf: *mut c_void,
        cap: usize,
        vlen: *mut usize,
    ) -> c_int;
    pub fn qmdb_get_many_committed(db: *mut qmdb_db, reads: *mut qmdb_read, n: usize) -> c_int;
    pub fn qmdb_batch_new(out: *mut *mut qmdb_batch) -> c_int;
    pub fn qmdb_batch_free(b: *mut qmdb_batch);
    pub fn qmdb_batch_reset(b: *mut qmdb_batch);
    pub fn qmdb_batch_tx(b: *mut qmdb_batch) -> c_int;
    pub fn qmdb_batch_put(
        b: *mut qmdb_batch,
        key: *const c_void,
        klen: usize,
        val: *const c_void,
        vlen: usize,
    ) -> c_int;
    pub fn qmdb_batch_del(b: *mut qmdb_batch, key: *const c_void, klen: usize) -> c_int;
    pub fn qmdb_batch_ops(b: *const qmdb_batch) -> usize;
    pub fn qmdb_batch_txs(b: *const qmdb_batch) -> usize;
    pub fn qmdb_commit(
        db: *mut qmdb_db,
        height: u64,
        b: *const qmdb_batch,
        root_out: *mut u8,
    ) -> c_int;
    pub fn qmdb_submit(db: *mut qmdb_db, height: u64, b: *const qmdb_batch) -> c_int;
    pub fn qmdb_wait(db: *mut qmdb_db, height: u64, root_out: *mut u8) -> c_int;
    pub fn qmdb_prune(db: *mut qmdb_db) -> c_int;
    pub fn qmdb_rollback(db: *mut qmdb_db, height: u64) -> c_int;
    pub fn qmdb_stat(db: *mut qmdb_db, st: *mut qmdb_stats) -> c_int;
    pub fn qmdb_check(
        dir: *const c_char,
        f: qmdb_check_fn,
        arg: *mut c_void,
        problems: *mut u64,
    ) -> c_int;
    pub fn qmdb_prove(
        db: *mut qmdb_db,
        key: *const c_void,
        klen: usize,
        height: u64,
        out: *mut *mut u8,
        outlen: *mut usize,
    ) -> c_int;
    pub fn qmdb_proof_free(proof: *mut u8);
    pub fn qmdb_proof_verify(
        proof: *const u8,
        len: usize,
        root: *const u8,
        key: *const c_void,
        klen: usize,
        value: *const c_void,
        vlen: usize,
        height: u64,
        proved_height_out: *mut u64,
        why: *mut *const c_char,
    ) -> c_int;
    pub fn qmdb_proof_info_get(proof: *const u8, len: usize, info: *mut qmdb_proof_info) -> c_int;
    pub fn qmdb_prove_many(
        db: *mut qmdb_db,
        keys: *const *const c_void,
        klens: *const usize,
        nkeys: usize,
        height: u64,
        out: *mut *mut u8,
        outlen: *mut usize,
    ) -> c_int;
    pub fn qmdb_proof_verify_many(
        proof: *const u8,
        len: usize,
        root: *const u8,
        keys: *const *const c_void,
        klens: *const usize,
        nkeys: usize,
        height: u64,
        proved_height_out: *mut u64,
        answers: *mut qmdb_proof_answer,
        why: *mut *const c_char,
    ) -> c_int;
    pub fn qmdb_witness(
        db: *mut qmdb_db,
        height: u64,
        ops: *const qmdb_block_op,
        nops: usize,
        out: *mut *mut u8,
        outlen: *mut usize,
    ) -> c_int;
    pub fn qmdb_witness_verify(
        witness: *const u8,
        len: usize,
        pre_root: *const u8,
        height: u64,
        ops: *const qmdb_block_op,
        nops: usize,
        params: *const qmdb_compaction_params,
        post_root: *mut u8,
        why: *mut *const c_char,
    ) -> c_int;
    pub fn qmdb_chunk_verify(
        chunk: *const u8,
        len: usize,
        root: *const u8,
        height: u64,
        info: *mut qmdb_chunk_info,
        why: *mut *const c_char,
    ) -> c_int;
    pub fn qmdb_snapshot_export(
        db: *mut qmdb_db,
        outdir: *const c_char,
        height: u64,
        twigs_per_chunk: u64,
        st: *mut qmdb_snapshot_stat,
    ) -> c_int;
    pub fn qmdb_snapshot_restore(
        newdir: *const c_char,
        indir: *const c_char,
        root: *const u8,
        height: u64,
        f: qmdb_restore_fn,
        arg: *mut c_void,
        st: *mut qmdb_snapshot_stat,
    ) -> c_int;
    pub fn qmdb_backup(db: *mut qmdb_db, outdir: *const c_char) -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn layouts_match_the_library() {
        unsafe {
            let mut o = std::mem::MaybeUninit::<qmdb_options>::zeroed().assume_init();
            qmdb_options_init(&mut o);
            assert_eq!(o.struct_size, size_of::<qmdb_options>());
            assert_eq!(o.worker_threads, QMDB_AUTO);
            assert_eq!(o.indexer, QMDB_INDEXER_AUTO);
            let mut info = qmdb_proof_info {
                struct_size: size_of::<qmdb_proof_info>(),
                ..Default::default()
            };
            assert_eq!(
                qmdb_proof_info_get(b"x".as_ptr(), 1, &mut info),
                QMDB_BAD_PROOF
            );
            assert_eq!(qmdb_version_number(), QMDB_VERSION_NUMBER);
            // qmdb_chunk_verify writes info->struct_size = sizeof(qmdb_chunk_info) on
            // success only; here: a short struct_size is refused, the right one is not.
            let root = [0u8; QMDB_HASH_LEN];
            let mut ci = qmdb_chunk_info {
                struct_size: size_of::<qmdb_chunk_info>() - 1,
                ..Default::default()
            };
            let mut why: *const c_char = std::ptr::null();
            assert_eq!(
                qmdb_chunk_verify(b"x".as_ptr(), 1, root.as_ptr(), 1, &mut ci, &mut why),
                QMDB_INVALID
            );
            ci.struct_size = size_of::<qmdb_chunk_info>();
            assert_eq!(
                qmdb_chunk_verify(b"x".as_ptr(), 1, root.as_ptr(), 1, &mut ci, &mut why),
                QMDB_BAD_PROOF
            );
            assert!(!why.is_null());
            // qmdb_snapshot_restore refuses a short struct_size before anything else.
            let mut st = qmdb_snapshot_stat {
                struct_size: size_of::<qmdb_snapshot_stat>() - 1,
                ..Default::default()
            };
            let nowhere = c"/nonexistent/qmdb-sys-layout".as_ptr();
            let rc = qmdb_snapshot_restore(
                nowhere,
                nowhere,
                root.as_ptr(),
                u64::MAX,
                None,
                std::ptr::null_mut(),
                &mut st,
            );
            assert_eq!(rc, QMDB_INVALID);
            st.struct_size = size_of::<qmdb_snapshot_stat>();
            let rc = qmdb_snapshot_restore(
                nowhere,
                nowhere,
                root.as_ptr(),
                u64::MAX,
                None,
                std::ptr::null_mut(),
                &mut st,
            );
            assert!(rc != QMDB_OK && rc != QMDB_INVALID, "rc {rc}");
            assert_eq!(st.struct_size, size_of::<qmdb_snapshot_stat>());
        }
    }
}
