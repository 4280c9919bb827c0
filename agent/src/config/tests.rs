use super::*;

#[test]
fn empty_file_is_the_default() {
    let c = check_toml("").expect("valid");
    assert_eq!(c, AgentConfig::default());
    assert_eq!(c.actuation, Actuation::Recommend);
    assert!(!c.manage_unlimited);
    assert_eq!(c.shaper.max_evictions_per_round, Some(1));
    // a [shaper] table without the key gets the same cap
    let t = check_toml("[shaper]\nk1 = 0.1\n").expect("valid");
    assert_eq!(t.shaper.max_evictions_per_round, Some(1));
    let u = check_toml("[shaper]\nmax_evictions_per_round = 5\n").expect("valid");
    assert_eq!(u.shaper.max_evictions_per_round, Some(5));
    let err = check_toml("unlimited_request_mem_bytes = 1.0\nunlimited_request_cpu_cores = -1")
        .expect_err("invalid");
    assert_eq!(
        err.keys(),
        vec!["unlimited_request_cpu_cores", "unlimited_request_mem_bytes"]
    );
    assert_eq!(c.interval_s, 10.0);
    assert_eq!(c.http.listen, "127.0.0.1:9847");
}

#[test]
fn tune_snippet_is_accepted() {
    let c = check_toml("# written by tailor tune\n[shaper]\nk1 = 0.1\nk2 = 2.0\n").expect("valid");
    assert_eq!(c.shaper.k1, 0.1);
    assert_eq!(c.shaper.k2, 2.0);
}

#[test]
fn every_error_at_once_with_keys() {
    let text = r#"
interval_s = -1
bogus = 3
actuation = "yolo"
[capacity]
cpu_cores = "two"
extra = 1
[shaper]
k1 = -0.5
nope = true
[http]
listen = "not an address"
"#;
    let err = check_toml(text).expect_err("invalid");
    let keys = err.keys();
    for want in [
        "interval_s",
        "bogus",
        "actuation",
        "capacity.cpu_cores",
        "capacity.extra",
        "shaper.nope",
        // a value error next to an unknown key of the same table
        "shaper.k1",
        "http.listen",
    ] {
        assert!(keys.contains(&want), "missing {want} in {keys:?}");
    }
    let err2 = check_toml("[shaper]\nk1 = -0.5\nk2 = -1\n").expect_err("invalid");
    let keys2 = err2.keys();
    assert!(
        keys2.contains(&"shaper.k1") && keys2.contains(&"shaper.k2"),
        "{keys2:?}"
    );
}

#[test]
fn syntax_error_is_reported() {
    let err = check_toml("interval_s = = 3").expect_err("invalid");
    assert_eq!(err.keys(), vec![""]);
}

/// An integer beyond i64 fails in the TOML parser, before any key is
/// checked; the error names its key path all the same.
#[test]
fn an_integer_beyond_i64_names_its_key() {
    let err = check_toml("[capacity]\ncpu_cores = 4.0\nmem_bytes = 99999999999999999999\n")
        .expect_err("beyond i64");
    assert_eq!(err.keys(), vec!["capacity.mem_bytes"], "{err}");
    assert!(err.to_string().contains("line 3, column 13"), "{err}");
}

#[test]
fn cluster_mode_needs_cluster_table() {
    let err = check_toml("mode = \"cluster\"").expect_err("invalid");
    assert!(err.keys().contains(&"cluster"));
}

#[test]
fn merge_overrides_table_by_table() {
    let mut a: toml::Table = "interval_s = 5.0\n[shaper]\nk1 = 0.2\ngrace_period_s = 10.0"
        .parse()
        .expect("toml");
    let b: toml::Table = "[shaper]\nk1 = 0.3".parse().expect("toml");
    merge_tables(&mut a, b);
    let c = check_table(&a, false).expect("valid");
    assert_eq!(
        (c.interval_s, c.shaper.k1, c.shaper.grace_period_s),
        (5.0, 0.3, 10.0)
    );
}

#[test]
fn selector_matching() {
    let mut s = SelectorConfig::default();
    let mut labels = BTreeMap::new();
    assert!(!s.matches(&labels));
    labels.insert("tailor.enable".to_string(), "true".to_string());
    assert!(s.matches(&labels));
    s.labels.insert("team".into(), "a".into());
    assert!(!s.matches(&labels));
    labels.insert("team".into(), "a".into());
    assert!(s.matches(&labels));
}

