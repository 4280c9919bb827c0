//! `tailor config check` and `tailor agent --once` as a user runs them.

mod cli_common;
use cli_common::tailor;

mod agent_common;

use agent_common::*;
use std::process::Command;

/// A 256 MiB, 1-core container `tailor-t-<test>` using 8 MiB, labelled for
/// the agent; `None` when Docker is missing outside CI.
fn idle_container(test: &str) -> Option<TestContainer> {
    docker_or_skip(test)?;
    Some(TestContainer::run(
        &format!("tailor-t-{test}"),
        256,
        1.0,
        &[("tailor.enable", "true"), ("tailor.test", test)],
        &["8:0.02:3600"],
        &[],
    ))
}

/// `dir/agent.toml`: the `top` keys, then an agent that selects the
/// containers labelled `tailor.test = test`, without HTTP, forecasting with
/// `peak` after 3 samples and no grace period. Its host lock is
/// `dir/host.lock` unless `top` sets `host_lock` (tests run side by side on
/// one host).
fn agent_config(dir: &std::path::Path, test: &str, top: &str) -> std::path::PathBuf {
    let cfg = dir.join("agent.toml");
    let host_lock = if top.contains("host_lock") {
        String::new()
    } else {
        format!(
            "host_lock = {:?}\n",
            dir.join("host.lock").display().to_string()
        )
    };
    std::fs::write(
        &cfg,
        format!(
            "{top}{host_lock}[selector]\nlabels = {{ \"tailor.test\" = \"{test}\" }}\n[http]\nlisten = \"\"\n[shaper]\nmin_history_samples = 3\ngrace_period_s = 0.0\n[forecaster]\nkind = \"peak\"\n"
        ),
    )
    .expect("write agent.toml");
    cfg
}

#[test]
fn config_check_reports_every_error_with_file_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "interval_s = 0\nbogus = 1\n[shaper]\nk1 = -1.0\nk2 = -2.0\n[http]\nlisten = \"nowhere\"\n[capacity]\nmem_bytes = \"lots\"\n",
    )
    .expect("write");
    let (ok, stdout, _) = tailor(&["config", "check", bad.to_str().expect("utf8")]);
    assert!(!ok, "invalid config must fail");
    for key in [
        "interval_s",
        "bogus",
        "shaper.k1",
        "shaper.k2",
        "http.listen",
        "capacity.mem_bytes",
    ] {
        assert!(
            stdout.contains(&format!(": {key}: ")),
            "missing {key} in:\n{stdout}"
        );
    }
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with(bad.to_str().expect("utf8"))),
        "every line names the file:\n{stdout}"
    );
}

#[test]
fn config_check_accepts_example_and_tune_snippet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snippet = dir.path().join("tuned.toml");
    std::fs::write(
        &snippet,
        "# written by tailor tune\n[shaper]\nk1 = 0.1\nk2 = 2.0\n",
    )
    .expect("write");
    let example = workspace_root().join("packaging/agent.toml");
    let (ok, stdout, stderr) = tailor(&[
        "config",
        "check",
        "--print",
        example.to_str().expect("utf8"),
        snippet.to_str().expect("utf8"),
    ]);
    assert!(ok, "valid configs: {stdout}{stderr}");
    assert!(
        stdout.contains("k1 = 0.1"),
        "merged config shows the tuned k1:\n{stdout}"
    );
    // a shaper config checked as an agent's: its errors, then which kind it is
    let shaper = workspace_root().join("packaging/shaper.toml");
    let (ok, stdout, stderr) = tailor(&["config", "check", shaper.to_str().expect("utf8")]);
    assert!(!ok, "not an agent config");
    assert!(
        format!("{stdout}{stderr}").contains("check it with `tailor config check --kind shaper`"),
        "{stdout}{stderr}"
    );
}

#[test]
fn agent_once_prints_one_rounds_decisions() {
    let test = "once";
    let Some(c) = idle_container(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = agent_config(dir.path(), test, "interval_s = 1.0\nstate_file = \"\"\n");
    let (ok, stdout, stderr) = tailor(&[
        "agent",
        "--once",
        "--warmup",
        "3",
        "--recommend",
        "--config",
        cfg.to_str().expect("utf8"),
    ]);
    assert!(ok, "tailor agent --once failed: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    let containers = report["view"]["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0]["name"], "tailor-t-once");
    assert!(
        !containers[0]["forecast"].is_null(),
        "forecast after the warm-up"
    );
    let outcomes = report["outcomes"].as_array().expect("outcomes");
    assert!(
        outcomes
            .iter()
            .any(|o| o["result"] == "recommended" && o["action"]["kind"] == "resize"),
        "a cut is recommended: {stdout}"
    );
    assert!(outcomes.iter().all(|o| o["action"]["explanation"]
        .as_str()
        .is_some_and(|e| !e.is_empty())));
    assert_eq!(c.mem_limit(), 256 * MIB, "--recommend changes nothing");
}

/// The idle container of `test` cut by `tailor agent --once --warmup 3
/// --apply` in shape mode, its state in a temporary directory (kept while
/// the returned handle lives), and the agent's config file.
fn cut_once(test: &str) -> Option<(TestContainer, tempfile::TempDir, std::path::PathBuf)> {
    let c = idle_container(test)?;
    let dir = tempfile::tempdir().expect("tempdir");
    let top = format!(
        "actuation = \"shape\"\ninterval_s = 1.0\nstate_file = \"{}\"\n",
        dir.path().join("state.json").display()
    );
    let cfg = agent_config(dir.path(), test, &top);
    let (ok, _, stderr) = tailor(&[
        "agent",
        "--once",
        "--warmup",
        "3",
        "--apply",
        "--config",
        cfg.to_str().expect("utf8"),
    ]);
    assert!(ok, "tailor agent --once --apply failed: {stderr}");
    let cut = c.mem_limit();
    assert!(cut < 256 * MIB, "cut: {} MiB", cut / MIB);
    Some((c, dir, cfg))
}

