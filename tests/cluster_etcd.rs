//! Several `tailor shaper` replicas sharing state in a REAL three-member
//! etcd cluster (Debian's `etcd-server`, started here on loopback with
//! temporary data directories), with agents on the REAL dockerd.
//!
//! * `killing_the_leader_then_an_etcd_member_keeps_shaping`: two shaper
//!   processes, two agent processes (this binary re-run as
//!   `cluster_etcd_agent_child`), containers on dockerd. The leader is
//!   killed, then one etcd member: shaping resumes under the new leader
//!   within 3 intervals, failure counts and action ids carry over (no ack
//!   is "unknown", no failure counted twice). The time from the kill to the
//!   new leader's first round is printed (`--nocapture`).
//!
//! * `a_follower_cut_off_from_etcd_stops_redirecting`: with every etcd
//!   member gone, a follower stops sending agents to the leader it knew
//!   (503 `no_leader` instead of a 307), as that leader steps down.
//!
//! The store and its election on their own are in tests/etcd_store.rs.
//!
//! In CI (CI=true) these tests fail when etcd or Docker is missing;
//! elsewhere they skip loudly. `scripts/test.sh` installs both.

mod agent_child;
mod agent_common;
mod etcd_common;
mod loopback_common;

use agent_child::{run_agent_child, spawn_agent_child};
use agent_common::*;
use etcd_common::*;
use loopback_common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "cluster-etcd-test-token-0123456789";
const INTERVAL_S: f64 = 3.0;

/// `config check` names every bad `[etcd]` key, next to the others.
#[test]
fn config_check_reports_bad_etcd_settings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    write_private(&token, &format!("{TOKEN}\n"));
    let cfg = dir.path().join("shaper.toml");
    std::fs::write(
        &cfg,
        format!(
            "token_file = \"{}\"\ninterval_s = 0.0\n[etcd]\nendpoints = [\"127.0.0.1:2379\"]\nadvertise_url = \"http://127.0.0.1:9848\"\nlease_ttl_s = 0\nprefix = \"x\"\nbogus = 1\n",
            token.display()
        ),
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["config", "check", "--kind", "shaper"])
        .arg(&cfg)
        .output()
        .expect("config check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    for key in [
        "etcd.bogus",
        "interval_s",
        "etcd.endpoints",
        "etcd.prefix",
        "etcd.lease_ttl_s",
    ] {
        assert!(
            text.contains(&format!(": {key}: ")),
            "{key} missing in:\n{text}"
        );
    }
}

