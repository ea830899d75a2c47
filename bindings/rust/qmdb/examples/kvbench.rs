// SPDX-License-Identifier: Apache-2.0
//! The bindings benchmark in Rust (see examples/kvbench.c): N puts in blocks of 10,000 (one
//! commit per block), N single gets, N gets through get_many in batches of 10,000.
//!
//!     cargo run --release --example kvbench -- DIR [N]
use qmdb::{Batch, Db, Options};
use std::time::Instant;

const BLOCK: usize = 10_000;

fn main() -> Result<(), qmdb::Error> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: kvbench DIR [N]");
    let n: usize = args
        .next()
        .map(|s| s.parse().expect("N"))
        .unwrap_or(100_000);
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("key{i:013}").into_bytes()).collect();
    let val = [0xabu8; 32];
    Db::create(&dir, &Options::default())?;
    let db = Db::open(&dir, &Options::default())?;
    let mut b = Batch::new()?;

    let t0 = Instant::now();
    let mut h = 0;
    for chunk in keys.chunks(BLOCK) {
        b.reset();
        for k in chunk {
            b.put(k, &val)?;
        }
        h += 1;
        db.commit(h, &b)?;
    }
    let t_put = t0.elapsed().as_secs_f64();

    let t0 = Instant::now();
    for k in &keys {
        db.get(k)?.expect("a key is missing");
    }
    let t_get = t0.elapsed().as_secs_f64();

    let t0 = Instant::now();
    for chunk in keys.chunks(BLOCK) {
        for v in db.get_many(chunk)? {
            v.expect("a key is missing");
        }
    }
    let t_many = t0.elapsed().as_secs_f64();
    println!(
        "lang=rust n={n} put_commit_ops_s={:.0} get_ops_s={:.0} get_many_ops_s={:.0}",
        n as f64 / t_put,
        n as f64 / t_get,
        n as f64 / t_many
    );
    db.close()
}
