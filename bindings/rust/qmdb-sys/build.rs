// SPDX-License-Identifier: Apache-2.0
//! Finds libqmdb through pkg-config (run with std::process::Command: no build dependencies).
//! PKG_CONFIG_PATH selects a non-system install; QMDB_STATIC=1 links libqmdb.a and its
//! private dependencies (liburing, pthread) instead of the shared library.
use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> String {
    let out = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(args)
        .arg("qmdb")
        .output()
        .unwrap_or_else(|e| panic!("qmdb-sys: cannot run pkg-config: {e}"));
    if !out.status.success() {
        panic!(
            "qmdb-sys: pkg-config {:?} qmdb failed (is PKG_CONFIG_PATH set to the install's \
             lib/pkgconfig?): {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("pkg-config output is not UTF-8")
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=QMDB_STATIC");
    let static_link = env::var("QMDB_STATIC").map(|v| v == "1").unwrap_or(false);
    let mut args = vec!["--libs"];
    if static_link {
        args.push("--static");
    }
    let libs = pkg_config(&args);
    for tok in libs.split_whitespace() {
        if let Some(dir) = tok.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = tok.strip_prefix("-l") {
            if lib == "qmdb" && static_link {
                println!("cargo:rustc-link-lib=static=qmdb");
            } else {
                println!("cargo:rustc-link-lib={lib}");
            }
        } else if tok == "-pthread" {
            println!("cargo:rustc-link-lib=pthread");
        }
    }
    // Dependents read it as DEP_QMDB_LIBDIR (the qmdb crate sets an rpath from it).
    let libdir = pkg_config(&["--variable=libdir"]);
    println!("cargo:libdir={}", libdir.trim());
    if !static_link {
        // This crate's own tests (the layout check) find the library without LD_LIBRARY_PATH.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir.trim());
    }
}
