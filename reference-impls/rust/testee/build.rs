//! Compiles `schemas/testee.proto` (kept where it is, at the repository root) with protox
//! (a pure-Rust protobuf compiler, so no `protoc` is needed) and generates prost types.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // testee/ -> rust/ -> reference-impls/ -> repository root.
    let schemas = manifest.join("../../../schemas");
    let proto = schemas.join("testee.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&schemas]).expect("compile schemas/testee.proto");
    prost_build::Config::new()
        .bytes(["."])
        .compile_fds(fds)
        .expect("generate prost code for testee.proto");
}
