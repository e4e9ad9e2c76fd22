//! The registry: protocol name -> protocol module. The only place that lists the protocols.
//!
//! A program hands a [`CodecConfig`] and a [`Visitor`] to [`with_protocol`], which builds the
//! named protocol from the configuration and calls the visitor with it. The visitor's
//! `visit::<P>` is generic, so everything after this one lookup is compiled for the concrete
//! protocol: no dynamic dispatch per frame, and no program ever branches on a protocol name.
//!
//! Adding a protocol: write its module (a type implementing [`Protocol`]) and add one line to
//! the `registry!` list at the end of this file.

use crate::config::{CodecConfig, ConfigError};
use crate::protocol::Protocol;

/// Code that runs with whichever protocol a configuration names.
pub trait Visitor {
    type Output;
    fn visit<P: Protocol>(self, protocol: P) -> Self::Output;
}

macro_rules! registry {
    ($($module:ident :: $protocol:ident),* $(,)?) => {
        /// The registered protocol names, in registration order.
        pub const PROTOCOLS: &[&str] = &[$(<crate::$module::$protocol as Protocol>::NAME),*];

        /// Builds the protocol `cfg` names and runs `visitor` with it. An unregistered name is
        /// [`ConfigError::Unsupported`]; a configuration the protocol refuses is its error.
        pub fn with_protocol<V: Visitor>(
            cfg: &CodecConfig,
            visitor: V,
        ) -> Result<V::Output, ConfigError> {
            $(
                if cfg.protocol == <crate::$module::$protocol as Protocol>::NAME {
                    let p = <crate::$module::$protocol as Protocol>::from_config(cfg)?;
                    return Ok(visitor.visit(p));
                }
            )*
            Err(ConfigError::Unsupported(format!(
                "protocol {:?} is not implemented (this implementation has: {})",
                cfg.protocol,
                PROTOCOLS.join(", ")
            )))
        }
    };
}

// One line per protocol.
registry! {
    standard::Standard,
    length_field::LengthField,
    rpc::Rpc,
    websocket::WebSocket,
}

/// Checks a configuration (builds its protocol) without using it.
pub fn check(cfg: &CodecConfig) -> Result<(), ConfigError> {
    struct Check;
    impl Visitor for Check {
        type Output = ();
        fn visit<P: Protocol>(self, _: P) {}
    }
    with_protocol(cfg, Check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{FrameFields, ServerSession};
    use bytes::BytesMut;

    /// Encodes a frame of the named protocol and decodes it again.
    struct RoundTrip(&'static [u8]);
    impl Visitor for RoundTrip {
        type Output = (&'static str, Vec<u8>, Vec<u8>);
        fn visit<P: Protocol>(self, p: P) -> Self::Output {
            let f = p
                .frame(FrameFields {
                    payload: bytes::Bytes::from_static(self.0),
                    ..Default::default()
                })
                .unwrap();
            let mut wire = BytesMut::new();
            p.encode(&f, &mut wire).unwrap();
            let mut d = p.decoder();
            let (frames, err) = crate::FrameDecoder::feed(&mut d, &wire);
            assert_eq!((frames.len(), err), (1, None));
            let mut s = p.session("", false).unwrap();
            let mut out = BytesMut::new();
            s.extend(&wire);
            assert_eq!(s.finish(&mut out).frames, 1);
            (P::NAME, wire.to_vec(), P::payload(&frames[0]).to_vec())
        }
    }

    fn round_trip(codec: &str) -> (&'static str, Vec<u8>, Vec<u8>) {
        with_protocol(&CodecConfig::parse(codec).unwrap(), RoundTrip(b"abc")).unwrap()
    }

    #[test]
    fn lists_every_protocol_once() {
        assert_eq!(PROTOCOLS, &["standard", "length-field", "rpc", "websocket"]);
    }

    #[test]
    fn names_reach_their_modules() {
        let (name, wire, payload) = round_trip(r#"{"protocol": "standard"}"#);
        assert_eq!(
            (name, &wire[..], &payload[..]),
            ("standard", &b"\x00\x00\x03\x00abc"[..], &b"abc"[..])
        );
        let (name, wire, _) = round_trip(r#"{"protocol": "length-field"}"#);
        assert_eq!((name, &wire[..]), ("length-field", &b"\x03\x00abc"[..]));
        let (_, wire, _) = round_trip(
            r#"{"protocol": "length-field", "length_field": {"offset": 1, "size": -4}}"#,
        );
        assert_eq!(&wire[..], b"\x00\x00\x00\x00\x03abc");
        let (name, wire, payload) = round_trip(r#"{"protocol": "rpc", "rpc": {"max_body": 64}}"#);
        assert_eq!(
            (name, &wire[..4], &payload[..]),
            ("rpc", &b"GRPC"[..], &b"abc"[..])
        );
    }

    #[test]
    fn refusals() {
        let cfg = |s: &str| CodecConfig::parse(s).unwrap();
        assert!(matches!(
            check(&cfg(r#"{"protocol": "smtp"}"#)),
            Err(ConfigError::Unsupported(m)) if m.contains("standard, length-field, rpc, websocket")
        ));
        match check(&cfg(
            r#"{"protocol": "length-field", "length_field": {"size": 3}}"#,
        )) {
            Err(ConfigError::Protocol(e)) => assert_eq!((e.requirement, e.offset), ("LF-FMT-3", 0)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            check(&cfg(
                r#"{"protocol": "length-field", "length_field": {"offset": 16777217}}"#
            )),
            Err(ConfigError::Unsupported(_))
        ));
        for bad in [
            r#"{"protocol": "standard", "length_field": {}}"#,
            r#"{"protocol": "length-field", "length_field": {"sise": 2}}"#,
            r#"{"protocol": "length-field", "length_field": {"size": "2"}}"#,
            r#"{"protocol": "length-field", "rpc": {}}"#,
        ] {
            assert!(
                matches!(check(&cfg(bad)), Err(ConfigError::Invalid(_))),
                "{bad}"
            );
        }
        assert_eq!(
            check(&cfg(
                r#"{"protocol": "standard", "limits": {"max_payload": 5}}"#
            )),
            Ok(())
        );
    }
}
