//! etcd as the shaper's shared state and leader election (the `[etcd]`
//! table of `shaper.toml`).
//!
//! ```toml
//! [etcd]
//! endpoints = ["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"]
//! prefix = "/tailor"                  # every key lives under it
//! lease_ttl_s = 5                     # the leader's lease: a dead leader is replaced after this
//! advertise_url = "http://10.0.0.5:9848"  # where followers send agents (this replica's URL)
//! request_timeout_s = 2.0
//! # with https:// endpoints (etcd --client-cert-auth):
//! # ca_file = "/etc/tailor/etcd-ca.crt"     # PEM CA of the members' certificates
//! # cert_file = "/etc/tailor/etcd-client.crt"  # PEM client certificate; both or neither
//! # key_file = "/etc/tailor/etcd-client.key"   #   its key, mode 0600
//! ```
//!
//! With `--client-cert-auth`, the members' own server certificates need
//! the `clientAuth` key usage as well as `serverAuth`: etcd's JSON gateway
//! calls the member's gRPC port with that certificate (without it every
//! request answers 503).
//!
//! The client speaks etcd's v3 JSON API (the gRPC gateway every etcd 3.4+
//! serves on its client URLs: `/v3/kv/range`, `/v3/kv/txn`,
//! `/v3/lease/grant`, `/v3/lease/keepalive`) over the workspace's reqwest,
//! not the `etcd-client` crate, whose build script needs `protoc` on every
//! machine that builds tailor. It tries the endpoints in turn.
//!
//! Keys (under `prefix`): `epoch`, `round`, `rounds/<round>/<chunk>` (the
//! round's actions), `acks/<round>/<n>` (their acked status),
//! `app_failures/<app>`, `credentials`, `leader` (the leader's advertised
//! URL, attached to its lease). Election: a replica holding a lease puts
//! `leader` only if it does not exist (a txn on its create revision); it is
//! the leader while `leader` carries its lease. Every write of the leader is
//! a txn that first compares `leader`'s lease with its own (fencing): a
//! replica that lost its lease cannot overwrite its successor's state.

use crate::credentials::CredentialsFile;
use crate::state::ActionStatus;
use crate::store::{
    decode, encode, Durable, DurableAction, PendingWrites, ReplaySnapshot, StateStore, StoreError,
};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use shaper::ConfigErrors;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

fn default_prefix() -> String {
    "/tailor".into()
}
fn default_lease_ttl_s() -> u32 {
    5
}
fn default_request_timeout_s() -> f64 {
    2.0
}

/// Most etcd endpoints.
pub const MAX_ENDPOINTS: usize = 16;
/// Shortest lease etcd grants with its default timing (seconds).
pub const MIN_LEASE_TTL_S: u32 = 2;
pub const MAX_LEASE_TTL_S: u32 = 300;
/// Actions per stored chunk of a round.
pub const ACTIONS_PER_CHUNK: usize = 5_000;
/// Operations per txn (etcd's default `--max-txn-ops` is 128).
pub const OPS_PER_TXN: usize = 100;

/// The `[etcd]` table of `shaper.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdConfig {
    /// Client URLs of the etcd members (`http://host:2379`).
    pub endpoints: Vec<String>,
    /// Key prefix of this shaper cluster. Default `/tailor`.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// TTL of the leader's lease, seconds, in [2, 300]. Default 5.
    #[serde(default = "default_lease_ttl_s")]
    pub lease_ttl_s: u32,
    /// This replica's URL as agents reach it (followers redirect there).
    pub advertise_url: String,
    /// Timeout of one etcd request, seconds, in (0, 60]. Default 2.
    #[serde(default = "default_request_timeout_s")]
    pub request_timeout_s: f64,
    /// PEM certificate(s) of the CA that signed the members' server
    /// certificates (https endpoints). Absent: the built-in web roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate presented to etcd (members started with
    /// `--client-cert-auth`); with `key_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file`; mode 0600 or stricter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
}

fn check_url(errors: &mut ConfigErrors, key: &str, url: &str) {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.contains('/') && !r.contains(char::is_whitespace) => {}
        _ => errors.push(
            key,
            format!("must be a base URL like http://host:2379 without a path (got {url:?})"),
        ),
    }
}