/// etcd with TLS and `--client-cert-auth` (a one-member cluster on
/// loopback, certificates from a test CA): the shaper's store works with
/// `ca_file`, `cert_file` and `key_file`, and etcd refuses it without the
/// client certificate; a key that others may read is refused before any
/// connection.
#[test]
fn etcd_over_tls_needs_the_client_certificate() {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    };
    use shaperd::etcd::{EtcdConfig, EtcdStore};
    use shaperd::store::StateStore;
    let Some(bin) = etcd_or_skip("etcd over TLS") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| dir.path().join(name);
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "tailor test CA");
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let leaf = |names: Vec<String>, usages: Vec<ExtendedKeyUsagePurpose>, cn: &str| {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(names).expect("params");
        p.extended_key_usages = usages;
        p.distinguished_name.push(DnType::CommonName, cn);
        let cert = p.signed_by(&key, &ca, &ca_key).expect("signed");
        (cert.pem(), key.serialize_pem())
    };
    // etcd's JSON gateway calls its own gRPC port with the server
    // certificate: with --client-cert-auth that one needs clientAuth too
    let (server_crt, server_key) = leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
        "etcd",
    );
    let (client_crt, client_key) = leaf(
        vec![],
        vec![ExtendedKeyUsagePurpose::ClientAuth],
        "shaper-1",
    );
    std::fs::write(path("ca.crt"), ca.pem()).expect("write");
    std::fs::write(path("server.crt"), server_crt).expect("write");
    write_private(&path("server.key"), &server_key);
    std::fs::write(path("client.crt"), client_crt).expect("write");
    write_private(&path("client.key"), &client_key);

    let [client_port, peer_port] = free_ports::<2>();
    let log = path("etcd.log");
    let _etcd = Proc {
        child: std::process::Command::new(&bin)
            .arg("--name=tls0")
            .arg(format!("--data-dir={}", path("data").display()))
            .arg(format!(
                "--listen-client-urls=https://127.0.0.1:{client_port}"
            ))
            .arg(format!(
                "--advertise-client-urls=https://127.0.0.1:{client_port}"
            ))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"
            ))
            .arg(format!(
                "--initial-cluster=tls0=http://127.0.0.1:{peer_port}"
            ))
            .arg(format!("--cert-file={}", path("server.crt").display()))
            .arg(format!("--key-file={}", path("server.key").display()))
            .arg(format!("--trusted-ca-file={}", path("ca.crt").display()))
            .arg("--client-cert-auth")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("spawn etcd"),
    };
    let cfg = |cert: bool| EtcdConfig {
        endpoints: vec![format!("https://127.0.0.1:{client_port}")],
        prefix: "/tls-test".into(),
        lease_ttl_s: 5,
        advertise_url: "https://127.0.0.1:9848".into(),
        request_timeout_s: 2.0,
        ca_file: Some(path("ca.crt")),
        cert_file: cert.then(|| path("client.crt")),
        key_file: cert.then(|| path("client.key")),
    };
    for c in [cfg(true), cfg(false)] {
        c.validate().expect("valid [etcd]");
        c.check_files().expect("files as the client reads them");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let with_cert = EtcdStore::new(&cfg(true)).expect("client with a certificate");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let epoch = loop {
            match with_cert.init_epoch("ep-tls").await {
                Ok(e) => break e,
                Err(e) => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "etcd over TLS never answered: {e}\n{}",
                        tail(&log)
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            }
        };
        assert_eq!(epoch, "ep-tls");
        let without = EtcdStore::new(&cfg(false)).expect("client without a certificate");
        let err = without
            .init_epoch("ep-other")
            .await
            .expect_err("etcd refuses a client without a certificate");
        eprintln!("without a client certificate: {err}");
        assert_eq!(
            with_cert.init_epoch("ep-again").await.expect("epoch"),
            "ep-tls",
            "the certified client still works"
        );
    });
    // a key that others may read: refused before any connection
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path("client.key"), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let err = EtcdStore::new(&cfg(true)).expect_err("world-readable key");
    assert!(err.to_string().contains("key_file"), "{err}");
    let errs = cfg(true)
        .check_files()
        .expect_err("config check sees it too");
    assert!(errs.to_string().contains("key_file"), "{errs}");
}