/// `--once --apply` saves the models it cut with: the agent started next
/// forecasts from them at once instead of taking the container back to
/// its request (no models: no forecast, so the request).
#[test]
fn once_apply_saves_the_models_for_the_next_start() {
    let Some((_c, dir, cfg)) = cut_once("once_apply") else {
        return;
    };
    let cfg = cfg.to_str().expect("utf8");
    assert!(dir.path().join("models.json").exists(), "models saved");
    // the next start, with no warm-up: forecasts from the saved models
    let (ok, stdout, stderr) = tailor(&["agent", "--once", "--recommend", "--config", cfg]);
    assert!(ok, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    let container = &report["view"]["containers"][0];
    assert!(!container["forecast"].is_null(), "{container}");
    let back_to_request = report["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .any(|o| o["action"]["to"]["mem_bytes"].as_f64() == Some((256 * MIB) as f64));
    assert!(!back_to_request, "{stdout}");
}

/// A `docker update` made while no agent runs is found at the next start
/// and adopted as the container's request, that resource alone; the cut
/// the previous run left is not (it wrote its limits ahead of the update).
#[test]
fn a_limit_changed_while_the_agent_is_stopped_is_adopted() {
    let Some((c, _dir, cfg)) = cut_once("stopped_change") else {
        return;
    };
    let cfg = cfg.to_str().expect("utf8");
    let request = || {
        let (ok, stdout, stderr) = tailor(&["agent", "--once", "--recommend", "--config", cfg]);
        assert!(ok, "{stderr}");
        let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
        let r = &report["view"]["containers"][0]["request"];
        (
            r["mem_bytes"].as_f64().expect("mem"),
            r["cpu_cores"].as_f64().expect("cpu"),
        )
    };
    assert_eq!(
        request(),
        ((256 * MIB) as f64, 1.0),
        "the cut is the agent's own"
    );
    docker(&["update", "--memory", "384m", "--memory-swap", "384m", &c.id]).expect("docker update");
    assert_eq!(
        request(),
        ((384 * MIB) as f64, 1.0),
        "the operator's memory adopted, the CPU request kept"
    );
}

#[test]
fn history_refuses_a_missing_state_dir_and_counts_lines_it_skips() {
    let (ok, _, err) = tailor(&["history", "--state-dir", "/nonexistent/tailor-state"]);
    assert!(!ok);
    assert!(err.contains("not a directory"), "{err}");
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("decisions.jsonl"), "not json\n\n").expect("write");
    let state = dir.path().to_str().expect("utf8");
    let (ok, out, err) = tailor(&["history", "--state-dir", state]);
    assert!(ok, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("1 line(s)"), "{err}");
}

/// `--once --apply` with `actuation = "recommend"` would apply nothing:
/// refused with a message instead of a silent preview.
#[test]
fn once_apply_refuses_a_recommend_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("agent.toml");
    std::fs::write(&cfg, "actuation = \"recommend\"\nstate_file = \"\"\n").expect("write");
    let (ok, _, stderr) = tailor(&[
        "agent",
        "--once",
        "--apply",
        "--config",
        cfg.to_str().expect("utf8"),
    ]);
    assert!(!ok);
    assert!(stderr.contains("actuation = \"shape\""), "{stderr}");
}

/// SIGHUP (the shell that ran the agent went away) shuts the agent down as
/// SIGTERM does: the shrunk container gets its original limit back. While
/// it shapes, a second shaping agent on the host is refused.
#[test]
fn sighup_restores_the_original_limits() {
    let test = "sighup";
    let Some(c) = idle_container(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let top = format!(
        "actuation = \"shape\"\ninterval_s = 0.5\nstate_file = \"{}\"\n",
        dir.path().join("state.json").display()
    );
    let cfg = agent_config(dir.path(), test, &top);
    let log_path = dir.path().join("agent.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["agent", "--config"])
        .arg(&cfg)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).expect("log"))
        .spawn()
        .expect("start the agent");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while c.mem_limit() >= 256 * MIB {
        if std::time::Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            panic!(
                "not shrunk within 60 s:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    // A second shaping agent on the host (its own state file, the same host
    // lock) is refused at start, naming the first; a preview runs beside it.
    let second = tempfile::tempdir().expect("tempdir");
    let top = format!(
        "actuation = \"shape\"\ninterval_s = 0.5\nstate_file = {:?}\nhost_lock = {:?}\n",
        second.path().join("state.json").display().to_string(),
        dir.path().join("host.lock").display().to_string(),
    );
    let cfg2 = agent_config(second.path(), test, &top);
    let cfg2 = cfg2.to_str().expect("utf8");
    let (ok, _, stderr) = tailor(&["agent", "--once", "--apply", "--config", cfg2]);
    assert!(
        !ok,
        "a second shaping agent ran beside the first:\n{stderr}"
    );
    let first_state = dir.path().join("state.json").display().to_string();
    assert!(
        stderr.contains(&format!(
            "pid {}, state file {first_state}) shapes this host",
            child.id()
        )),
        "{stderr}"
    );
    let (ok, _, stderr) = tailor(&["agent", "--once", "--recommend", "--config", cfg2]);
    assert!(ok, "a preview beside the shaping agent: {stderr}");
    let hup = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(hup.success());
    let status = child.wait().expect("wait");
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(status.success(), "{status}:\n{log}");
    assert!(log.contains("SIGHUP: shutting down"), "{log}");
    assert_eq!(c.mem_limit(), 256 * MIB, "restored on SIGHUP:\n{log}");
}
