//! A frame's fields as the outside world names them (the testee's messages, the vectors).

#[allow(unused_imports)]
use super::*;

/// A frame's fields: the payload, and every other field by the name the vectors and
/// `schemas/testee.proto` (`Frame`) give it. Fields at their default may be left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrameFields {
    pub payload: Bytes,
    pub header: Map<String, Value>,
}

impl FrameFields {
    /// An unsigned header field (0 when absent); `Err` if it is not an integer up to `max`.
    pub fn uint(&self, key: &str, max: u64) -> Result<u64, String> {
        match self.header.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v
                .as_u64()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("frame field {key} = {v} does not fit (0..={max})")),
        }
    }
}

impl std::fmt::Display for FrameFields {
    /// `{"flag": 129, "sequence": 3} + 5 payload bytes`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut header = String::new();
        crate::config::write_json(&Value::Object(self.header.clone()), &mut header);
        write!(f, "{header} + {} payload bytes", self.payload.len())
    }
}
