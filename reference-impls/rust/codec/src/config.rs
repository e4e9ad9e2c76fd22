//! The codec configuration: the JSON object every program takes with `--codec`, the vectors
//! carry under `"codec"` and `schemas/testee.proto` defines as `Codec`
//! (reference-impls/README.md, "The profile syntax"):
//!
//! ```json
//! {"protocol": "length-field", "limits": {"max_payload": 1048576}, "length_field": {"offset": 2, "size": -4}}
//! ```
//!
//! `protocol` is required; `limits.max_payload` absent or 0 means the spec default. Every other
//! top-level key is a protocol's parameter section (`length_field`, ...): this module keeps it,
//! and the protocol's module (through the registry) accepts its own section and refuses any
//! other. Unknown keys, wrong types and out-of-range numbers are [`ConfigError::Invalid`].

use std::fmt;

use serde_json::{Map, Value};

use crate::ProtocolError;

/// Why a configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// Malformed: not an object, an unknown key, a wrong type, a number out of range. A usage
    /// error for the programs.
    Invalid(String),
    /// Well-formed, but this implementation does not implement it (an unregistered protocol, an
    /// endpoint it does not have, a parameter beyond its bounds). The testee answers `skipped`.
    Unsupported(String),
    /// A configuration the protocol's spec itself classifies as an error (e.g. `LF-FMT-3`):
    /// the testee reports it as the answer's error.
    Protocol(ProtocolError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Invalid(m) | ConfigError::Unsupported(m) => f.write_str(m),
            ConfigError::Protocol(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<ProtocolError> for ConfigError {
    fn from(e: ProtocolError) -> Self {
        ConfigError::Protocol(e)
    }
}

/// A parsed codec configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct CodecConfig {
    /// The registered protocol name, e.g. `"standard"`.
    pub protocol: String,
    /// `limits.max_payload`; 0 = the spec default.
    pub max_payload: u64,
    /// The protocol parameter sections (every top-level key but `protocol` and `limits`).
    params: Map<String, Value>,
    /// The object as given (key order kept), for reports.
    json: Value,
}

impl CodecConfig {
    /// `--protocol NAME`: short for `{"protocol": NAME}`.
    pub fn named(protocol: &str) -> CodecConfig {
        let mut o = Map::new();
        o.insert("protocol".into(), Value::String(protocol.into()));
        CodecConfig {
            protocol: protocol.into(),
            max_payload: 0,
            params: Map::new(),
            json: Value::Object(o),
        }
    }

    /// Parses the JSON text of `--codec`.
    pub fn parse(text: &str) -> Result<CodecConfig, ConfigError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| ConfigError::Invalid(format!("codec is not valid JSON: {e}")))?;
        CodecConfig::from_value(v)
    }

    /// Checks the shape of a codec object (the protocol's own section is checked by the
    /// protocol, [`CodecConfig::section`]).
    pub fn from_value(json: Value) -> Result<CodecConfig, ConfigError> {
        let Value::Object(o) = &json else {
            return Err(invalid("codec must be a JSON object"));
        };
        let protocol = match o.get("protocol") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(invalid("codec.protocol must be a non-empty string")),
            None => return Err(invalid("codec.protocol is required")),
        };
        let mut max_payload = 0;
        let mut params = Map::new();
        for (k, v) in o {
            match k.as_str() {
                "protocol" => {}
                "limits" => {
                    let mut limits = Section::new("limits", Some(v))?;
                    max_payload = limits.u64("max_payload", 0)?;
                    limits.done()?;
                }
                _ => {
                    params.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(CodecConfig {
            protocol,
            max_payload,
            params,
            json,
        })
    }

    /// The protocol's parameter section `key` (absent: every field at its default), after
    /// checking that no other section is present: a protocol calls this once, with the one key
    /// it owns (`None` for a protocol without parameters).
    pub fn section(&self, key: Option<&str>) -> Result<Section<'_>, ConfigError> {
        if let Some(other) = self.params.keys().find(|k| Some(k.as_str()) != key) {
            return Err(invalid(format!(
                "unknown key {other:?} in the codec of protocol {:?}",
                self.protocol
            )));
        }
        Section::new(key.unwrap_or(""), key.and_then(|k| self.params.get(k)))
    }

    /// The object as given, as one line of JSON (`{"protocol": "standard"}`).
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        write_json(&self.json, &mut s);
        s
    }
}

fn invalid(m: impl Into<String>) -> ConfigError {
    ConfigError::Invalid(m.into())
}

/// One JSON object of a codec (`limits`, a protocol's parameters), read field by field; fields
/// not read are unknown keys ([`Section::done`]). `null` counts as absent.
#[derive(Debug)]
pub struct Section<'a> {
    name: String,
    fields: Option<&'a Map<String, Value>>,
    read: Vec<&'static str>,
}

