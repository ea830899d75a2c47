// SPDX-License-Identifier: Apache-2.0
//! Tests of the safe binding. QMDB_VECTORS names ../shared/vectors (the test runner sets it).
use qmdb::{Batch, Db, ErrorKind, Options};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);
impl TempDir {
    fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "qmdb-rs-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn db(&self) -> PathBuf {
        self.0.join("db")
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fresh() -> (TempDir, Db) {
    let t = TempDir::new();
    Db::create(t.db(), &Options::default()).unwrap();
    let db = Db::open(t.db(), &Options::default()).unwrap();
    (t, db)
}

fn vectors() -> PathBuf {
    let d = std::env::var("QMDB_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/vectors")
        });
    assert!(
        d.join("example.ops").exists(),
        "vectors not found in {:?}; set QMDB_VECTORS",
        d
    );
    d
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn example_vectors() {
    let (_t, db) = fresh();
    let ops = std::fs::read_to_string(vectors().join("example.ops")).unwrap();
    let expected = std::fs::read_to_string(vectors().join("example.expected")).unwrap();
    let mut got = Vec::new();
    let mut batch = None;
    let mut height = 0;
    for line in ops.lines() {
        let line = line.split('#').next().unwrap();
        let tok: Vec<&str> = line.split_whitespace().collect();
        match tok.as_slice() {
            [] => {}
            ["block", h] => {
                height = h.parse().unwrap();
                batch = Some(Batch::new().unwrap());
            }
            ["tx"] => batch.as_mut().unwrap().tx().unwrap(),
            ["put", k, v] => batch.as_mut().unwrap().put(&unhex(k), &unhex(v)).unwrap(),
            ["del", k] => batch.as_mut().unwrap().delete(&unhex(k)).unwrap(),
            ["commit"] => {
                let root = db.commit(height, batch.as_ref().unwrap()).unwrap();
                got.push(format!("{height} {}", hex(&root)));
                batch = None;
            }
            _ => panic!("bad op line {line:?}"),
        }
    }
    let want: Vec<String> = expected
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got, want);
    assert_eq!(db.get(b"alice").unwrap(), Some(vec![8u8]));
    assert_eq!(db.get(b"zed").unwrap(), None);
}

