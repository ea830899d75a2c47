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