impl<'a> Section<'a> {
    fn new(name: &str, v: Option<&'a Value>) -> Result<Section<'a>, ConfigError> {
        let fields = match v {
            None | Some(Value::Null) => None,
            Some(Value::Object(o)) => Some(o),
            Some(_) => return Err(invalid(format!("codec.{name} must be a JSON object"))),
        };
        Ok(Section {
            name: name.into(),
            fields,
            read: Vec::new(),
        })
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.read.push(key);
        self.fields
            .and_then(|f| f.get(key))
            .filter(|v| !v.is_null())
    }

    fn bad(&self, key: &str, what: &str) -> ConfigError {
        invalid(format!("codec.{}.{key} must be {what}", self.name))
    }

    /// A field as given (`None` when absent or null), for a protocol that reads it itself.
    pub fn value(&mut self, key: &'static str) -> Option<&'a Value> {
        self.get(key)
    }

    /// A non-negative integer field.
    pub fn u64(&mut self, key: &'static str, default: u64) -> Result<u64, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .ok_or_else(|| self.bad(key, "a non-negative integer")),
        }
    }

    /// An unsigned 32-bit integer field.
    pub fn u32(&mut self, key: &'static str, default: u32) -> Result<u32, ConfigError> {
        let v = self.u64(key, default as u64)?;
        u32::try_from(v).map_err(|_| self.bad(key, "an integer from 0 to 4294967295"))
    }

    /// A signed 32-bit integer field.
    pub fn i32(&mut self, key: &'static str, default: i32) -> Result<i32, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| self.bad(key, "a 32-bit integer")),
        }
    }

    /// Refuses the fields that were not read.
    pub fn done(self) -> Result<(), ConfigError> {
        let Some(f) = self.fields else {
            return Ok(());
        };
        match f.keys().find(|k| !self.read.contains(&k.as_str())) {
            Some(k) => Err(invalid(format!("unknown key {k:?} in codec.{}", self.name))),
            None => Ok(()),
        }
    }
}

/// JSON with the separators of the programs' reports (`", "`, `": "`).
pub(crate) fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_json(x, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(text: &str) -> String {
        match CodecConfig::parse(text) {
            Err(ConfigError::Invalid(m)) => m,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn parses_the_contract_example_and_keeps_it() {
        let text = r#"{"protocol": "length-field", "limits": {"max_payload": 1048576},
            "length_field": {"offset": 2, "size": -4}}"#;
        let c = CodecConfig::parse(text).unwrap();
        assert_eq!(c.protocol, "length-field");
        assert_eq!(c.max_payload, 1048576);
        let mut s = c.section(Some("length_field")).unwrap();
        assert_eq!(s.u32("offset", 0).unwrap(), 2);
        assert_eq!(s.i32("size", 2).unwrap(), -4);
        s.done().unwrap();
        assert_eq!(
            c.to_json(),
            r#"{"protocol": "length-field", "limits": {"max_payload": 1048576}, "length_field": {"offset": 2, "size": -4}}"#
        );
        assert_eq!(
            CodecConfig::named("standard").to_json(),
            r#"{"protocol": "standard"}"#
        );
        assert_eq!(
            CodecConfig::parse(r#"{"protocol":"standard"}"#).unwrap(),
            CodecConfig::named("standard")
        );
    }

    #[test]
    fn defaults_and_nulls() {
        let c = CodecConfig::parse(r#"{"protocol": "length-field", "limits": null}"#).unwrap();
        assert_eq!(c.max_payload, 0);
        let mut s = c.section(Some("length_field")).unwrap();
        assert_eq!(
            (s.u32("offset", 0).unwrap(), s.i32("size", 2).unwrap()),
            (0, 2)
        );
        s.done().unwrap();
        let c = CodecConfig::parse(r#"{"protocol": "x", "limits": {}}"#).unwrap();
        assert_eq!(c.max_payload, 0);
    }

    #[test]
    fn malformed_codecs_are_invalid() {
        assert!(bad("").contains("not valid JSON"));
        assert!(bad("{\"protocol\": \"standard\"").contains("not valid JSON"));
        assert!(bad("[1]").contains("JSON object"));
        assert!(bad("{}").contains("protocol is required"));
        assert!(bad(r#"{"protocol": 3}"#).contains("non-empty string"));
        assert!(bad(r#"{"protocol": ""}"#).contains("non-empty string"));
        assert!(bad(r#"{"protocol": "standard", "limits": 5}"#).contains("codec.limits"));
        assert!(bad(r#"{"protocol": "standard", "limits": {"max": 5}}"#).contains("\"max\""));
        assert!(
            bad(r#"{"protocol": "standard", "limits": {"max_payload": -1}}"#)
                .contains("max_payload")
        );
        assert!(
            bad(r#"{"protocol": "standard", "limits": {"max_payload": 1.5}}"#)
                .contains("max_payload")
        );
    }

    #[test]
    fn sections_refuse_unknown_keys_and_types() {
        let c = CodecConfig::parse(r#"{"protocol": "standard", "length_field": {}}"#).unwrap();
        let e = c.section(None).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Invalid(m) if m.contains("length_field")),
            "{e}"
        );
        let c = CodecConfig::parse(r#"{"protocol": "p", "p": {"a": 1, "b": 2}}"#).unwrap();
        let mut s = c.section(Some("p")).unwrap();
        assert_eq!(s.u64("a", 0).unwrap(), 1);
        assert!(s.done().unwrap_err().to_string().contains("\"b\""));
        let c = CodecConfig::parse(
            r#"{"protocol": "p", "p": {"a": "1", "b": 4294967296, "c": 2147483648}}"#,
        )
        .unwrap();
        let mut s = c.section(Some("p")).unwrap();
        assert!(s.u64("a", 0).is_err());
        assert!(s.u32("b", 0).is_err());
        assert!(s.i32("c", 0).is_err());
        let c = CodecConfig::parse(r#"{"protocol": "p", "p": 7}"#).unwrap();
        assert!(c.section(Some("p")).is_err());
    }
}
