// SPDX-License-Identifier: Apache-2.0
//! The tests, examples and benchmarks of this crate run against the libqmdb that pkg-config
//! found (qmdb-sys reports its directory), without LD_LIBRARY_PATH: an rpath to it.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_QMDB_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_QMDB_LIBDIR") {
        if !dir.is_empty()
            && std::env::var("QMDB_STATIC")
                .map(|v| v != "1")
                .unwrap_or(true)
        {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
