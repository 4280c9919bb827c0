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
//! round's actions, per agent: [`codec::AgentActions`]), `acks/<round>/<batch>`
//! (acked statuses), `replay/<chunk>`, `app_failures/<app>`,
//! `credentials` (the generation in force) and
//! `credentials/<generation>/<chunk>`, `credentials_generation` (the
//! credentials file's own generation, see [`crate::credentials`]),
//! `revoked/<key id>` (revoked keys: written before the set that drops
//! them, never deleted), `leader` (the leader's advertised
//! URL, attached to its lease). Values and transactions stay within etcd's
//! request limits ([`codec`]). Election: a replica holding a lease puts
//! `leader` only if it does not exist (a txn on its create revision); it is
//! the leader while `leader` carries its lease. Every write of the leader is
//! a txn that first compares `leader`'s lease with its own (fencing): a
//! replica that lost its lease cannot overwrite its successor's state.

mod client;
mod codec;
mod config;

pub use client::{parse_kvs, EtcdClient, Kv};
pub use config::{EtcdConfig, MAX_ENDPOINTS, MAX_LEASE_TTL_S, MIN_LEASE_TTL_S};

use crate::credentials::{plan_publication, CredentialsFile, Publication, RevokedRecord};
use crate::state::ActionStatus;
use crate::store::{
    decode, encode, Durable, DurableAction, PendingWrites, ReplaySnapshot, StateStore, StoreError,
};
use client::{b64, delete, delete_range, put};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The leader compacts etcd's history every this many rounds.
pub const COMPACT_EVERY_ROUNDS: u64 = 10;
/// Operations per txn (etcd's default `--max-txn-ops` is 128).
pub const OPS_PER_TXN: usize = 100;

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
    /// Ack batches written ([`EtcdStore::next_batch`]).
    batches: AtomicU64,
}