#[test]
fn example_config_in_packaging_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/agent.toml");
    let text = std::fs::read_to_string(path).expect("packaging/agent.toml exists");
    check_toml(&text).expect("packaging/agent.toml is valid");
}

#[test]
fn missing_token_file_does_not_hide_other_cluster_errors() {
    let text = "mode = \"cluster\"\n[cluster]\nshaper_url = \"ftp://x\"\ntimeout_s = 0.0\nbogus = 1\n[cluster.fail_safe]\nhold_s = -1.0\nextra = 2\n";
    let err = check_toml(text).expect_err("invalid");
    assert_eq!(
        err.keys(),
        vec![
            "cluster.bogus",
            "cluster.fail_safe.extra",
            "cluster.token_file",
            "cluster.shaper_url",
            "cluster.timeout_s",
            "cluster.fail_safe.hold_s",
        ],
        "{err}"
    );
    assert!(
        err.to_string().contains("cluster.token_file: missing"),
        "{err}"
    );
}

#[test]
fn issue_13_values_get_a_clear_error() {
    for (text, key) in [
        ("interval_s = 1e308", "interval_s"),
        ("interval_s = 1e-10", "interval_s"),
        (
            "[shaper]\nhorizon_samples = 100000000000",
            "shaper.horizon_samples",
        ),
        (
            "[shaper]\nmin_history_samples = 100000000000",
            "shaper.min_history_samples",
        ),
        ("[shaper]\noom_memory_s = 1e300", "shaper.oom_memory_s"),
        ("restart_cooldown_s = inf", "restart_cooldown_s"),
        ("mem_watch_s = 0.01", "mem_watch_s"),
        ("mem_watch_s = nan", "mem_watch_s"),
        ("mem_watch_s = -1", "mem_watch_s"),
        ("[shaper]\noom_bump_factor = nan", "shaper.oom_bump_factor"),
        ("[capacity]\nmem_bytes = 1e300", "capacity.mem_bytes"),
        ("[shaper]\ngrace_period_s = 1e300", "shaper.grace_period_s"),
        (
            "[forecaster.gp]\ncold_max_iters = 100000000000",
            "forecaster.gp.cold_max_iters",
        ),
    ] {
        let err = check_toml(text).expect_err(text);
        assert_eq!(err.keys(), vec![key], "{text}: {err}");
    }
}

#[test]
fn token_file_is_checked_as_the_agent_reads_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    let mut cfg = AgentConfig {
        mode: Mode::Cluster,
        cluster: Some(ClusterClientConfig::new("http://127.0.0.1:1", &token)),
        ..AgentConfig::default()
    };
    let keys = |c: &AgentConfig| {
        c.check_files()
            .err()
            .map(|e| e.keys().iter().map(|k| k.to_string()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(keys(&cfg), vec!["cluster.token_file"], "missing file");
    std::fs::write(&token, "").expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert_eq!(keys(&cfg), vec!["cluster.token_file"], "empty file");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert_eq!(keys(&cfg), vec!["cluster.token_file"], "world-readable");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert!(keys(&cfg).is_empty(), "good token file");
    if let Some(c) = cfg.cluster.as_mut() {
        c.ca_cert_file = Some(dir.path().join("nope.pem"));
    }
    assert_eq!(keys(&cfg), vec!["cluster.ca_cert_file"]);
}

/// QA C14: a `shaper_url` of the wrong type (or a list with a non-string)
/// is one type error, not also "missing: this key is required".
#[test]
fn a_mistyped_shaper_url_is_not_also_missing() {
    for url in ["42", "[\"http://h:1\", 7]", "{ a = 1 }"] {
        let text =
            format!("mode = \"cluster\"\n[cluster]\nshaper_url = {url}\ntoken_file = \"/t\"\n");
        let err = check_toml(&text).expect_err(&text);
        assert_eq!(err.keys(), vec!["cluster.shaper_url"], "{text}: {err}");
        let msg = err.to_string();
        assert!(msg.contains("expected a URL string"), "{msg}");
        assert!(!msg.contains("missing"), "{msg}");
    }
}

#[test]
fn the_memory_watch_is_on_by_default_and_0_turns_it_off() {
    assert_eq!(AgentConfig::default().mem_watch_s, 1.0);
    assert_eq!(check_toml("mem_watch_s = 0").expect("off").mem_watch_s, 0.0);
    assert_eq!(
        check_toml("mem_watch_s = 2.5").expect("on").mem_watch_s,
        2.5
    );
}
