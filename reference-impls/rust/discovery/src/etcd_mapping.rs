//! How an endpoint is stored in etcd (§8, DISC-ETCD-1..3): its key under the prefix and its
//! JSON value, both ways.

use crate::{Code, Endpoint, DEFAULT_WEIGHT};

/// DISC-ETCD-1: non-empty, no leading or trailing `/`.
pub fn prefix_ok(prefix: &str) -> bool {
    !prefix.is_empty() && !prefix.starts_with('/') && !prefix.ends_with('/')
}

/// The key of an instance: `/<prefix>/<service>/<instance_id>` (DISC-ETCD-1).
pub fn etcd_key(prefix: &str, service: &str, instance_id: &str) -> String {
    format!("/{prefix}/{service}/{instance_id}")
}

/// The key prefix of a service's instances.
pub fn etcd_service_prefix(prefix: &str, service: &str) -> String {
    format!("/{prefix}/{service}/")
}

/// The value of an instance (DISC-ETCD-2): the five members in order, no whitespace.
pub fn etcd_value(e: &Endpoint) -> Vec<u8> {
    serde_json::to_vec(e).expect("an endpoint serializes")
}

/// The key and value of an endpoint, or `InvalidArgument` (DISC-EP-2, DISC-ETCD-1).
pub fn etcd_encode(prefix: &str, e: &Endpoint) -> Result<(String, Vec<u8>), Code> {
    if !prefix_ok(prefix) || !e.is_valid() {
        return Err(Code::InvalidArgument);
    }
    Ok((etcd_key(prefix, &e.service, &e.instance_id), etcd_value(e)))
}

/// The endpoint an etcd entry holds (DISC-ETCD-3): unknown members ignored, `weight` 100 when
/// missing; `InvalidArgument` for an entry a reader skips.
pub fn etcd_decode(prefix: &str, key: &[u8], value: &[u8]) -> Result<Endpoint, Code> {
    let bad = Code::InvalidArgument;
    if !prefix_ok(prefix) {
        return Err(bad);
    }
    let key = std::str::from_utf8(key).map_err(|_| bad)?;
    let rest = key.strip_prefix(&format!("/{prefix}/")).ok_or(bad)?;
    let (service, instance_id) = rest.split_once('/').ok_or(bad)?;
    let v: serde_json::Value = serde_json::from_slice(value).map_err(|_| bad)?;
    let o = v.as_object().ok_or(bad)?;
    let text = |k: &str| {
        o.get(k)
            .and_then(|x| x.as_str())
            .map(str::to_owned)
            .ok_or(bad)
    };
    let int = |k: &str| o.get(k).and_then(|x| x.as_u64()).ok_or(bad);
    let weight = match o.get("weight") {
        None => DEFAULT_WEIGHT as u64,
        Some(_) => int("weight")?,
    };
    let port = int("port")?;
    if port > 65535 || weight > u32::MAX as u64 {
        return Err(bad);
    }
    let e = Endpoint {
        service: text("service")?,
        instance_id: text("instance_id")?,
        host: text("host")?,
        port: port as u32,
        weight: weight as u32,
    };
    if !e.is_valid() || e.service != service || e.instance_id != instance_id {
        return Err(bad);
    }
    Ok(e)
}
