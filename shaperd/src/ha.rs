//! Several `tailor shaper` replicas (`[etcd]` in `shaper.toml`): one leader
//! plans rounds and answers agents, the others redirect them.
//!
//! * Election: every replica keeps a lease in etcd and campaigns every
//!   `lease_ttl_s / 3` (see [`crate::etcd`]). A dead leader's lease expires
//!   after `lease_ttl_s`; a follower then takes the lead, loads the durable
//!   state ([`crate::store`]), and plans its first round one warmup after
//!   that (agents re-report meanwhile).
//! * Followers answer `POST /v1/report` and `POST /v1/ack` with
//!   `307 Temporary Redirect`, `Location: <leader's advertise_url><path>`
//!   and the JSON error `not_leader` (or `503 no_leader` while no leader is
//!   known: also once etcd has not answered a follower for a lease, as the
//!   leader it knew cannot have renewed its own lease either). The agent
//!   (`agent::cluster::ClusterClient`) follows the redirect only to a URL
//!   of its `[cluster] shaper_url` list, so its token never goes to an
//!   unlisted host.
//! * A leader that cannot renew its lease for `lease_ttl_s`, or whose fenced
//!   write fails, steps down at once: it forgets its state and redirects.
//! * Credentials: every replica uses what etcd holds (checked every tick),
//!   minus the keys its own file revokes. A replica offers its credentials
//!   file (hashes only) to etcd when it starts with a non-empty one and
//!   whenever the file changes (retried every tick while etcd fails), and
//!   etcd takes it only as [`crate::credentials::plan_publication`] allows:
//!   revoked keys are tombstones in etcd that only grow, so a revocation on
//!   one replica reaches all of them and stays in force; a file whose
//!   `generation` is not above etcd's (a backup, a replica whose copy was
//!   not updated) or that holds a revoked key is refused with an error in
//!   the log (`credentials file refused`), and etcd's set stays in force.

use crate::credentials::{CredentialsFile, Publication};
use crate::etcd::EtcdStore;
use crate::protocol::{ErrorBody, ERROR_NOT_LEADER, ERROR_NO_LEADER};
use crate::server::Shared;
use crate::state::Role;
use crate::store::{StateStore, StoreError};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lets requests through on the leader; redirects them on a follower.
pub async fn leader_only(State(sh): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    match sh.role() {
        (Role::Leader, _) => next.run(req).await,
        (Role::Follower, Some(url)) => {
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            let location = format!("{url}{path}");
            let mut resp = (
                StatusCode::TEMPORARY_REDIRECT,
                Json(ErrorBody {
                    error: ERROR_NOT_LEADER.into(),
                    message: format!("this shaper replica is a follower; the leader is {url}"),
                    min_boot_id: None,
                }),
            )
                .into_response();
            if let Ok(v) = HeaderValue::from_str(&location) {
                resp.headers_mut().insert(header::LOCATION, v);
            }
            resp
        }
        (Role::Follower, None) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(ErrorBody {
                error: ERROR_NO_LEADER.into(),
                message: "no shaper replica leads at the moment; try another or retry".into(),
                min_boot_id: None,
            }),
        )
            .into_response(),
    }
}

/// Stops leading (no-op on a follower): forgets the state, redirects.
pub fn step_down(sh: &Shared, why: &str) {
    if sh.role().0 != Role::Leader {
        return;
    }
    tracing::warn!(reason = why, "stepping down: no longer the shaper leader");
    sh.set_role(Role::Follower, None);
    let now_s = sh.now_s();
    sh.with_state(|s| s.clear_for_follower(now_s));
}

/// Takes the lead with `lease`: loads the durable state, then plans.
async fn promote(sh: &Shared, etcd: &EtcdStore, lease: i64, url: &str) -> Result<(), StoreError> {
    let t0 = Instant::now();
    etcd.set_fence(lease);
    let proposed = sh.with_state(|s| s.epoch().to_string());
    let epoch = etcd.init_epoch(&proposed).await?;
    let durable = etcd.load().await?;
    let round = durable.round;
    let rounds = durable.rounds.len();
    let apps = durable.app_failures.len();
    let now_s = sh.now_s();
    sh.with_state(|s| s.restore(epoch.clone(), durable, now_s));
    sh.set_role(Role::Leader, Some(url.to_string()));
    sh.promoted.notify_one();
    tracing::info!(
        %epoch,
        round,
        rounds_retained = rounds,
        apps_with_failures = apps,
        load_s = t0.elapsed().as_secs_f64(),
        "this replica is now the shaper leader"
    );
    Ok(())
}

/// Logs what became of the local credentials file offered to the store
/// (an error, with the reason, when it was refused).
pub(crate) fn log_publication(outcome: &Publication, file: &CredentialsFile, path: &str) {
    match outcome {
        Publication::UpToDate => tracing::debug!(
            path,
            generation = file.generation,
            "credentials file matches the shared credentials"
        ),
        Publication::Published { generation } => tracing::info!(
            path,
            generation,
            credentials = file.credentials.len(),
            revoked = file.revoked.len(),
            "credentials file published to the shared store"
        ),
        Publication::Refused {
            file_generation,
            stored_generation,
            revived,
            differs_for,
            revocations_merged,
        } => tracing::error!(
            path,
            file_generation,
            stored_generation,
            revived = %revived.join(", "),
            differs_for = %differs_for.join(", "),
            revocations_merged,
            "credentials file refused (STALE: older than the shared credentials, or it brings back revoked keys); {outcome}"
        ),
    }
}

