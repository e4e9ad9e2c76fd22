//! Generates the prost types of `schemas/testee.proto` (kept at the repository root) with protox,
//! a pure-Rust protobuf compiler, so no `protoc` is needed. Same approach as
//! reference-impls/rust/testee/build.rs, without its serde mapping (this testee reads the few
//! fields it needs by hand).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // tools/third-party/tokio-util/ -> repository root.
    let schemas = manifest.join("../../../schemas");
    let proto = schemas.join("testee.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&schemas]).expect("compile schemas/testee.proto");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate prost code for testee.proto");
}
