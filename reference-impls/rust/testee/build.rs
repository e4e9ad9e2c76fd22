//! Compiles `schemas/testee.proto` (kept where it is, at the repository root) with protox
//! (a pure-Rust protobuf compiler, so no `protoc` is needed) and generates prost types.
//!
//! The types also derive serde's traits, with each "one line per protocol" oneof flattened
//! into its message under its field name: `Codec` then serializes to exactly the codec JSON of
//! the vectors and `--codec` (`{"protocol": ..., "limits": {...}, "length_field": {...}}`), and
//! a `Frame`'s fields other than the payload to the field map of the codec's `FrameFields`. The
//! testee hands those to the codec's registry and protocol modules without knowing any protocol.

use std::path::PathBuf;

/// The oneofs with one line per protocol (schemas/testee.proto). Relative paths, so that they
/// match the oneof field only (prost-build matches a path with a leading dot on every prefix,
/// which would include the oneof's variants).
const PER_PROTOCOL_ONEOFS: [&str; 3] = ["Codec.params", "Frame.header", "ProtocolError.detail"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // testee/ -> rust/ -> reference-impls/ -> repository root; FRAMEPROOF_SCHEMAS where the
    // workspace is built outside the repository (cargo-mutants copies it: tools/mutation.sh).
    println!("cargo:rerun-if-env-changed=FRAMEPROOF_SCHEMAS");
    let schemas = match std::env::var_os("FRAMEPROOF_SCHEMAS") {
        Some(dir) => PathBuf::from(dir),
        None => manifest.join("../../../schemas"),
    };
    let proto = schemas.join("testee.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&schemas]).expect("compile schemas/testee.proto");
    let mut config = prost_build::Config::new();
    config
        .bytes(["."])
        .message_attribute(
            ".",
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(default)]",
        )
        .enum_attribute(
            ".",
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(rename_all = \"snake_case\")]",
        )
        .field_attribute(
            ".frameproof.testee.v1.Codec.limits",
            "#[serde(skip_serializing_if = \"Option::is_none\")]",
        );
    for oneof in PER_PROTOCOL_ONEOFS {
        config.field_attribute(
            oneof,
            "#[serde(flatten, skip_serializing_if = \"Option::is_none\")]",
        );
    }
    config
        .compile_fds(fds)
        .expect("generate prost code for testee.proto");
}