impl EtcdConfig {
    /// Every invalid setting at once (keys relative to `[etcd]`).
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        if self.endpoints.is_empty() || self.endpoints.len() > MAX_ENDPOINTS {
            errors.push(
                "endpoints",
                format!(
                    "must list 1 to {MAX_ENDPOINTS} etcd client URLs (got {})",
                    self.endpoints.len()
                ),
            );
        }
        for e in &self.endpoints {
            check_url(&mut errors, "endpoints", e);
        }
        if !self.prefix.starts_with('/')
            || self.prefix.len() < 2
            || self.prefix.len() > 256
            || self.prefix.ends_with('/')
            || self
                .prefix
                .contains(|c: char| c.is_whitespace() || c.is_control())
        {
            errors.push(
                "prefix",
                format!(
                    "must be like /tailor: a leading /, 2 to 256 characters, no trailing /, no spaces (got {:?})",
                    self.prefix
                ),
            );
        }
        errors.range(
            "lease_ttl_s",
            self.lease_ttl_s,
            MIN_LEASE_TTL_S,
            MAX_LEASE_TTL_S,
        );
        check_url(&mut errors, "advertise_url", &self.advertise_url);
        if !(self.request_timeout_s.is_finite()
            && self.request_timeout_s > 0.0
            && self.request_timeout_s <= 60.0)
        {
            errors.push(
                "request_timeout_s",
                format!("must be in (0, 60] (got {})", self.request_timeout_s),
            );
        }
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => errors.push("key_file", "cert_file is set but key_file is not"),
            (None, Some(_)) => errors.push("cert_file", "key_file is set but cert_file is not"),
            _ => {}
        }
        let tls = [&self.ca_file, &self.cert_file, &self.key_file];
        if tls.iter().any(|f| f.is_some()) {
            for e in self.endpoints.iter().filter(|e| !e.starts_with("https://")) {
                errors.push(
                    "endpoints",
                    format!("{e:?} is not https:// but ca_file/cert_file/key_file are set"),
                );
            }
        }
        errors.into_result()
    }

    /// Checks the TLS files as the client will read them: readable PEM
    /// files, the key private (mode 0600 or stricter). Keys relative to
    /// `[etcd]`.
    pub fn check_files(&self) -> Result<(), ConfigErrors> {
        let mut errors = ConfigErrors::new();
        for (key, file) in [
            ("ca_file", &self.ca_file),
            ("cert_file", &self.cert_file),
            ("key_file", &self.key_file),
        ] {
            if let Some(f) = file {
                if let Err(e) = read_pem(f) {
                    errors.push(key, e);
                }
            }
        }
        if let Some(f) = &self.key_file {
            if let Err(e) = crate::auth::check_private_key_file(f) {
                errors.push("key_file", e.to_string());
            }
        }
        errors.into_result()
    }
}

/// Most bytes of a PEM file read.
const MAX_PEM_BYTES: u64 = 1 << 20;

/// A PEM file's bytes: readable, at most 1 MiB, with a PEM block.
fn read_pem(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(format!("{} is larger than 1 MiB", path.display()));
    }
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(format!("{} holds no PEM block", path.display()));
    }
    Ok(bytes)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(what: &str, s: &str) -> Result<Vec<u8>, StoreError> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| StoreError::Decode {
            key: what.to_string(),
            message: format!("bad base64: {e}"),
        })
}