/// QA C14: once etcd is gone, a follower stops redirecting agents to the
/// leader it knew (that leader cannot renew its lease and steps down): it
/// answers `503 no_leader` within a lease or two, and says why in its log.
#[test]
fn a_follower_cut_off_from_etcd_stops_redirecting() {
    let Some(bin) = etcd_or_skip("etcd stale redirect") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write_private(&d.join("token"), &format!("{TOKEN}\n"));
    let mut etcd = Etcd::start(&bin, d);
    let creds = d.join("credentials.toml");
    let token = register_agent(d, &creds, "st-a", "team");
    let token = std::fs::read_to_string(token).expect("agent token");
    let [p1, p2] = free_ports::<2>();
    let replicas = [
        start_replica(d, "st-one", p1, &creds, &etcd.endpoints()),
        start_replica(d, "st-two", p2, &creds, &etcd.endpoints()),
    ];
    let diag = || {
        let mut s = etcd.diag();
        for r in &replicas {
            s.push('\n');
            s.push_str(&tail(&r.log));
        }
        s
    };
    let leader = wait_for_one_leader(&replicas, diag);
    let follower = &replicas[1 - leader];
    let report = |r: &Replica| http_post(r.port, "/v1/report", token.trim(), "{}");
    // The follower redirects once its own campaign has seen the leader
    // (until then, or after a loop that took a lease on a loaded machine,
    // it answers no_leader).
    let mut redirect = String::new();
    wait_until(
        "the follower redirects to the leader",
        Duration::from_secs(20),
        || match report(follower) {
            Some((307, body)) => {
                redirect = body;
                true
            }
            _ => false,
        },
        diag,
    );
    assert!(redirect.contains(&replicas[leader].url()), "{redirect}");
    let diag_before = diag();
    for m in &mut etcd.members {
        m.kill();
    }
    let t_cut = Instant::now();
    wait_until(
        "the follower answers no_leader",
        Duration::from_secs(20),
        || report(follower).is_some_and(|(c, b)| c == 503 && b.contains("no_leader")),
        || diag_before.clone() + &tail(&follower.log),
    );
    println!(
        "etcd gone -> the follower answers no_leader after {:.1} s (lease_ttl_s 2)",
        t_cut.elapsed().as_secs_f64()
    );
    assert!(
        std::fs::read_to_string(&follower.log)
            .unwrap_or_default()
            .contains("no word from etcd for a lease"),
        "{}",
        tail(&follower.log)
    );
    // So does the old leader, which stepped down.
    wait_until(
        "the old leader answers no_leader",
        Duration::from_secs(20),
        || report(&replicas[leader]).is_some_and(|(c, _)| c == 503),
        || tail(&replicas[leader].log),
    );
}

/// Waits until exactly one of `replicas` leads: its index.
fn wait_for_one_leader(replicas: &[Replica], diag: impl Fn() -> String) -> usize {
    wait_until(
        "one replica leads",
        Duration::from_secs(30),
        || replicas.iter().filter(|r| r.is_leader()).count() == 1,
        diag,
    );
    replicas
        .iter()
        .position(Replica::is_leader)
        .expect("leader")
}

/// A shaper replica: its port, config and log.
struct Replica {
    port: u16,
    log: PathBuf,
    proc: Proc,
}

impl Replica {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn status(&self) -> Option<serde_json::Value> {
        let (code, body) = http_get(self.port, "/v1/status", Some(TOKEN))?;
        (code == 200).then(|| serde_json::from_str(&body).ok())?
    }

    fn is_leader(&self) -> bool {
        self.status().is_some_and(|s| s["role"] == "leader")
    }

    fn round(&self) -> u64 {
        self.status().and_then(|s| s["round"].as_u64()).unwrap_or(0)
    }

    fn metric(&self, needle: &str) -> Option<f64> {
        let (_, body) = http_get(self.port, "/metrics", Some(TOKEN))?;
        body.lines()
            .find(|l| l.starts_with(needle))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }
}

