//! The shaper's durable state behind a small trait, so that the round logic
//! stays pure and persistence is I/O at the edges.
//!
//! What is durable: the credentials (hashes only, each bound to an agent and
//! a tenant), the action ids issued in the last [`crate::state::RETAIN_ROUNDS`]
//! rounds with their fate, the applications' failure counts, the evicted
//! applications of those rounds (derived from the applied whole-application
//! evictions), the cluster's action-id epoch and its last round number,
//! and every agent's last accepted report sequence as of the last round
//! (so a report captured before a failover is refused by the new leader).
//!
//! Write-through: a round's actions are written before any agent can collect
//! them, an acknowledgement before the shaper answers it. A new leader
//! [`StateStore::load`]s everything, so an ack of an action issued by the
//! previous leader is matched (never "unknown"), an action acked as applied
//! keeps its status and its id is never issued again (rounds go on from the
//! stored round number), and a failure is counted once.
//!
//! Implementations: [`MemoryStore`] (one replica, and unit tests: two
//! [`crate::ShaperState`]s sharing one store behave like a leader and its
//! successor) and [`crate::etcd::EtcdStore`].

use crate::credentials::{plan_publication, CredentialsFile, Publication};
use crate::state::ActionStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No endpoint answered (or every one failed).
    #[error("etcd unreachable: {0}")]
    Unreachable(String),
    /// The store answered with an error.
    #[error("etcd refused the request: {0}")]
    Refused(String),
    /// This replica is no longer the leader (a fenced write failed).
    #[error("not the leader any more")]
    NotLeader,
    /// A stored value or an answer that does not decode.
    #[error("cannot decode {key}: {message}")]
    Decode { key: String, message: String },
    /// The client's TLS settings cannot be used (files, certificates).
    #[error("etcd TLS: {0}")]
    Tls(String),
}

/// One issued action as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurableAction {
    pub agent: String,
    /// The application key of a whole-application eviction.
    #[serde(default)]
    pub evicted_app: Option<String>,
    pub status: ActionStatus,
}

/// A change of an action's status (an ack).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AckWrite {
    pub round: u64,
    pub n: u32,
    pub status: ActionStatus,
}

/// Everything [`StateStore::load`] returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Durable {
    /// The cluster's action-id epoch, once one replica set it.
    pub epoch: Option<String>,
    /// The last round whose actions were written.
    pub round: u64,
    /// Actions of the retained rounds (acked statuses applied).
    pub rounds: BTreeMap<u64, Vec<DurableAction>>,
    /// Applications' failure counts (`<tenant>/<label>`).
    pub app_failures: BTreeMap<String, u32>,
    /// Every agent's last accepted (boot id, sequence) as of the last
    /// stored round.
    pub replay: ReplaySnapshot,
}

/// Agents' last accepted (boot id, sequence), by agent id.
pub type ReplaySnapshot = BTreeMap<String, (u64, u64)>;

/// Writes that acks produced, to persist before answering.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PendingWrites {
    pub acks: Vec<AckWrite>,
    /// New failure counts (absolute values: only the leader writes them).
    pub app_failures: Vec<(String, u32)>,
}

impl PendingWrites {
    pub fn is_empty(&self) -> bool {
        self.acks.is_empty() && self.app_failures.is_empty()
    }
}

/// Durable shared state (see the module docs).
#[async_trait::async_trait]
pub trait StateStore: Send + Sync + std::fmt::Debug {
    /// False when no other replica can ever read what is written and it
    /// does not outlive this process (one replica without `[etcd]`): the
    /// server then skips the per-round writes (at 1M components, the
    /// round's action records alone are ~670k entries).
    fn is_shared(&self) -> bool {
        true
    }
    /// Everything a new leader needs.
    async fn load(&self) -> Result<Durable, StoreError>;
    /// The cluster's epoch: the stored one, or `proposed` stored now.
    async fn init_epoch(&self, proposed: &str) -> Result<String, StoreError>;
    /// Stores a round's actions (before they are handed out) as the last
    /// round, and forgets rounds before `keep_from`.
    async fn put_round(
        &self,
        round: u64,
        actions: &[DurableAction],
        keep_from: u64,
    ) -> Result<(), StoreError>;
    /// Replaces the stored replay guard (after each round).
    async fn put_replay_guard(&self, guard: &ReplaySnapshot) -> Result<(), StoreError>;
    /// Stores acks and failure counts (before the ack is answered).
    async fn put_acks(&self, writes: &PendingWrites) -> Result<(), StoreError>;
    /// Publishes a credentials file (hashes only) as
    /// [`crate::credentials::plan_publication`] allows: never a set that
    /// holds a revoked key, and over the shared set only from a file of a
    /// higher generation (else refused; the file's revocations are merged).
    async fn publish_credentials(&self, file: &CredentialsFile) -> Result<Publication, StoreError>;
    /// The published credentials (with their generation and the revoked
    /// keys), if any.
    async fn credentials(&self) -> Result<Option<CredentialsFile>, StoreError>;
}

