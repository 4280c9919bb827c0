//! Files the shaper reads at start and watches: the credentials file
//! (re-read when it changes, and shared through the state store) and the
//! TLS certificate and key.

use crate::auth::check_private_key_file;
use crate::credentials::{CredentialsFile, FileStamp};
use crate::server::Shared;
use crate::ClusterError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Re-reads the credentials file whenever it changes (checked every
/// second); a file that does not load keeps the credentials in force.
///
/// With `publish` (replicas sharing etcd), the file is handed to the
/// election loop ([`crate::ha::run_election`]), which offers it to etcd and
/// puts in force what etcd holds: a stale file never takes effect, not even
/// on this replica. Without it (one shaper), the file is put in force here.
pub(crate) async fn watch_credentials(
    shared: Arc<Shared>,
    path: PathBuf,
    mut stamp: Option<FileStamp>,
    publish: Option<tokio::sync::watch::Sender<CredentialsFile>>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = FileStamp::of(&path);
        if now == stamp {
            continue;
        }
        let p = path.clone();
        let loaded = tokio::task::spawn_blocking(move || CredentialsFile::load(&p, true)).await;
        match loaded {
            Ok(Ok(file)) => {
                tracing::info!(
                    path = %path.display(),
                    credentials = file.credentials.len(),
                    generation = file.generation,
                    revoked = file.revoked.len(),
                    "credentials reloaded"
                );
                match &publish {
                    Some(tx) => {
                        tx.send_replace(file);
                    }
                    None => {
                        if shared.store.is_shared() {
                            let where_ = path.display().to_string();
                            match shared.store.publish_credentials(&file).await {
                                Ok(outcome) => crate::ha::log_publication(&outcome, &file, &where_),
                                Err(e) => tracing::error!(
                                    error = %e,
                                    "credentials not published to the shared store"
                                ),
                            }
                        }
                        shared.set_credentials(file.index());
                    }
                }
                shared.with_metrics(|m| m.credential_reloads[0] += 1);
                stamp = now;
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "credentials file not reloaded; the previous credentials stay in force");
                shared.with_metrics(|m| m.credential_reloads[1] += 1);
                stamp = now;
            }
            Err(e) => tracing::error!(error = %e, "credentials reload task failed"),
        }
    }
}

pub(crate) fn tls_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<axum_server::tls_rustls::RustlsConfig, ClusterError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ClusterError::Tls(format!("{}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(ClusterError::Tls(format!(
            "{}: no certificate found",
            cert.display()
        )));
    }
    check_private_key_file(key)?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| ClusterError::Tls(format!("{}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut sc = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClusterError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ClusterError::Tls(e.to_string()))?;
    sc.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(axum_server::tls_rustls::RustlsConfig::from_config(
        Arc::new(sc),
    ))
}
