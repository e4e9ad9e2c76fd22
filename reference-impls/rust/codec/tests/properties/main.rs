//! Property tests: encode/decode round trips, independence from how the stream is split into
//! chunks (STD-STR-1, LF-STR-1), error classification that does not depend on the split, the
//! matchers against simple models, and the server sessions (what they write after each chunk,
//! for any split, against a model built from the decoder).
//!
//! One module a job: `common` (feeding a stream in chunks, the serve model), then the properties
//! of `standard` and `length-field`, of the matchers, of `rpc`, of `websocket`, and of the
//! servers' in-place path (`drain`).

mod common;
mod drain;
mod matchers;
mod rpc;
mod standard_length_field;
mod websocket;