/// The election loop of a replica (runs for the server's lifetime).
/// `local` carries the credentials file as last read (see
/// [`crate::watch::watch_credentials`]).
pub async fn run_election(
    sh: Arc<Shared>,
    etcd: Arc<EtcdStore>,
    mut local: tokio::sync::watch::Receiver<CredentialsFile>,
    path: String,
) {
    let ttl = etcd.lease_ttl_s();
    let period = Duration::from_secs_f64((f64::from(ttl) / 3.0).max(0.5));
    let ttl_d = Duration::from_secs(u64::from(ttl));
    let url = etcd_advertise(&etcd);
    let mut unpublished = true;
    let mut shared_creds: Option<CredentialsFile> = None;
    let mut lease: i64 = 0;
    let mut renewed = Instant::now();
    // When etcd last told this replica who leads.
    let mut leader_seen = Instant::now();
    loop {
        // The credentials first: a replica takes the lead with etcd's.
        if local.has_changed().unwrap_or(false) {
            unpublished = true;
        }
        let file = local.borrow_and_update().clone();
        if unpublished {
            match etcd.publish_credentials(&file).await {
                Ok(outcome) => {
                    log_publication(&outcome, &file, &path);
                    if matches!(outcome, Publication::Refused { .. }) {
                        sh.with_metrics(|m| m.credential_publications_refused += 1);
                    }
                    unpublished = false;
                }
                Err(e) => {
                    tracing::warn!(error = %e, path = %path, "credentials file not published to etcd yet: retrying")
                }
            }
        }
        match etcd.credentials().await {
            Ok(Some(mut f)) => {
                // What this replica's own file revokes stays revoked here
                // even before etcd has it.
                let gone = f.drop_revoked(&file.revoked);
                if !gone.is_empty() {
                    tracing::warn!(
                        revoked = gone.len(),
                        "etcd's credentials hold keys this replica's file revokes: refused here"
                    );
                }
                if shared_creds.as_ref() != Some(&f) {
                    tracing::info!(
                        credentials = f.credentials.len(),
                        generation = f.generation,
                        revoked = f.revoked.len(),
                        "credentials from etcd in force"
                    );
                    sh.set_credentials(f.index());
                    shared_creds = Some(f);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the credentials from etcd"),
        }
        if lease == 0 {
            match etcd.client().grant(ttl).await {
                Ok(id) => {
                    lease = id;
                    renewed = Instant::now();
                }
                Err(e) => tracing::warn!(error = %e, "cannot get an etcd lease"),
            }
        } else {
            match etcd.client().keepalive(lease).await {
                Ok(true) => renewed = Instant::now(),
                Ok(false) => {
                    step_down(&sh, "the etcd lease expired");
                    lease = 0;
                }
                Err(e) => tracing::warn!(error = %e, "cannot renew the etcd lease"),
            }
        }
        if lease != 0 && renewed.elapsed() >= ttl_d {
            // The lease may have expired unseen: another replica may lead.
            step_down(&sh, "the etcd lease was not renewed in time");
            lease = 0;
        }
        if lease != 0 {
            let campaign = etcd.campaign(lease).await;
            if campaign.is_ok() {
                leader_seen = Instant::now();
            }
            match campaign {
                Ok(info) if info.mine => {
                    if sh.role().0 != Role::Leader {
                        if let Err(e) = promote(&sh, &etcd, lease, &url).await {
                            tracing::error!(error = %e, "cannot load the shared state: giving up the lead");
                            let _ = etcd.client().revoke(lease).await;
                            lease = 0;
                        }
                    }
                }
                Ok(info) => {
                    step_down(&sh, "another replica leads");
                    let (_, known) = sh.role();
                    if known != info.url {
                        tracing::info!(
                            leader = info.url.as_deref().unwrap_or("unknown"),
                            "shaper leader"
                        );
                    }
                    sh.set_role(Role::Follower, info.url);
                }
                Err(e) => tracing::warn!(error = %e, "cannot campaign in etcd"),
            }
        }
        forget_stale_leader(&sh, leader_seen.elapsed(), ttl_d);
        tokio::time::sleep(period).await;
    }
}

/// A follower that has not heard from etcd for a lease stops redirecting
/// to the leader it knew: that leader cannot renew its lease either, so it
/// has stepped down or will (QA C14). Agents get `503 no_leader` until
/// etcd names a leader again.
fn forget_stale_leader(sh: &Shared, unheard: Duration, ttl: Duration) {
    if unheard < ttl {
        return;
    }
    if let (Role::Follower, Some(url)) = sh.role() {
        tracing::warn!(
            leader = %url,
            unheard_s = unheard.as_secs_f64(),
            "no word from etcd for a lease: the leader may have stepped down; answering no_leader"
        );
        sh.set_role(Role::Follower, None);
    }
}

fn etcd_advertise(etcd: &EtcdStore) -> String {
    etcd.advertise_url().to_string()
}
