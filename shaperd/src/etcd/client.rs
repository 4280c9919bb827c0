//! The client of etcd's v3 JSON API (see the module docs of
//! [`crate::etcd`]): endpoints tried in turn, TLS from the `[etcd]` table,
//! and the JSON encodings of keys, values and txn operations.

use super::config::{read_pem, EtcdConfig};
use crate::store::{decode, StoreError};
use base64::Engine as _;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub(super) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(super) fn unb64(what: &str, s: &str) -> Result<Vec<u8>, StoreError> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| StoreError::Decode {
            key: what.to_string(),
            message: format!("bad base64: {e}"),
        })
}

/// An int64 of the JSON API (a string, or a number).
pub(super) fn int(v: &Value, field: &str) -> i64 {
    match v.get(field) {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// The first key after every key starting with `prefix`.
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// One key-value of a range answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Kv {
    pub key: String,
    pub value: Vec<u8>,
    pub lease: i64,
    /// The revision of the key's last write (for compare-and-swap).
    pub mod_revision: i64,
}

/// Key-values of a range answer (`kvs`), decoded; never panics.
pub fn parse_kvs(v: &Value) -> Result<Vec<Kv>, StoreError> {
    let Some(kvs) = v.get("kvs") else {
        return Ok(Vec::new());
    };
    let kvs = kvs.as_array().ok_or_else(|| StoreError::Decode {
        key: "kvs".into(),
        message: "not a list".into(),
    })?;
    kvs.iter()
        .map(|kv| {
            let key = unb64("key", kv.get("key").and_then(Value::as_str).unwrap_or(""))?;
            let key = String::from_utf8(key).map_err(|_| StoreError::Decode {
                key: "key".into(),
                message: "not UTF-8".into(),
            })?;
            let value = unb64(&key, kv.get("value").and_then(Value::as_str).unwrap_or(""))?;
            Ok(Kv {
                lease: int(kv, "lease"),
                mod_revision: int(kv, "mod_revision"),
                key,
                value,
            })
        })
        .collect()
}

/// etcd's JSON API on a list of endpoints.
#[derive(Debug)]
pub struct EtcdClient {
    http: reqwest::Client,
    endpoints: Vec<String>,
    current: AtomicUsize,
}

impl EtcdClient {
    pub fn new(cfg: &EtcdConfig) -> Result<Self, StoreError> {
        let timeout = Duration::from_secs_f64(cfg.request_timeout_s);
        let tls_err = |key: &str, e: String| StoreError::Tls(format!("[etcd] {key}: {e}"));
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(timeout)
            .connect_timeout(timeout);
        if let Some(f) = &cfg.ca_file {
            let pem = read_pem(f).map_err(|e| tls_err("ca_file", e))?;
            let roots = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| tls_err("ca_file", format!("{}: {e}", f.display())))?;
            builder = builder.tls_built_in_root_certs(false);
            for c in roots {
                builder = builder.add_root_certificate(c);
            }
        }
        if let (Some(cert), Some(key)) = (&cfg.cert_file, &cfg.key_file) {
            crate::auth::check_private_key_file(key)
                .map_err(|e| tls_err("key_file", e.to_string()))?;
            let mut pem = read_pem(cert).map_err(|e| tls_err("cert_file", e))?;
            pem.push(b'\n');
            pem.extend(read_pem(key).map_err(|e| tls_err("key_file", e))?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| {
                tls_err("cert_file", format!("{} with its key: {e}", cert.display()))
            })?;
            builder = builder.identity(id);
        }
        let http = builder
            .build()
            .map_err(|e| StoreError::Unreachable(e.to_string()))?;
        Ok(Self {
            http,
            endpoints: cfg
                .endpoints
                .iter()
                .map(|e| e.trim_end_matches('/').to_string())
                .collect(),
            current: AtomicUsize::new(0),
        })
    }

    /// `POST <endpoint><path>` with a JSON body, trying every endpoint from
    /// the last one that answered.
    pub async fn call(&self, path: &str, body: &Value) -> Result<Value, StoreError> {
        let n = self.endpoints.len().max(1);
        let start = self.current.load(Ordering::Relaxed);
        let mut errors = Vec::new();
        for i in 0..n {
            let idx = (start + i) % n;
            let Some(ep) = self.endpoints.get(idx) else {
                break;
            };
            match self.call_one(ep, path, body).await {
                Ok(v) => {
                    self.current.store(idx, Ordering::Relaxed);
                    return Ok(v);
                }
                Err(StoreError::Unreachable(e)) => {
                    tracing::debug!(endpoint = %ep, error = %e, "etcd endpoint failed: trying the next");
                    errors.push(format!("{ep}: {e}"));
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Unreachable(errors.join("; ")))
    }

    async fn call_one(&self, ep: &str, path: &str, body: &Value) -> Result<Value, StoreError> {
        let resp = self
            .http
            .post(format!("{ep}{path}"))
            .json(body)
            .send()
            .await
            .map_err(|e| StoreError::Unreachable(e.to_string()))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| StoreError::Unreachable(e.to_string()))?;
        // The keepalive stream answers `{"result": {...}}` lines: the first.
        let first = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
        let v: Value = decode(path, first)?;
        if status.is_server_error() {
            // No leader, shutting down, timeouts: another member may answer.
            return Err(StoreError::Unreachable(format!("HTTP {status}: {v}")));
        }
        if !status.is_success() || v.get("error").is_some() {
            return Err(StoreError::Refused(format!("HTTP {status}: {v}")));
        }
        Ok(v)
    }

    pub async fn range(&self, key: &[u8], range_end: Option<&[u8]>) -> Result<Vec<Kv>, StoreError> {
        let mut body = json!({ "key": b64(key) });
        if let Some(end) = range_end {
            body["range_end"] = json!(b64(end));
        }
        parse_kvs(&self.call("/v3/kv/range", &body).await?)
    }

    pub async fn range_prefix(&self, prefix: &str) -> Result<Vec<Kv>, StoreError> {
        self.range(prefix.as_bytes(), Some(&prefix_end(prefix.as_bytes())))
            .await
    }

    /// A txn: `compare` all true, then `success`, else `failure`. Returns
    /// (succeeded, answer).
    pub async fn txn(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<(bool, Value), StoreError> {
        let v = self
            .call(
                "/v3/kv/txn",
                &json!({ "compare": compare, "success": success, "failure": failure }),
            )
            .await?;
        Ok((
            v.get("succeeded").and_then(Value::as_bool).unwrap_or(false),
            v,
        ))
    }

    /// Drops the history before `revision` (current values stay): without
    /// it etcd keeps every overwritten value until its space quota.
    pub async fn compact(&self, revision: i64) -> Result<(), StoreError> {
        self.call(
            "/v3/kv/compaction",
            &json!({ "revision": revision.to_string() }),
        )
        .await
        .map(|_| ())
    }

    /// A lease of `ttl_s` seconds: its id.
    pub async fn grant(&self, ttl_s: u32) -> Result<i64, StoreError> {
        let v = self
            .call("/v3/lease/grant", &json!({ "TTL": ttl_s.to_string() }))
            .await?;
        match int(&v, "ID") {
            0 => Err(StoreError::Decode {
                key: "lease grant".into(),
                message: format!("no lease id in {v}"),
            }),
            id => Ok(id),
        }
    }

    /// Renews a lease; false when it has expired.
    pub async fn keepalive(&self, lease: i64) -> Result<bool, StoreError> {
        let v = self
            .call("/v3/lease/keepalive", &json!({ "ID": lease.to_string() }))
            .await?;
        Ok(int(v.get("result").unwrap_or(&v), "TTL") > 0)
    }

    pub async fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        self.call("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .await
            .map(|_| ())
    }
}

pub(super) fn put(key: &str, value: &[u8]) -> Value {
    json!({ "request_put": { "key": b64(key.as_bytes()), "value": b64(value) } })
}

pub(super) fn delete(key: &str) -> Value {
    json!({ "request_delete_range": { "key": b64(key.as_bytes()) } })
}

pub(super) fn delete_range(from: &str, to: &str) -> Value {
    json!({ "request_delete_range": { "key": b64(from.as_bytes()), "range_end": b64(to.as_bytes()) } })
}