/// Decodes a stored JSON value, naming its key on error (never panics).
pub fn decode<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Decode {
        key: key.to_string(),
        message: e.to_string(),
    })
}

/// Encodes a value for the store.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain structs to JSON cannot fail (no maps with
    // non-string keys, no failing Serialize impls).
    serde_json::to_vec(value).unwrap_or_default()
}

/// The state in memory (one replica; unit tests).
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<MemoryInner>,
    /// Made with [`MemoryStore::private`]: nobody else reads it.
    private: bool,
}

#[derive(Debug, Default)]
struct MemoryInner {
    durable: Durable,
    credentials: Option<CredentialsFile>,
    /// Writes refused from now on (tests of failing stores).
    failing: bool,
}

impl MemoryStore {
    /// A store that replicas may share (unit tests of failover).
    pub fn new() -> Self {
        Self::default()
    }

    /// The store of a lone replica: [`StateStore::is_shared`] is false, so
    /// the server does not write rounds into it.
    pub fn private() -> Self {
        Self {
            private: true,
            ..Self::default()
        }
    }

    /// Makes every later call fail (or succeed again), for tests.
    pub fn set_failing(&self, failing: bool) {
        self.lock().failing = failing;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check(inner: &MemoryInner) -> Result<(), StoreError> {
        if inner.failing {
            Err(StoreError::Unreachable("memory store set to fail".into()))
        } else {
            Ok(())
        }
    }
}

/// Applies acks to stored rounds (actions of forgotten rounds are ignored).
pub fn apply_acks(durable: &mut Durable, acks: &[AckWrite]) {
    for a in acks {
        if let Some(r) = durable
            .rounds
            .get_mut(&a.round)
            .and_then(|v| v.get_mut(a.n as usize))
        {
            r.status = a.status.clone();
        }
    }
}

#[async_trait::async_trait]
impl StateStore for MemoryStore {
    fn is_shared(&self) -> bool {
        !self.private
    }

    async fn load(&self) -> Result<Durable, StoreError> {
        let inner = self.lock();
        Self::check(&inner)?;
        Ok(inner.durable.clone())
    }

    async fn init_epoch(&self, proposed: &str) -> Result<String, StoreError> {
        let mut inner = self.lock();
        Self::check(&inner)?;
        Ok(inner
            .durable
            .epoch
            .get_or_insert_with(|| proposed.to_string())
            .clone())
    }

    async fn put_round(
        &self,
        round: u64,
        actions: &[DurableAction],
        keep_from: u64,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        Self::check(&inner)?;
        let d = &mut inner.durable;
        d.rounds.insert(round, actions.to_vec());
        d.round = d.round.max(round);
        d.rounds = d.rounds.split_off(&keep_from);
        Ok(())
    }

    async fn put_replay_guard(&self, guard: &ReplaySnapshot) -> Result<(), StoreError> {
        let mut inner = self.lock();
        Self::check(&inner)?;
        inner.durable.replay = guard.clone();
        Ok(())
    }

    async fn put_acks(&self, writes: &PendingWrites) -> Result<(), StoreError> {
        let mut inner = self.lock();
        Self::check(&inner)?;
        apply_acks(&mut inner.durable, &writes.acks);
        for (app, n) in &writes.app_failures {
            if *n == 0 {
                inner.durable.app_failures.remove(app);
            } else {
                inner.durable.app_failures.insert(app.clone(), *n);
            }
        }
        Ok(())
    }

    async fn publish_credentials(&self, file: &CredentialsFile) -> Result<Publication, StoreError> {
        let mut inner = self.lock();
        Self::check(&inner)?;
        let (outcome, write) = plan_publication(file, inner.credentials.as_ref());
        if let Some(w) = write {
            inner.credentials = Some(w);
        }
        Ok(outcome)
    }