#[test]
fn proof_round_trip() {
    let (_t, db) = fresh();
    let mut b = Batch::new().unwrap();
    for i in 0..100 {
        b.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    let root = db.commit(1, &b).unwrap();
    let p = db.prove(b"k42", None).unwrap();
    assert_eq!(p.verify(&root, b"k42", Some(b"v42"), Some(1)).unwrap(), 1);
    assert_eq!(p.info().unwrap().absent, 0);
    let e = p.verify(&root, b"k42", Some(b"v43"), Some(1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadProof);
    assert!(!e.detail().is_empty());
    let mut bad = p.clone();
    let mid = bad.0.len() / 2;
    bad.0[mid] ^= 1;
    assert_eq!(
        bad.verify(&root, b"k42", Some(b"v42"), Some(1))
            .unwrap_err()
            .kind(),
        ErrorKind::BadProof
    );
    // Round trip through plain bytes.
    let ex = qmdb::Proof(db.prove(b"nobody", None).unwrap().as_bytes().to_vec());
    assert_eq!(ex.verify(&root, b"nobody", None, None).unwrap(), 1);
    assert_eq!(ex.info().unwrap().absent, 1);
}

#[test]
fn errors_are_results() {
    let (t, db) = fresh();
    let mut b = Batch::new().unwrap();
    assert_eq!(b.put(b"", b"x").unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(
        b.put(&[7u8; 256], b"x").unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(b.put(b"k", b"").unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(db.get(b"").unwrap_err().kind(), ErrorKind::Invalid);
    b.put(b"a", b"1").unwrap();
    let e = db.commit(9, &b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadHeight);
    assert_eq!(e.code(), qmdb_sys::QMDB_BAD_HEIGHT);
    assert_eq!(db.root(Some(99)).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(
        Db::open(t.db(), &Options::default()).err().unwrap().kind(),
        ErrorKind::Busy
    );
    assert_eq!(
        Db::create(t.db(), &Options::default()).unwrap_err().kind(),
        ErrorKind::Exists
    );
    assert_eq!(
        Db::open(t.0.join("none"), &Options::default())
            .err()
            .unwrap()
            .kind(),
        ErrorKind::NotADatabase
    );
    let bad = Options::default().worker_threads(Some(99));
    assert_eq!(
        Db::create(t.0.join("x"), &bad).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    match Db::create("/proc/qmdb-cannot-exist", &Options::default())
        .unwrap_err()
        .kind()
    {
        ErrorKind::Os(_) => {}
        k => panic!("expected an errno, got {k:?}"),
    }
    let io: std::io::Error = db.get(b"").unwrap_err().into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        qmdb::verify(b"junk", &[0; 32], b"k", None, None)
            .unwrap_err()
            .kind(),
        ErrorKind::BadProof
    );
}

#[test]
fn closed_handle() {
    let (_t, db) = fresh();
    let mut b = Batch::new().unwrap();
    b.put(b"a", b"1").unwrap();
    db.close().unwrap();
    assert!(db.is_closed());
    db.close().unwrap(); // a second close is fine
    assert_eq!(db.get(b"a").unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.commit(1, &b).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.height().unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.prove(b"a", None).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.stat().unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.get_many(&[b"a"]).unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn reads_run_concurrently_with_commits() {
    let (_t, db) = fresh();
    let db = Arc::new(db);
    let mut b = Batch::new().unwrap();
    for i in 0..300u32 {
        b.put(format!("k{i}").as_bytes(), &vec![b'v'; i as usize + 1])
            .unwrap();
    }
    db.commit(1, &b).unwrap();
    let vals = db.get_many(&[&b"k0"[..], b"k299", b"none"]).unwrap();
    assert_eq!(vals[0].as_deref(), Some(&b"v"[..]));
    assert_eq!(vals[1].as_ref().map(|v| v.len()), Some(300));
    assert_eq!(vals[2], None);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let v = db.get(b"k5").unwrap().unwrap();
                    assert!(!v.is_empty());
                    n += 1;
                }
                n
            })
        })
        .collect();
    for h in 2..=20u64 {
        b.reset();
        b.put(b"k5", h.to_string().as_bytes()).unwrap();
        db.submit(h, &b).unwrap();
    }
    let root = db.wait(20).unwrap();
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 0);
    assert_eq!(db.root(Some(20)).unwrap(), root);
    assert_eq!(db.get_committed(b"k5").unwrap().unwrap(), b"20");
    let st = db.stat().unwrap();
    assert_eq!(st.height, 20);
    assert_eq!(st.live_entries, 300);
    assert_eq!(st.struct_size, std::mem::size_of::<qmdb::Stats>());
    assert_eq!(qmdb::version_number(), qmdb_sys::QMDB_VERSION_NUMBER);
}

#[test]
fn explicit_options_reach_the_library() {
    let t = TempDir::new();
    Db::create(t.db(), &Options::default()).unwrap();
    let db = Db::open(
        t.db(),
        &Options::default()
            .pipeline(Some(false))
            .io_uring(Some(false))
            .worker_threads(Some(0)),
    )
    .unwrap();
    let st = db.stat().unwrap();
    assert_eq!((st.pipeline, st.io_uring), (0, 0));
}

fn _assert_send_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Db>();
    send::<Batch>();
}

#[test]
fn rollback() {
    let (_t, db) = fresh();
    let mut roots = Vec::new();
    for h in 1..=3u64 {
        let mut b = Batch::new().unwrap();
        b.put(&[h as u8], b"v").unwrap();
        roots.push(db.commit(h, &b).unwrap());
    }
    assert_eq!(db.rollback(4).unwrap_err().kind(), ErrorKind::BadHeight);
    db.rollback(1).unwrap();
    assert_eq!(db.root(None).unwrap(), roots[0]);
    assert_eq!(db.get(&[3u8]).unwrap(), None);
    assert_eq!(db.get(&[1u8]).unwrap(), Some(b"v".to_vec()));
}

/// Two blocks: block 1 puts k0..k199; block 2 (two transactions) updates, inserts and
/// deletes. Returns (roots[0..=2], block 2's operations as owned (tx, key, value)).
type OwnedOp = (u32, Vec<u8>, Option<Vec<u8>>);
fn two_blocks(db: &Db) -> (Vec<qmdb::Root>, Vec<OwnedOp>) {
    let mut roots = vec![db.root(None).unwrap()];
    let mut b = Batch::new().unwrap();
    for i in 0..200 {
        b.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    roots.push(db.commit(1, &b).unwrap());
    let ops: Vec<OwnedOp> = vec![
        (0, b"k3".to_vec(), Some(b"three".to_vec())),
        (0, b"new1".to_vec(), Some(b"n1".to_vec())),
        (1, b"k7".to_vec(), None),
        (1, b"k3".to_vec(), Some(b"drei".to_vec())),
        (1, b"new2".to_vec(), Some(b"n2".to_vec())),
    ];
    let mut b = Batch::new().unwrap();
    let mut tx = 0;
    for (t, k, v) in &ops {
        if *t != tx {
            b.tx().unwrap();
            tx = *t;
        }
        match v {
            Some(v) => b.put(k, v).unwrap(),
            None => b.delete(k).unwrap(),
        }
    }
    roots.push(db.commit(2, &b).unwrap());
    (roots, ops)
}

fn borrow_ops(ops: &[OwnedOp]) -> Vec<qmdb::BlockOp<'_>> {
    ops.iter()
        .map(|(tx, k, v)| qmdb::BlockOp {
            tx: *tx,
            key: k,
            value: v.as_deref(),
        })
        .collect()
}

#[test]
fn multi_key_proof() {
    let (_t, db) = fresh();
    let (roots, _) = two_blocks(&db);
    let keys: Vec<&[u8]> = vec![b"k3", b"nobody", b"k150", b"k7", b"k3"];
    let p = db.prove_many(&keys, None).unwrap();
    let ans = p.verify(&roots[2], &keys, Some(2)).unwrap();
    assert_eq!(ans.height, 2);
    let want: Vec<Option<Vec<u8>>> = vec![
        Some(b"drei".to_vec()),
        None,
        Some(b"v150".to_vec()),
        None, // deleted in block 2
        Some(b"drei".to_vec()),
    ];
    assert_eq!(ans.values, want);
    // The height of the root when none is given; the plain-bytes verifier agrees.
    assert_eq!(
        qmdb::verify_many(p.as_bytes(), &roots[2], &keys, None)
            .unwrap()
            .values,
        want
    );
    // Historical: height 1 under the latest root shows k7 present and k3's old value.
    let h1 = db.prove_many(&keys, Some(1)).unwrap();
    let a1 = h1.verify(&roots[2], &keys, Some(1)).unwrap();
    assert_eq!(a1.values[0].as_deref(), Some(&b"v3"[..]));
    assert_eq!(a1.values[3].as_deref(), Some(&b"v7"[..]));
    // A flipped byte, another root, another key list: rejected with a reason.
    let mut bad = p.clone();
    let mid = bad.0.len() / 2;
    bad.0[mid] ^= 1;
    let e = bad.verify(&roots[2], &keys, Some(2)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadProof);
    assert!(!e.detail().is_empty());
    assert_eq!(
        p.verify(&roots[1], &keys, None).unwrap_err().kind(),
        ErrorKind::BadProof
    );
    let other: Vec<&[u8]> = vec![b"k3", b"nobody", b"k151", b"k7", b"k3"];
    assert_eq!(
        p.verify(&roots[2], &other, Some(2)).unwrap_err().kind(),
        ErrorKind::BadProof
    );
    let none: Vec<&[u8]> = vec![];
    assert_eq!(
        db.prove_many(&none, None).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(
        db.prove_many(&keys, Some(9)).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn block_witness() {
    let (_t, db) = fresh();
    let (roots, ops) = two_blocks(&db);
    let bops = borrow_ops(&ops);
    let w = db.witness(2, Some(&bops)).unwrap();
    assert_eq!(w.verify(&roots[1], 2, &bops, None).unwrap(), roots[2]);
    // With the chain's parameters stated explicitly; other parameters are rejected.
    let st = db.stat().unwrap();
    let par = qmdb::CompactionParams {
        compact_thres: st.compact_thres,
        utilization_ratio: st.utilization_ratio,
        utilization_div: st.utilization_div,
    };
    assert_eq!(
        qmdb::verify_witness(w.as_bytes(), &roots[1], 2, &bops, Some(&par)).unwrap(),
        roots[2]
    );
    let other = qmdb::CompactionParams {
        compact_thres: par.compact_thres + 1,
        ..par
    };
    assert_eq!(
        w.verify(&roots[1], 2, &bops, Some(&other))
            .unwrap_err()
            .kind(),
        ErrorKind::BadProof
    );
    // From the log alone (the block deletes no absent key).
    let wl = db.witness(2, None).unwrap();
    assert_eq!(wl.verify(&roots[1], 2, &bops, None).unwrap(), roots[2]);
    // A changed value, a dropped operation, a wrong pre-root, a flipped byte: rejected.
    let mut changed = bops.clone();
    changed[1].value = Some(b"other");
    let e = w.verify(&roots[1], 2, &changed, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadProof);
    assert!(!e.detail().is_empty());
    assert_eq!(
        w.verify(&roots[1], 2, &bops[1..], None).unwrap_err().kind(),
        ErrorKind::BadProof
    );
    assert_eq!(
        w.verify(&roots[0], 2, &bops, None).unwrap_err().kind(),
        ErrorKind::BadProof
    );
    let mut bad = w.clone();
    let mid = bad.0.len() / 2;
    bad.0[mid] ^= 0x10;
    assert!(bad.verify(&roots[1], 2, &bops, None).is_err());
    // Ops out of transaction order are a malformed argument; block 3 does not exist.
    let mut unordered = bops.clone();
    unordered.swap(0, 4);
    assert_eq!(
        w.verify(&roots[1], 2, &unordered, None).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(db.witness(3, None).unwrap_err().kind(), ErrorKind::NotFound);
}

fn chunk_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "qmsc"))
        .collect();
    v.sort();
    v
}

#[test]
fn snapshot_export_restore_and_chunks() {
    let (t, db) = fresh();
    let (roots, _) = two_blocks(&db);
    let snap = t.0.join("snap");
    let st = db.snapshot_export(&snap, None, 0).unwrap();
    assert_eq!(st.height, 2);
    assert_eq!(st.root, roots[2]);
    let files = chunk_files(&snap);
    assert!(st.chunks > 0);
    assert_eq!(files.len() as u64, st.chunks);
    assert_eq!(
        db.snapshot_export(&snap, None, 0).unwrap_err().kind(),
        ErrorKind::Exists
    );

    // Every exported chunk verifies; a flipped byte, another root or height do not.
    let mut total_entries = 0;
    for f in &files {
        let c = std::fs::read(f).unwrap();
        let info = qmdb::chunk_verify(&c, &roots[2], 2).unwrap();
        assert_eq!(info.height, 2);
        assert!(info.shard < 16);
        assert!(info.twig_begin < info.twig_end);
        total_entries += info.entries;
    }
    assert!(total_entries >= 200);
    let c = std::fs::read(&files[0]).unwrap();
    let mut flipped = c.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 1;
    let e = qmdb::chunk_verify(&flipped, &roots[2], 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadProof);
    assert!(!e.detail().is_empty());
    assert_eq!(
        qmdb::chunk_verify(&c, &roots[1], 2).unwrap_err().kind(),
        ErrorKind::BadProof
    );

    // A wrong trusted root is rejected (and named through the callback); nothing is built.
    let newdir = t.0.join("restored");
    let mut wrong = roots[2];
    wrong[0] ^= 1;
    let mut rejected = Vec::new();
    let e = qmdb::snapshot_restore(&newdir, &snap, &wrong, None, |name, r| {
        rejected.push((name.to_string(), r.map_err(|e| e.kind())))
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadProof);
    assert!(!e.detail().is_empty());
    assert!(!rejected.is_empty());
    assert!(rejected.iter().all(|(_, r)| *r == Err(ErrorKind::BadProof)));
    assert!(!newdir.join("META").exists());

    // The trusted root: every chunk is kept, and the database opens with it.
    let mut kept = 0u64;
    let rst = qmdb::snapshot_restore(&newdir, &snap, &roots[2], Some(2), |name, r| {
        assert!(r.is_ok(), "{name}: {r:?}");
        kept += 1;
    })
    .unwrap();
    assert_eq!(kept, st.chunks);
    assert_eq!(rst.accepted, st.chunks);
    assert_eq!((rst.rejected, rst.missing), (0, 0));
    assert_eq!(rst.root, roots[2]);
    assert_eq!(
        qmdb::snapshot_restore(&newdir, &snap, &roots[2], None, |_, _| {})
            .unwrap_err()
            .kind(),
        ErrorKind::Exists
    );
    let r = Db::open(&newdir, &Options::default()).unwrap();
    assert_eq!(r.height().unwrap(), 2);
    assert_eq!(r.root(None).unwrap(), roots[2]);
    assert_eq!(r.get(b"k3").unwrap(), Some(b"drei".to_vec()));
    assert_eq!(r.get(b"k7").unwrap(), None);
    assert_eq!(r.get(b"k199").unwrap(), Some(b"v199".to_vec()));
    assert_eq!(r.get(b"new2").unwrap(), Some(b"n2".to_vec()));
    // It goes on with the same roots as the source.
    let mut b = Batch::new().unwrap();
    b.put(b"after", b"x").unwrap();
    assert_eq!(r.commit(3, &b).unwrap(), db.commit(3, &b).unwrap());
}

#[test]
fn restore_resumes_when_chunks_arrive() {
    let (t, db) = fresh();
    let (roots, _) = two_blocks(&db);
    let snap = t.0.join("snap");
    let st = db.snapshot_export(&snap, None, 0).unwrap();
    // Move one chunk away: the restore keeps the others and reports it missing.
    let files = chunk_files(&snap);
    let aside = t.0.join("aside.qmsc");
    std::fs::rename(&files[0], &aside).unwrap();
    let newdir = t.0.join("restored");
    let e = qmdb::snapshot_restore(&newdir, &snap, &roots[2], None, |_, _| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    std::fs::rename(&aside, &files[0]).unwrap();
    let rst = qmdb::snapshot_restore(&newdir, &snap, &roots[2], None, |_, _| {}).unwrap();
    assert_eq!(rst.accepted, st.chunks);
    let r = Db::open(&newdir, &Options::default()).unwrap();
    assert_eq!(r.root(None).unwrap(), roots[2]);
}

#[test]
fn backup_opens_with_the_same_root() {
    let (t, db) = fresh();
    let (roots, _) = two_blocks(&db);
    let out = t.0.join("backup");
    db.backup(&out).unwrap();
    let e = db.backup(&out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Exists);
    assert!(!e.detail().is_empty());
    db.close().unwrap();
    assert_eq!(
        db.backup(t.0.join("b2")).unwrap_err().kind(),
        ErrorKind::Closed
    );
    let b = Db::open(&out, &Options::default()).unwrap();
    assert_eq!(b.height().unwrap(), 2);
    assert_eq!(b.root(None).unwrap(), roots[2]);
    assert_eq!(b.get(b"k3").unwrap(), Some(b"drei".to_vec()));
    assert_eq!(b.get(b"k7").unwrap(), None);
    assert_eq!(b.get(b"new1").unwrap(), Some(b"n1".to_vec()));
}

#[test]
fn a_panic_in_the_restore_callback_reaches_the_caller() {
    let (t, db) = fresh();
    let (roots, _) = two_blocks(&db);
    let snap = t.0.join("snap");
    db.snapshot_export(&snap, None, 0).unwrap();
    let newdir = t.0.join("restored");
    let r = std::panic::catch_unwind(|| {
        qmdb::snapshot_restore(&newdir, &snap, &roots[1], None, |_, _| {
            panic!("from the callback")
        })
    });
    let p = r.unwrap_err();
    assert_eq!(p.downcast_ref::<&str>(), Some(&"from the callback"));
}
