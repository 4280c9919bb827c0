//! How the shaper's large values are laid out in etcd, within etcd's
//! request limits.
//!
//! etcd refuses a request larger than `--max-request-bytes` (default
//! 1.5 MiB; its JSON gateway forwards at most 2 MiB to gRPC). At 10,000
//! agents a round holds about a million actions and the credentials file
//! 10,000 records, so both are split:
//!
//! * **values** hold at most [`MAX_VALUE_BYTES`] of JSON: a list is cut
//!   into JSON arrays of whole items ([`pack`]);
//! * **transactions** carry at most [`MAX_TXN_BYTES`] of operations and
//!   [`super::OPS_PER_TXN`] of them ([`txn_batches`]);
//! * **a round's actions** are stored per agent ([`AgentActions`]: its
//!   name once, then its action numbers), not one record per action with
//!   the agent's name repeated: about 7 bytes an action instead of 60.

use crate::state::ActionStatus;
use crate::store::{DurableAction, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// Largest stored value (JSON bytes before etcd's base64).
pub const MAX_VALUE_BYTES: usize = 512 * 1024;
/// Largest transaction body (JSON bytes, base64 included).
pub const MAX_TXN_BYTES: usize = 1024 * 1024;

/// One agent's actions of a round, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentActions {
    pub agent: String,
    /// The actions' numbers in the round.
    pub n: Vec<u32>,
    /// (number, application) of whole-application evictions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<(u32, String)>,
    /// (number, status) of the actions that are not pending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<(u32, ActionStatus)>,
}

/// A round's actions grouped by agent (in order of first appearance).
pub fn group(actions: &[DurableAction]) -> Vec<AgentActions> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<AgentActions> = Vec::new();
    for (n, a) in actions.iter().enumerate() {
        let n = n as u32;
        let i = *index.entry(a.agent.as_str()).or_insert_with(|| {
            out.push(AgentActions {
                agent: a.agent.clone(),
                n: Vec::new(),
                apps: Vec::new(),
                status: Vec::new(),
            });
            out.len() - 1
        });
        let g = &mut out[i];
        g.n.push(n);
        if let Some(app) = &a.evicted_app {
            g.apps.push((n, app.clone()));
        }
        if a.status != ActionStatus::Pending {
            g.status.push((n, a.status.clone()));
        }
    }
    out
}

/// The round's actions back in number order. Every number from 0 to the
/// count of numbers read must appear exactly once (`key` names the round
/// in errors).
pub fn ungroup(key: &str, groups: Vec<AgentActions>) -> Result<Vec<DurableAction>, StoreError> {
    let bad = |message: String| StoreError::Decode {
        key: key.to_string(),
        message,
    };
    let total: usize = groups.iter().map(|g| g.n.len()).sum();
    let mut slots: Vec<Option<DurableAction>> = vec![None; total];
    for g in groups {
        let mut apps: HashMap<u32, String> = g.apps.into_iter().collect();
        let mut status: HashMap<u32, ActionStatus> = g.status.into_iter().collect();
        for n in g.n {
            let slot = slots
                .get_mut(n as usize)
                .ok_or_else(|| bad(format!("action number {n} out of range (of {total})")))?;
            if slot.is_some() {
                return Err(bad(format!("action number {n} stored twice")));
            }
            *slot = Some(DurableAction {
                agent: g.agent.clone(),
                evicted_app: apps.remove(&n),
                status: status.remove(&n).unwrap_or(ActionStatus::Pending),
            });
        }
        if let Some(n) = apps.keys().chain(status.keys()).next() {
            return Err(bad(format!(
                "action number {n} of {} has no action",
                g.agent
            )));
        }
    }
    // Every slot is filled: `total` numbers, each in range and stored once.
    Ok(slots.into_iter().flatten().collect())
}

/// `items` as JSON arrays of whole items, each at most [`MAX_VALUE_BYTES`]
/// (an item larger than that alone in its array).
pub fn pack<T: Serialize>(items: &[T]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for item in items {
        let bytes = crate::store::encode(item);
        if !cur.is_empty() && cur.len() + bytes.len() + 2 > MAX_VALUE_BYTES {
            cur.push(b']');
            out.push(std::mem::take(&mut cur));
        }
        cur.push(if cur.is_empty() { b'[' } else { b',' });
        cur.extend_from_slice(&bytes);
    }
    if !cur.is_empty() {
        cur.push(b']');
        out.push(cur);
    }
    out
}

/// Bytes an operation adds to a transaction's JSON body.
fn op_bytes(op: &Value) -> usize {
    // The ops are small JSON objects of base64 strings: their length is
    // what they add, plus a comma.
    op.to_string().len() + 1
}