fn start_replica(dir: &Path, name: &str, port: u16, creds: &Path, endpoints: &[String]) -> Replica {
    let cfg = dir.join(format!("shaper-{name}.toml"));
    let token = dir.join("token");
    let text = format!(
        r#"
listen = "127.0.0.1:{port}"
token_file = "{token}"
credentials_file = "{creds}"
interval_s = {INTERVAL_S}
stale_after_intervals = 3
warmup_intervals = 1
{TEST_SHAPER_TABLES}
[etcd]
endpoints = {endpoints}
prefix = "/tailor-test"
lease_ttl_s = 2
advertise_url = "http://127.0.0.1:{port}"
request_timeout_s = 1.0
"#,
        token = token.display(),
        creds = creds.display(),
        endpoints = toml_list(endpoints),
    );
    std::fs::write(&cfg, text).expect("write shaper.toml");
    // `config check` accepts what the replica runs with.
    let check = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["config", "check", "--kind", "shaper"])
        .arg(&cfg)
        .output()
        .expect("config check");
    assert!(
        check.status.success(),
        "config check: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let log = dir.join(format!("shaper-{name}.log"));
    let child = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["shaper", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).expect("log")))
        .spawn()
        .expect("spawn tailor shaper");
    let mut r = Replica {
        port,
        log,
        proc: Proc { child },
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while http_get(port, "/healthz", None).map(|(s, _)| s) != Some(200) {
        assert!(
            r.proc.alive(),
            "tailor shaper {name} exited: {}",
            tail(&r.log)
        );
        assert!(
            Instant::now() < deadline,
            "shaper {name} did not come up: {}",
            tail(&r.log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    r
}

fn start_agent(
    dir: &Path,
    agent_id: &str,
    mem_mib: u64,
    token_file: &Path,
    urls: &[String],
) -> Proc {
    let top = format!("mode = \"cluster\"\nrestart_evicted = false\nnode_name = \"{agent_id}\"\n");
    let tables = format!(
        r#"
[capacity]
cpu_cores = 4.0
mem_bytes = {mem}
[cluster]
shaper_url = {urls}
token_file = "{token}"
agent_id = "{agent_id}"
timeout_s = 1.0
[cluster.fail_safe]
hold_s = 60.0
regrow_fraction = 0.5
"#,
        mem = mem_mib * MIB,
        urls = toml_list(urls),
        token = token_file.display()
    );
    spawn_agent_child(
        "cluster_etcd_agent_child",
        agent_id,
        &top,
        &tables,
        None,
        &dir.join(format!("agent-{agent_id}.log")),
    )
}

/// Not a test: the agent process of the failover test (run by it as a
/// child of this binary, with its configuration in the environment).
#[test]
#[ignore = "helper process of the etcd cluster test"]
fn cluster_etcd_agent_child() {
    run_agent_child("cluster_etcd_agent_child", "the etcd cluster test");
}

#[test]
fn killing_the_leader_then_an_etcd_member_keeps_shaping() {
    let Some(bin) = etcd_or_skip("etcd failover") else {
        return;
    };
    if docker_or_skip("etcd failover").is_none() {
        return;
    }
    // Host b cannot hold both applications' cores: the later application
    // is preempted on both hosts (one failure); host a's idle container is
    // shrunk.
    let early = TestContainer::run(
        "tailor-et-early",
        256,
        1.0,
        &labels("et-b", "et-early", "core"),
        &["200:0.02:3600"],
        &[],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let late_core = TestContainer::run(
        "tailor-et-late-core",
        200,
        1.0,
        &labels("et-b", "et-late", "core"),
        &["150:0.02:3600"],
        &[],
    );
    let late_el = TestContainer::run(
        "tailor-et-late-el",
        64,
        1.0,
        &labels("et-a", "et-late", "elastic"),
        &["8:0.02:3600"],
        &[],
    );
    let idle = TestContainer::run(
        "tailor-et-idle",
        256,
        1.0,
        &labels("et-a", "et-idle", "core"),
        &["8:0.02:3600"],
        &[],
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write_private(&d.join("token"), &format!("{TOKEN}\n"));
    let mut etcd = Etcd::start(&bin, d);
    let creds = d.join("credentials.toml");
    let ta = register_agent(d, &creds, "et-a", "team");
    let tb = register_agent(d, &creds, "et-b", "team");
    let [p1, p2] = free_ports::<2>();
    let mut replicas = [
        start_replica(d, "one", p1, &creds, &etcd.endpoints()),
        start_replica(d, "two", p2, &creds, &etcd.endpoints()),
    ];
    let urls: Vec<String> = replicas.iter().map(Replica::url).collect();
    let _a = start_agent(d, "et-a", 1024, &ta, &urls);
    let _b = start_agent(d, "et-b", 320, &tb, &urls);
    let etcd_logs = etcd.logs.clone();
    let diag = || {
        let mut s = etcd_logs
            .iter()
            .map(|l| tail(l))
            .collect::<Vec<_>>()
            .join("\n");
        for f in [
            "shaper-one.log",
            "shaper-two.log",
            "agent-et-a.log",
            "agent-et-b.log",
        ] {
            s.push('\n');
            s.push_str(&tail(&d.join(f)));
        }
        s
    };
    let leader = wait_for_one_leader(&replicas, diag);
    let survivor = 1 - leader;
    wait_until(
        "the later application is preempted on both hosts and the failure counted",
        Duration::from_secs(90),
        || {
            !late_core.running()
                && !late_el.running()
                && replicas[leader]
                    .status()
                    .is_some_and(|s| s["app_failures"]["team/et-late"] == 1)
        },
        diag,
    );
    wait_until(
        "the idle container is shrunk",
        Duration::from_secs(60),
        || idle.mem_limit() < 128 * MIB,
        diag,
    );
    assert!(early.running(), "the earlier application keeps running");
    assert!(!replicas[survivor].is_leader());

    // Kill the leader shaper.
    let round_before = replicas[leader].round();
    let t_kill = Instant::now();
    replicas[leader].proc.kill();
    let new = &replicas[survivor];
    wait_until(
        "the other replica leads and plans a round",
        Duration::from_secs(60),
        || new.is_leader() && new.round() > round_before,
        diag,
    );
    let failover_s = t_kill.elapsed().as_secs_f64();
    println!(
        "failover: leader killed -> first round under the new leader in {failover_s:.2} s (interval {INTERVAL_S} s, lease_ttl_s 2)"
    );
    assert!(
        failover_s <= 3.0 * INTERVAL_S,
        "shaping resumed after {failover_s:.2} s, more than 3 intervals\n{}",
        diag()
    );
    let st = new.status().expect("status");
    assert_eq!(
        st["app_failures"]["team/et-late"], 1,
        "the failure count carried over, counted once: {st}"
    );
    assert!(
        st["evicted_apps"]
            .as_array()
            .is_some_and(|v| v.iter().any(|e| e["app"] == "team/et-late")),
        "the evicted application carried over: {st}"
    );

    // Then one etcd member (the first endpoint, which the replica used).
    etcd.members[0].kill();
    let r = new.round();
    wait_until(
        "three more rounds with one etcd member down",
        Duration::from_secs(60),
        || new.is_leader() && new.round() >= r + 3,
        diag,
    );
    // Shaping goes on: a new idle container is shrunk by the new leader.
    let idle2 = TestContainer::run(
        "tailor-et-idle2",
        256,
        1.0,
        &labels("et-a", "et-idle2", "core"),
        &["8:0.02:3600"],
        &[],
    );
    wait_until(
        "the new idle container is shrunk",
        Duration::from_secs(60),
        || idle2.mem_limit() < 128 * MIB,
        diag,
    );
    let st = new.status().expect("status");
    assert_eq!(
        st["app_failures"]["team/et-late"], 1,
        "never counted twice: {st}"
    );
    let agents = st["agents"].as_array().cloned().unwrap_or_default();
    assert_eq!(agents.len(), 2, "{st}");
    assert!(agents.iter().all(|a| a["stale"] == false), "{st}");
    let unknown = new.metric("tailor_shaper_acks_total{outcome=\"unknown\"}");
    assert_eq!(unknown, Some(0.0), "no ack came back unknown\n{}", diag());
    // the agent acks at once, or with its next report when the new leader
    // did not answer the ack (its client still tried the old one)
    wait_until(
        "the new leader received acks",
        Duration::from_secs(30),
        || {
            new.metric("tailor_shaper_acks_total{outcome=\"applied\"}")
                .unwrap_or(0.0)
                >= 1.0
        },
        diag,
    );
    assert!(early.running() && !idle.oom_killed());
}