impl EtcdStore {
    pub fn new(cfg: &EtcdConfig) -> Result<Self, StoreError> {
        Ok(Self {
            client: EtcdClient::new(cfg)?,
            prefix: cfg.prefix.clone(),
            advertise_url: cfg.advertise_url.trim_end_matches('/').to_string(),
            lease_ttl_s: cfg.lease_ttl_s,
            fence: AtomicI64::new(0),
            batches: AtomicU64::new(0),
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

    /// A name for the next batch of acks that sorts after this replica's
    /// earlier ones: wall-clock milliseconds and a counter.
    fn next_batch(&self) -> String {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let n = self.batches.fetch_add(1, Ordering::SeqCst);
        format!("{ms:013}-{n:010}")
    }

    /// Runs `ops` in order in fenced txns of at most [`OPS_PER_TXN`]
    /// operations and [`codec::MAX_TXN_BYTES`]; returns the store's
    /// revision after the last one (0 when there was none).
    async fn fenced(&self, ops: Vec<Value>) -> Result<i64, StoreError> {
        let mut revision = 0;
        for batch in codec::txn_batches(ops, OPS_PER_TXN) {
            let (ok, answer) = self
                .client
                .txn(self.fence_compare(), batch, Vec::new())
                .await?;
            if !ok {
                return Err(StoreError::NotLeader);
            }
            revision = answer
                .get("header")
                .map_or(0, |h| client::int(h, "revision"));
        }
        Ok(revision)
    }

    /// Takes the lead with `lease` when nobody holds it; reports who leads.
    pub async fn campaign(&self, lease: i64) -> Result<LeaderInfo, StoreError> {
        let key = self.key("leader");
        let (won, v) = self
            .client
            .txn(
                vec![absent(&key)],
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

/// `<prefix>/<what>/<round>/<rest>`: the round.
fn round_of(key: &str, what: &str) -> Result<u64, StoreError> {
    let bad = || StoreError::Decode {
        key: key.to_string(),
        message: format!("expected {what}/<round>/..."),
    };
    let rest = key.split_once(&format!("/{what}/")).ok_or_else(bad)?.1;
    let (a, b) = rest.split_once('/').ok_or_else(bad)?;
    if b.is_empty() {
        return Err(bad());
    }
    a.parse().map_err(|_| bad())
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
        let mut rounds: BTreeMap<u64, Vec<codec::AgentActions>> = BTreeMap::new();
        for kv in self.client.range_prefix(&self.key("rounds/")).await? {
            let round = round_of(&kv.key, "rounds")?;
            let mut chunk: Vec<codec::AgentActions> = decode(&kv.key, &kv.value)?;
            rounds.entry(round).or_default().append(&mut chunk);
        }
        for (round, groups) in rounds {
            // A round after the stored `round` is one whose write failed
            // part way: its actions were never handed out. It is kept
            // without actions, so that its number is not issued again.
            let actions = if round > d.round {
                Vec::new()
            } else {
                codec::ungroup(&self.key(&format!("rounds/{round:020}")), groups)?
            };
            d.rounds.insert(round, actions);
        }
        let mut acks = Vec::new();
        // Batches come back in key order, which is the order they were
        // written in ([`EtcdStore::next_batch`]).
        for kv in self.client.range_prefix(&self.key("acks/")).await? {
            let round = round_of(&kv.key, "acks")?;
            let batch: Vec<(u32, ActionStatus)> = decode(&kv.key, &kv.value)?;
            acks.extend(batch.into_iter().map(|(n, status)| crate::store::AckWrite {
                round,
                n,
                status,
            }));
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
                vec![absent(&key)],
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
        let mut ops: Vec<Value> = codec::pack(&codec::group(actions))
            .iter()
            .enumerate()
            .map(|(i, v)| put(&self.key(&format!("rounds/{round:020}/{i:06}")), v))
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
        let revision = self.fenced(ops).await?;
        // Each round overwrites about as many bytes as it holds: compact
        // the history up to this round now and then. A failure only
        // delays it (etcd refuses a revision already compacted).
        if round.is_multiple_of(COMPACT_EVERY_ROUNDS) && revision > 0 {
            if let Err(e) = self.client.compact(revision).await {
                tracing::debug!(round, revision, error = %e, "etcd compaction skipped");
            }
        }
        Ok(())
    }

    async fn put_replay_guard(&self, guard: &ReplaySnapshot) -> Result<(), StoreError> {
        let entries: Vec<(&String, u64, u64)> =
            guard.iter().map(|(a, &(b, s))| (a, b, s)).collect();
        let mut ops: Vec<Value> = codec::pack(&entries)
            .iter()
            .enumerate()
            .map(|(i, v)| put(&self.key(&format!("replay/{i:06}")), v))
            .collect();
        // Drop chunks a larger guard left (etcd refuses a put inside a
        // range deleted by the same transaction, so only past the last).
        // `replay0` is the end of the `replay/` prefix.
        let n = ops.len();
        ops.push(delete_range(
            &self.key(&format!("replay/{n:06}")),
            &self.key("replay0"),
        ));
        self.fenced(ops).await.map(|_| ())
    }

    /// One value per round and batch (`acks/<round>/<batch>-<i>`), not
    /// one key per ack: a round's acks are about as many as its actions.
    /// An application's failure count is written once per batch (its
    /// latest value): etcd refuses a transaction that puts a key twice.
    async fn put_acks(&self, writes: &PendingWrites) -> Result<(), StoreError> {
        let mut by_round: BTreeMap<u64, Vec<(u32, &ActionStatus)>> = BTreeMap::new();
        for a in &writes.acks {
            by_round.entry(a.round).or_default().push((a.n, &a.status));
        }
        let batch = self.next_batch();
        let mut ops: Vec<Value> = Vec::new();
        for (round, acks) in by_round {
            for (i, v) in codec::pack(&acks).iter().enumerate() {
                ops.push(put(
                    &self.key(&format!("acks/{round:020}/{batch}-{i:06}")),
                    v,
                ));
            }
        }
        let failures: BTreeMap<&str, u32> = writes
            .app_failures
            .iter()
            .map(|(app, n)| (app.as_str(), *n))
            .collect();
        for (app, n) in failures {
            let key = self.key(&format!("app_failures/{app}"));
            if n == 0 {
                // forgotten (`ShaperState::prune_app_failures`)
                ops.push(delete(&key));
            } else {
                ops.push(put(&key, &encode(&n)));
            }
        }
        self.fenced(ops).await.map(|_| ())
    }

    /// Publishes `file` as [`plan_publication`] allows, under a
    /// compare-and-swap on the `credentials` key as read (a replica that
    /// raced another one reads again and re-plans; a stale file never
    /// overwrites a newer set). The revoked keys are written first (they
    /// only ever add refusals), then the credentials go under a new storage
    /// generation (`credentials/<g>/<i>`, as many values as their size
    /// needs), then `credentials` switches to it in the last transaction,
    /// which also drops the other generations: a reader sees the old set or
    /// the new one, never a mix.
    async fn publish_credentials(&self, file: &CredentialsFile) -> Result<Publication, StoreError> {
        for _ in 0..5 {
            let read = self.read_credentials().await?;
            let (outcome, write) = plan_publication(file, read.file.as_ref());
            let Some(set) = write else {
                return Ok(outcome);
            };
            let known: std::collections::HashSet<&str> = read
                .file
                .as_ref()
                .map(|f| f.revoked.iter().map(|r| r.key_id.as_str()).collect())
                .unwrap_or_default();
            let tombs: Vec<Value> = set
                .revoked
                .iter()
                .filter(|r| !known.contains(r.key_id.as_str()))
                .map(|r| put(&self.key(&format!("revoked/{}", r.key_id)), &encode(r)))
                .collect();
            for batch in codec::txn_batches(tombs, OPS_PER_TXN) {
                self.client.txn(Vec::new(), batch, Vec::new()).await?;
            }
            // A storage generation of its own, so that a racing writer's
            // chunks never land in the same directory.
            let generation = read.storage_generation + 1 + u64::from(random_u16());
            let dir = |g: u64| self.key(&format!("credentials/{g:020}/"));
            let values = codec::pack(&set.credentials);
            let chunks = values.len() as u64;
            let ops: Vec<Value> = values
                .iter()
                .enumerate()
                .map(|(i, v)| put(&format!("{}{i:06}", dir(generation)), v))
                .collect();
            for batch in codec::txn_batches(ops, OPS_PER_TXN) {
                self.client.txn(Vec::new(), batch, Vec::new()).await?;
            }
            let head_key = self.key("credentials");
            let compare = if read.head_revision == 0 {
                absent(&head_key)
            } else {
                json!({
                    "target": "MOD",
                    "result": "EQUAL",
                    "key": b64(head_key.as_bytes()),
                    "mod_revision": read.head_revision.to_string(),
                })
            };
            let head = CredentialsHead { generation, chunks };
            let last = vec![
                put(&head_key, &encode(&head)),
                put(
                    &self.key("credentials_generation"),
                    &encode(&set.generation),
                ),
                // Every other generation: those before this one, and any
                // after it that a racing writer left.
                delete_range(&self.key("credentials/"), &dir(generation)),
                delete_range(
                    &self.key(&format!("credentials/{:020}/", generation + 1)),
                    &self.key("credentials0"),
                ),
            ];
            let (swapped, _) = self.client.txn(vec![compare], last, Vec::new()).await?;
            if swapped {
                return Ok(outcome);
            }
            // Another replica published meanwhile: drop this attempt's
            // chunks and plan again over what it wrote.
            let _ = self
                .client
                .txn(
                    Vec::new(),
                    vec![delete_range(&dir(generation), &dir(generation + 1))],
                    Vec::new(),
                )
                .await;
            tracing::info!("credentials publication raced another replica's: reading again");
        }
        Err(StoreError::Refused(
            "the credentials in etcd kept changing during 5 attempts to publish them".into(),
        ))
    }

    async fn credentials(&self) -> Result<Option<CredentialsFile>, StoreError> {
        Ok(self.read_credentials().await?.file)
    }
}

/// The shared credentials as read, with what a compare-and-swap needs.
struct CredentialsRead {
    /// The set in force (its generation, its revoked keys), minus any
    /// revoked credential; `None` when nothing was ever published.
    file: Option<CredentialsFile>,
    /// The `credentials` key's mod revision (0: absent).
    head_revision: i64,
    /// The storage generation it names (0: absent).
    storage_generation: u64,
}

impl EtcdStore {
    async fn read_credentials(&self) -> Result<CredentialsRead, StoreError> {
        let key = self.key("credentials");
        let head_kv = self
            .client
            .range(key.as_bytes(), None)
            .await?
            .into_iter()
            .next();
        let mut revoked: Vec<RevokedRecord> = Vec::new();
        for kv in self.client.range_prefix(&self.key("revoked/")).await? {
            revoked.push(decode(&kv.key, &kv.value)?);
        }
        let Some(head_kv) = head_kv else {
            let file = (!revoked.is_empty()).then(|| CredentialsFile {
                revoked,
                ..CredentialsFile::default()
            });
            return Ok(CredentialsRead {
                file,
                head_revision: 0,
                storage_generation: 0,
            });
        };
        let head: CredentialsHead = decode(&head_kv.key, &head_kv.value)?;
        let gen_key = self.key("credentials_generation");
        let file_generation = match self
            .client
            .range(gen_key.as_bytes(), None)
            .await?
            .into_iter()
            .next()
        {
            Some(kv) => decode::<u64>(&kv.key, &kv.value)?,
            // Published by a replica older than generations.
            None => 0,
        };
        let dir = self.key(&format!("credentials/{:020}/", head.generation));
        let mut file = CredentialsFile {
            generation: file_generation,
            revoked,
            ..CredentialsFile::default()
        };
        let kvs = self.client.range_prefix(&dir).await?;
        if kvs.len() as u64 != head.chunks {
            return Err(StoreError::Decode {
                key: dir,
                message: format!("{} chunks stored, {} expected", kvs.len(), head.chunks),
            });
        }
        for kv in kvs {
            let mut chunk: Vec<crate::credentials::CredentialRecord> = decode(&kv.key, &kv.value)?;
            file.credentials.append(&mut chunk);
        }
        // A replica older than tombstones may have published a revoked key.
        let revived = file.drop_revoked(&[]);
        if !revived.is_empty() {
            let keys: Vec<String> = revived
                .iter()
                .map(|c| format!("{} ({})", c.key_id, c.agent_id))
                .collect();
            tracing::error!(
                key = %key,
                revived = %keys.join(", "),
                "the credentials in etcd hold revoked keys (published by an older replica?): they stay refused"
            );
        }
        file.validate().map_err(|e| StoreError::Decode {
            key: key.clone(),
            message: e.join("; "),
        })?;
        Ok(CredentialsRead {
            file: Some(file),
            head_revision: head_kv.mod_revision,
            storage_generation: head.generation,
        })
    }
}

fn random_u16() -> u16 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 2];
    // Only spreads racing writers apart: a failing generator is harmless.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    u16::from_be_bytes(b)
}

/// The `credentials` key: the generation in force and its value count.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsHead {
    generation: u64,
    chunks: u64,
}

/// A transaction compare that holds while `key` does not exist.
fn absent(key: &str) -> Value {
    json!({
        "target": "CREATE",
        "result": "EQUAL",
        "key": b64(key.as_bytes()),
        "create_revision": "0",
    })
}

#[cfg(test)]
mod tests {
    use super::client::{int, prefix_end};
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
            round_of(
                "/t/acks/00000000000000000012/0001795673226-0000000003-000000",
                "acks"
            )
            .expect("ok"),
            12
        );
        for bad in [
            "/t/acks/x/1",
            "/t/acks/1",
            "/t/other/1/2",
            "/t/acks/-1/2",
            "/t/acks/1/",
        ] {
            assert!(round_of(bad, "acks").is_err(), "{bad}");
        }
    }

    proptest! {
        /// Arbitrary JSON answers: kvs decode to values or errors, no panic.
        #[test]
        fn arbitrary_answers_never_panic(key in "\\PC{0,30}", value in "\\PC{0,30}", lease in "\\PC{0,10}") {
            let v = json!({"kvs": [{"key": key, "value": value, "lease": lease}]});
            let _ = parse_kvs(&v);
            let _ = round_of(&key, "acks");
            let _ = int(&v, "lease");
        }
    }
}