    async fn credentials(&self) -> Result<Option<CredentialsFile>, StoreError> {
        let inner = self.lock();
        Self::check(&inner)?;
        Ok(inner.credentials.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn action(agent: &str, status: ActionStatus) -> DurableAction {
        DurableAction {
            agent: agent.into(),
            evicted_app: None,
            status,
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn memory_store_keeps_rounds_acks_failures_and_epoch() {
        block_on(async {
            let s = MemoryStore::new();
            assert_eq!(s.init_epoch("a").await.expect("epoch"), "a");
            assert_eq!(s.init_epoch("b").await.expect("epoch"), "a", "first wins");
            s.put_round(1, &[action("n1", ActionStatus::Pending)], 0)
                .await
                .expect("round 1");
            s.put_round(2, &[action("n2", ActionStatus::Pending)], 0)
                .await
                .expect("round 2");
            s.put_acks(&PendingWrites {
                acks: vec![
                    AckWrite {
                        round: 1,
                        n: 0,
                        status: ActionStatus::Applied,
                    },
                    // Unknown places are ignored.
                    AckWrite {
                        round: 9,
                        n: 3,
                        status: ActionStatus::Applied,
                    },
                ],
                app_failures: vec![("t/web".into(), 2)],
            })
            .await
            .expect("acks");
            let d = s.load().await.expect("load");
            assert_eq!(d.epoch.as_deref(), Some("a"));
            assert_eq!(d.round, 2);
            assert_eq!(d.rounds[&1][0].status, ActionStatus::Applied);
            assert_eq!(d.rounds[&2][0].status, ActionStatus::Pending);
            assert_eq!(d.app_failures["t/web"], 2);
            // Old rounds are forgotten, the round number stays.
            s.put_round(7, &[], 5).await.expect("round 7");
            let d = s.load().await.expect("load");
            assert_eq!(d.rounds.keys().copied().collect::<Vec<_>>(), vec![7]);
            assert_eq!(d.round, 7);
        });
    }

    #[test]
    fn failing_memory_store_refuses_everything() {
        block_on(async {
            let s = MemoryStore::new();
            s.set_failing(true);
            assert!(matches!(s.load().await, Err(StoreError::Unreachable(_))));
            assert!(s.put_round(1, &[], 0).await.is_err());
            assert!(s.put_acks(&PendingWrites::default()).await.is_err());
            s.set_failing(false);
            assert!(s.load().await.is_ok());
        });
    }

    #[test]
    fn credentials_round_trip() {
        block_on(async {
            let s = MemoryStore::new();
            assert_eq!(s.credentials().await.expect("none"), None);
            let mut f = CredentialsFile::default();
            f.add("node-1", "team", &[], 0.0).expect("add");
            assert_eq!(
                s.publish_credentials(&f).await.expect("put"),
                Publication::Published { generation: 1 }
            );
            assert_eq!(s.credentials().await.expect("some"), Some(f.clone()));
            // An older copy of the file does not replace it.
            let old = f.clone();
            f.revoke(Some("node-1"), None, 1.0);
            s.publish_credentials(&f).await.expect("revoke");
            let outcome = s.publish_credentials(&old).await.expect("stale");
            assert!(matches!(outcome, Publication::Refused { .. }), "{outcome}");
            assert_eq!(s.credentials().await.expect("some"), Some(f));
        });
    }

    #[test]
    fn decode_names_the_key() {
        let e = decode::<DurableAction>("p/rounds/1", b"{\"agent\": 3}").expect_err("bad");
        assert!(e.to_string().contains("p/rounds/1"), "{e}");
        let a = action("x", ActionStatus::Failed { error: "e".into() });
        assert_eq!(decode::<DurableAction>("k", &encode(&a)).expect("ok"), a);
    }

    proptest! {
        /// Any bytes under any stored type: an error or a value, no panic.
        #[test]
        fn decoding_arbitrary_values_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode::<Vec<DurableAction>>("k", &bytes);
            let _ = decode::<ActionStatus>("k", &bytes);
            let _ = decode::<u32>("k", &bytes);
            let _ = decode::<CredentialsFile>("k", &bytes);
        }

        /// JSON-shaped noise (valid JSON of the wrong shape) too.
        #[test]
        fn decoding_wrong_shapes_is_an_error(n in any::<i64>(), s in "\\PC{0,40}") {
            let v = serde_json::json!({"agent": n, "status": s});
            prop_assert!(decode::<DurableAction>("k", v.to_string().as_bytes()).is_err());
        }
    }
}