/// `ops` in order, cut into transactions of at most `max_ops` operations
/// and [`MAX_TXN_BYTES`] (an operation larger than that alone).
pub fn txn_batches(ops: Vec<Value>, max_ops: usize) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> = Vec::new();
    let mut cur: Vec<Value> = Vec::new();
    let mut bytes = 0usize;
    for op in ops {
        let b = op_bytes(&op);
        if !cur.is_empty() && (cur.len() >= max_ops.max(1) || bytes + b > MAX_TXN_BYTES) {
            out.push(std::mem::take(&mut cur));
            bytes = 0;
        }
        bytes += b;
        cur.push(op);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn action(agent: &str, app: Option<&str>, status: ActionStatus) -> DurableAction {
        DurableAction {
            agent: agent.into(),
            evicted_app: app.map(str::to_string),
            status,
        }
    }

    #[test]
    fn a_round_stored_per_agent_comes_back_in_number_order() {
        let actions = vec![
            action("a", None, ActionStatus::Pending),
            action("b", Some("t/web"), ActionStatus::Pending),
            action("a", None, ActionStatus::Applied),
            action(
                "c",
                None,
                ActionStatus::Failed {
                    error: "no such container".into(),
                },
            ),
            action("b", None, ActionStatus::Superseded),
        ];
        let g = group(&actions);
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].n, vec![0, 2]);
        assert_eq!(g[1].apps, vec![(1, "t/web".to_string())]);
        let mut chunks: Vec<AgentActions> = Vec::new();
        for v in pack(&g) {
            chunks.extend(crate::store::decode::<Vec<AgentActions>>("k", &v).expect("decodes"));
        }
        assert_eq!(ungroup("k", chunks).expect("ungroups"), actions);
    }

    #[test]
    fn a_damaged_round_is_an_error_naming_its_key() {
        let one = |n: Vec<u32>| AgentActions {
            agent: "a".into(),
            n,
            apps: Vec::new(),
            status: Vec::new(),
        };
        for groups in [vec![one(vec![0, 5])], vec![one(vec![0]), one(vec![0])]] {
            let e = ungroup("/t/rounds/7", groups).expect_err("damaged");
            assert!(e.to_string().contains("/t/rounds/7"), "{e}");
        }
        let orphan = AgentActions {
            apps: vec![(3, "x".into())],
            ..one(vec![0])
        };
        assert!(ungroup("k", vec![orphan]).is_err());
    }

    #[test]
    fn a_million_actions_fit_etcd_limits_in_a_few_transactions() {
        let actions: Vec<DurableAction> = (0..1_000_000)
            .map(|i| {
                action(
                    &format!("agent-{:05}", i % 10_000),
                    None,
                    ActionStatus::Pending,
                )
            })
            .collect();
        let values = pack(&group(&actions));
        assert!(values.iter().all(|v| v.len() <= MAX_VALUE_BYTES));
        let total: usize = values.iter().map(Vec::len).sum();
        // about 7-8 bytes an action, not 60
        assert!(total < 9_000_000, "{total} bytes");
        let ops: Vec<Value> = values
            .iter()
            .enumerate()
            .map(|(i, v)| super::super::client::put(&format!("/t/rounds/1/{i:06}"), v))
            .collect();
        let batches = txn_batches(ops, 100);
        assert!(batches
            .iter()
            .all(|b| b.iter().map(op_bytes).sum::<usize>() <= MAX_TXN_BYTES));
        assert!(batches.len() < 20, "{} transactions", batches.len());
    }

    proptest! {
        #[test]
        fn grouping_round_trips(agents in proptest::collection::vec(0u8..5, 0..300), evict in any::<u64>()) {
            let actions: Vec<DurableAction> = agents
                .iter()
                .enumerate()
                .map(|(i, a)| action(
                    &format!("n{a}"),
                    ((evict >> (i % 64)) & 1 == 1).then_some("t/app"),
                    if i % 7 == 0 { ActionStatus::Applied } else { ActionStatus::Pending },
                ))
                .collect();
            prop_assert_eq!(ungroup("k", group(&actions)).expect("round trip"), actions);
        }

        #[test]
        fn batches_keep_order_and_limits(sizes in proptest::collection::vec(0usize..300_000, 0..40), max_ops in 1usize..10) {
            let ops: Vec<Value> = sizes.iter().map(|&s| Value::String("x".repeat(s))).collect();
            let batches = txn_batches(ops.clone(), max_ops);
            for b in &batches {
                prop_assert!(b.len() <= max_ops);
                prop_assert!(b.len() == 1 || b.iter().map(op_bytes).sum::<usize>() <= MAX_TXN_BYTES);
            }
            prop_assert_eq!(batches.concat(), ops);
        }
    }
}