/// An int64 of the JSON API (a string, or a number).
fn int(v: &Value, field: &str) -> i64 {
    match v.get(field) {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// The first key after every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
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

fn put(key: &str, value: &[u8]) -> Value {
    json!({ "request_put": { "key": b64(key.as_bytes()), "value": b64(value) } })
}

fn delete_range(from: &str, to: &str) -> Value {
    json!({ "request_delete_range": { "key": b64(from.as_bytes()), "range_end": b64(to.as_bytes()) } })
}

/// Who leads, as read from the `leader` key.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderInfo {
    /// The leader's advertised URL, when there is a leader.
    pub url: Option<String>,
    /// True when it is this replica.
    pub mine: bool,
}

/// The shaper's state and election in etcd.
#[derive(Debug)]
pub struct EtcdStore {
    client: EtcdClient,
    prefix: String,
    advertise_url: String,
    lease_ttl_s: u32,
    /// The lease this replica leads with (0: not leading): every write is
    /// fenced on it.
    fence: AtomicI64,
}

impl EtcdStore {
    pub fn new(cfg: &EtcdConfig) -> Result<Self, StoreError> {
        Ok(Self {
            client: EtcdClient::new(cfg)?,
            prefix: cfg.prefix.clone(),
            advertise_url: cfg.advertise_url.trim_end_matches('/').to_string(),
            lease_ttl_s: cfg.lease_ttl_s,
            fence: AtomicI64::new(0),
        })
    }

    fn key(&self, rest: &str) -> String {
        format!("{}/{rest}", self.prefix)
    }

    pub fn client(&self) -> &EtcdClient {
        &self.client
    }

    /// This replica's URL as agents reach it.
    pub fn advertise_url(&self) -> &str {
        &self.advertise_url
    }

    pub fn lease_ttl_s(&self) -> u32 {
        self.lease_ttl_s
    }

    /// Fences later writes on `lease` (0: unfenced, for tests).
    pub fn set_fence(&self, lease: i64) {
        self.fence.store(lease, Ordering::SeqCst);
    }

    fn fence_compare(&self) -> Vec<Value> {
        match self.fence.load(Ordering::SeqCst) {
            0 => Vec::new(),
            lease => vec![json!({
                "target": "LEASE",
                "result": "EQUAL",
                "key": b64(self.key("leader").as_bytes()),
                "lease": lease.to_string(),
            })],
        }
    }

    /// Runs `ops` in fenced txns of at most [`OPS_PER_TXN`] operations.
    async fn fenced(&self, ops: Vec<Value>) -> Result<(), StoreError> {
        for chunk in ops.chunks(OPS_PER_TXN) {
            let (ok, _) = self
                .client
                .txn(self.fence_compare(), chunk.to_vec(), Vec::new())
                .await?;
            if !ok {
                return Err(StoreError::NotLeader);
            }
        }
        Ok(())
    }

    /// Takes the lead with `lease` when nobody holds it; reports who leads.
    pub async fn campaign(&self, lease: i64) -> Result<LeaderInfo, StoreError> {
        let key = self.key("leader");
        let (won, v) = self
            .client
            .txn(
                vec![json!({
                    "target": "CREATE",
                    "result": "EQUAL",
                    "key": b64(key.as_bytes()),
                    "create_revision": "0",
                })],
                vec![json!({ "request_put": {
                    "key": b64(key.as_bytes()),
                    "value": b64(self.advertise_url.as_bytes()),
                    "lease": lease.to_string(),
                }})],
                vec![json!({ "request_range": { "key": b64(key.as_bytes()) } })],
            )
            .await?;
        if won {
            return Ok(LeaderInfo {
                url: Some(self.advertise_url.clone()),
                mine: true,
            });
        }
        let range = v
            .get("responses")
            .and_then(|r| r.get(0))
            .and_then(|r| r.get("response_range"))
            .cloned()
            .unwrap_or(Value::Null);
        let kvs = parse_kvs(&range)?;
        Ok(match kvs.first() {
            Some(kv) => LeaderInfo {
                url: Some(String::from_utf8_lossy(&kv.value).into_owned()),
                mine: kv.lease == lease,
            },
            None => LeaderInfo {
                url: None,
                mine: false,
            },
        })
    }
}

/// `<prefix>/<what>/<round>/<n>`: (round, n).
fn two_numbers(key: &str, what: &str) -> Result<(u64, u64), StoreError> {
    let bad = || StoreError::Decode {
        key: key.to_string(),
        message: format!("expected {what}/<round>/<number>"),
    };
    let rest = key.split_once(&format!("/{what}/")).ok_or_else(bad)?.1;
    let (a, b) = rest.split_once('/').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

#[async_trait::async_trait]
impl StateStore for EtcdStore {
    async fn load(&self) -> Result<Durable, StoreError> {
        let mut d = Durable::default();
        if let Some(kv) = self
            .client
            .range(self.key("epoch").as_bytes(), None)
            .await?
            .first()
        {
            d.epoch = Some(decode(&kv.key, &kv.value)?);
        }
        if let Some(kv) = self
            .client
            .range(self.key("round").as_bytes(), None)
            .await?
            .first()
        {
            d.round = decode(&kv.key, &kv.value)?;
        }
        // Chunks come back in key order: rounds and chunks zero-padded.
        for kv in self.client.range_prefix(&self.key("rounds/")).await? {
            let (round, _) = two_numbers(&kv.key, "rounds")?;
            let mut chunk: Vec<DurableAction> = decode(&kv.key, &kv.value)?;
            d.rounds.entry(round).or_default().append(&mut chunk);
        }
        let mut acks = Vec::new();
        for kv in self.client.range_prefix(&self.key("acks/")).await? {
            let (round, n) = two_numbers(&kv.key, "acks")?;
            let status: ActionStatus = decode(&kv.key, &kv.value)?;
            acks.push(crate::store::AckWrite {
                round,
                n: u32::try_from(n).map_err(|_| StoreError::Decode {
                    key: kv.key.clone(),
                    message: "action number out of range".into(),
                })?,
                status,
            });
        }
        crate::store::apply_acks(&mut d, &acks);
        for kv in self.client.range_prefix(&self.key("replay/")).await? {
            let chunk: Vec<(String, u64, u64)> = decode(&kv.key, &kv.value)?;
            d.replay.extend(
                chunk
                    .into_iter()
                    .map(|(agent, boot, seq)| (agent, (boot, seq))),
            );
        }
        let failures_prefix = self.key("app_failures/");
        for kv in self.client.range_prefix(&failures_prefix).await? {
            let app = kv.key[failures_prefix.len()..].to_string();
            d.app_failures.insert(app, decode(&kv.key, &kv.value)?);
        }
        Ok(d)
    }

    async fn init_epoch(&self, proposed: &str) -> Result<String, StoreError> {
        let key = self.key("epoch");
        let (_, _) = self
            .client
            .txn(
                vec![json!({
                    "target": "CREATE",
                    "result": "EQUAL",
                    "key": b64(key.as_bytes()),
                    "create_revision": "0",
                })],
                vec![put(&key, &encode(&proposed))],
                Vec::new(),
            )
            .await?;
        let kvs = self.client.range(key.as_bytes(), None).await?;
        let kv = kvs.first().ok_or_else(|| StoreError::Decode {
            key: key.clone(),
            message: "missing after being set".into(),
        })?;
        decode(&kv.key, &kv.value)
    }

    async fn put_round(
        &self,
        round: u64,
        actions: &[DurableAction],
        keep_from: u64,
    ) -> Result<(), StoreError> {
        let mut ops: Vec<Value> = actions
            .chunks(ACTIONS_PER_CHUNK)
            .enumerate()
            .map(|(i, c)| {
                put(
                    &self.key(&format!("rounds/{round:020}/{i:06}")),
                    &encode(&c),
                )
            })
            .collect();
        // Forget old rounds and their acks, then mark the round as the last
        // (after its chunks: a reader never sees a round without actions).
        for what in ["rounds", "acks"] {
            ops.push(delete_range(
                &self.key(&format!("{what}/")),
                &self.key(&format!("{what}/{keep_from:020}")),
            ));
        }
        ops.push(put(&self.key("round"), &encode(&round)));
        self.fenced(ops).await
    }

    async fn put_replay_guard(&self, guard: &ReplaySnapshot) -> Result<(), StoreError> {
        let entries: Vec<(&String, u64, u64)> =
            guard.iter().map(|(a, &(b, s))| (a, b, s)).collect();
        let mut ops: Vec<Value> = entries
            .chunks(ACTIONS_PER_CHUNK)
            .enumerate()
            .map(|(i, c)| put(&self.key(&format!("replay/{i:06}")), &encode(&c)))
            .collect();
        // Drop chunks a larger guard left (etcd refuses a put inside a
        // range deleted by the same transaction, so only past the last).
        // `replay0` is the end of the `replay/` prefix.
        let n = ops.len();
        ops.push(delete_range(
            &self.key(&format!("replay/{n:06}")),
            &self.key("replay0"),
        ));
        self.fenced(ops).await
    }

    async fn put_acks(&self, writes: &PendingWrites) -> Result<(), StoreError> {
        let mut ops: Vec<Value> = writes
            .acks
            .iter()
            .map(|a| {
                put(
                    &self.key(&format!("acks/{:020}/{:010}", a.round, a.n)),
                    &encode(&a.status),
                )
            })
            .collect();
        for (app, n) in &writes.app_failures {
            ops.push(put(&self.key(&format!("app_failures/{app}")), &encode(n)));
        }
        self.fenced(ops).await
    }

    async fn put_credentials(&self, file: &CredentialsFile) -> Result<(), StoreError> {
        let key = self.key("credentials");
        self.client
            .txn(Vec::new(), vec![put(&key, &encode(file))], Vec::new())
            .await
            .map(|_| ())
    }

    async fn credentials(&self) -> Result<Option<CredentialsFile>, StoreError> {
        let key = self.key("credentials");
        let Some(kv) = self
            .client
            .range(key.as_bytes(), None)
            .await?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        let file: CredentialsFile = decode(&kv.key, &kv.value)?;
        file.validate().map_err(|e| StoreError::Decode {
            key: kv.key.clone(),
            message: e.join("; "),
        })?;
        Ok(Some(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> EtcdConfig {
        toml::from_str(
            "endpoints = [\"http://127.0.0.1:2379\"]\nadvertise_url = \"http://127.0.0.1:9848\"\n",
        )
        .expect("parse")
    }

    #[test]
    fn defaults_and_validation() {
        let c = cfg();
        assert_eq!(c.prefix, "/tailor");
        assert_eq!(c.lease_ttl_s, 5);
        assert!(c.validate().is_ok());
        let bad = EtcdConfig {
            endpoints: vec!["127.0.0.1:2379".into()],
            prefix: "tailor/".into(),
            lease_ttl_s: 1,
            advertise_url: "http://x/y".into(),
            request_timeout_s: f64::NAN,
            ca_file: None,
            cert_file: Some("/etc/tailor/etcd.crt".into()),
            key_file: None,
        };
        let e = bad.validate().expect_err("invalid");
        assert_eq!(
            e.keys(),
            vec![
                "endpoints",
                "prefix",
                "lease_ttl_s",
                "advertise_url",
                "request_timeout_s",
                "key_file",
                "endpoints"
            ],
            "{e}"
        );
        assert!(e.to_string().contains("is not https://"), "{e}");
        let tls = EtcdConfig {
            endpoints: vec!["https://10.0.0.1:2379".into()],
            ca_file: Some("/nonexistent/ca.crt".into()),
            ..cfg()
        };
        assert!(tls.validate().is_ok());
        let files = tls.check_files().expect_err("missing CA file");
        assert_eq!(files.keys(), vec!["ca_file"], "{files}");
        let none = EtcdConfig {
            endpoints: Vec::new(),
            ..cfg()
        };
        assert_eq!(
            none.validate().expect_err("empty").keys(),
            vec!["endpoints"]
        );
        assert!(
            toml::from_str::<EtcdConfig>("endpoints = []\nadvertise_url = \"x\"\nbogus = 1\n")
                .is_err()
        );
    }

    #[test]
    fn prefix_end_covers_the_prefix() {
        assert_eq!(prefix_end(b"/t/a"), b"/t/b".to_vec());
        assert_eq!(prefix_end(&[b'a', 0xff]), vec![b'b']);
        assert_eq!(prefix_end(&[0xff]), vec![0]);
    }

    #[test]
    fn kvs_decode() {
        let v = json!({"kvs": [{"key": b64(b"/t/round"), "value": b64(b"7"), "lease": "42"}]});
        let kvs = parse_kvs(&v).expect("kvs");
        assert_eq!(kvs[0].key, "/t/round");
        assert_eq!(kvs[0].value, b"7");
        assert_eq!(kvs[0].lease, 42);
        assert!(parse_kvs(&json!({})).expect("none").is_empty());
        assert!(parse_kvs(&json!({"kvs": 3})).is_err());
        assert!(parse_kvs(&json!({"kvs": [{"key": "!!"}]})).is_err());
    }

    #[test]
    fn action_keys_decode() {
        assert_eq!(
            two_numbers("/t/acks/00000000000000000012/0000000003", "acks").expect("ok"),
            (12, 3)
        );
        for bad in ["/t/acks/x/1", "/t/acks/1", "/t/other/1/2", "/t/acks/1/-2"] {
            assert!(two_numbers(bad, "acks").is_err(), "{bad}");
        }
    }

    proptest! {
        /// Arbitrary JSON answers: kvs decode to values or errors, no panic.
        #[test]
        fn arbitrary_answers_never_panic(key in "\\PC{0,30}", value in "\\PC{0,30}", lease in "\\PC{0,10}") {
            let v = json!({"kvs": [{"key": key, "value": value, "lease": lease}]});
            let _ = parse_kvs(&v);
            let _ = two_numbers(&key, "acks");
            let _ = int(&v, "lease");
        }
    }
}
