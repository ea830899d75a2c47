// SPDX-License-Identifier: Apache-2.0
//! A tour of the Rust binding: create, commit a block, read, prove and verify.
//!
//!     cargo run --example tour -- /tmp/qmdb-rs-example
use qmdb::{Batch, Db, ErrorKind, Options};

fn main() -> Result<(), qmdb::Error> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "qmdb-rs-example".into());
    Db::create(&dir, &Options::default())?;
    let db = Db::open(&dir, &Options::default())?;
    let mut b = Batch::new()?;
    b.put(b"alice", b"\x64")?;
    b.put(b"bob", b"\x07")?;
    b.tx()?;
    b.delete(b"bob")?;
    let root = db.commit(db.height()? + 1, &b)?;
    println!("height {} root {:02x?}", db.height()?, &root[..4]);
    println!(
        "alice = {:?}, bob = {:?}",
        db.get(b"alice")?,
        db.get(b"bob")?
    );
    let proof = db.prove(b"alice", None)?;
    // A light client needs only the proof, the trusted root and the claim.
    println!(
        "proof verified at height {}",
        proof.verify(&root, b"alice", Some(b"\x64"), None)?
    );
    match proof.verify(&root, b"alice", Some(b"\x65"), None) {
        Err(e) if e.kind() == ErrorKind::BadProof => println!("a false claim is refused: {e}"),
        other => panic!("unexpected {other:?}"),
    }
    db.close()
}
