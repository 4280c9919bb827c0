//! Issue 13, "every accepted value runs", as a user meets it on the command
//! line: every value of the issue's table gets a clear error naming its key
//! (and nothing is run or allocated), and `tailor config check` reports
//! every error at once, checks the token file as the agent reads it, and
//! prints valid TOML with `--print`.

mod cli_common;
use cli_common::{tailor_quiet, write};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn token(dir: &Path, mode: u32) -> String {
    let p = write(dir, "token", "0123456789abcdef0123456789abcdef\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    p
}

/// Fails unless the command fails and its output names `key` and `needle`.
fn refused(args: &[&str], key: &str, needle: &str) {
    let (ok, stdout, stderr) = tailor_quiet(args);
    let all = format!("{stdout}{stderr}");
    assert!(!ok, "{args:?} was accepted:\n{all}");
    assert!(
        all.contains(key) && all.contains(needle),
        "{args:?}: no clear error naming {key} ({needle}):\n{all}"
    );
}

#[test]
fn issue_13_table_values_get_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // shaper interval_s = 1e-10
    let tok = token(d, 0o600);
    let shaper = write(
        d,
        "shaper.toml",
        &format!("token_file = \"{tok}\"\ninterval_s = 1e-10\n"),
    );
    refused(
        &["config", "check", "--kind", "shaper", &shaper],
        "interval_s",
        "must be in [0.1, 86400]",
    );
    refused(
        &["shaper", "--config", &shaper],
        "interval_s",
        "must be in [0.1, 86400]",
    );
    // agent interval_s = 1e308, horizon_samples = 1e11 (the kernel's
    // [shaper] table holds the horizon)
    let a1 = write(d, "a1.toml", "interval_s = 1e308\n");
    refused(
        &["config", "check", &a1],
        "interval_s",
        "must be in [0.1, 86400]",
    );
    refused(
        &["agent", "--once", "--config", &a1],
        "interval_s",
        "must be in [0.1, 86400]",
    );
    let a2 = write(d, "a2.toml", "[shaper]\nhorizon_samples = 100000000000\n");
    refused(
        &["config", "check", &a2],
        "horizon_samples",
        "must be in [1, 10000]",
    );
    refused(
        &["agent", "--once", "--config", &a2],
        "horizon_samples",
        "must be in [1, 10000]",
    );
    refused(
        &["agent", "--once", "--interval-s", "1e308"],
        "interval_s",
        "must be in",
    );
    // replay horizon_samples = i64::MAX, interval_s = 1e-9
    let s1 = write(
        d,
        "s1.toml",
        "[shaper]\nhorizon_samples = 9223372036854775807\n",
    );
    refused(
        &["config", "check", "--kind", "sim", &s1],
        "horizon_samples",
        "must be in [1, 10000]",
    );
    refused(
        &["replay", "--quiet", "--config", &s1],
        "horizon_samples",
        "must be in [1, 10000]",
    );
    refused(
        &["replay", "--quiet", "--interval-s", "1e-9"],
        "interval_s",
        "must be in [0.1, 86400]",
    );
    refused(
        &["tune", "--quiet", "--config", &s1],
        "horizon_samples",
        "must be in [1, 10000]",
    );
    // --workload synthetic:1:99999999999
    refused(
        &["replay", "--quiet", "--workload", "synthetic:1:99999999999"],
        "workload",
        "APPS must be in [1, 200000]",
    );
    // QA E3: the largest accepted synthetic workload runs in ~2 GB
    refused(
        &["replay", "--quiet", "--workload", "synthetic:1:200001"],
        "workload",
        "APPS must be in [1, 200000]",
    );
    // QA E1: a sweep's lists are bounded as frontier's are
    let k1_33 = (0..33)
        .map(|i| format!("{}", f64::from(i) * 0.01))
        .collect::<Vec<_>>()
        .join(",");
    refused(
        &["tune", "--quiet", "--k1", &k1_33],
        "k1",
        "at most 32 values, got 33",
    );
    // ... and so are its simulations (32 x 32 cells x 20 seeds > 20,000),
    // refused before any workload is built
    let k_32 = (0..32)
        .map(|i| format!("{}", f64::from(i) * 0.01))
        .collect::<Vec<_>>()
        .join(",");
    let out = d.join("tune-out").display().to_string();
    refused(
        &[
            "tune", "--quiet", "--k1", &k_32, "--k2", &k_32, "--seeds", "20", "--out", &out,
        ],
        "seeds",
        "20480 simulations (cells x seeds) exceed the limit of 20000",
    );
    assert!(!d.join("tune-out").exists(), "nothing written");
    refused(
        &["replay", "--quiet", "--stretch", "1e300"],
        "stretch",
        "must be in (0, 1000]",
    );
    refused(
        &["replay", "--quiet", "--k2", "1e300"],
        "shaper.k2",
        "must be in [0, 100]",
    );
    refused(
        &["tune", "--quiet", "--k1", "0,1e300"],
        "k1",
        "must be in [0, 10]",
    );
    let series = write(d, "series.csv", "cpu\n1\n2\n3\n");
    refused(
        &["forecast", "--input", &series, "--horizon", "100000000000"],
        "--horizon",
        "must be in [1, 10000]",
    );
    // a one-point series has nothing to score: a clear error, not NaN scores
    let one = write(d, "one.csv", "cpu\n1\n");
    refused(
        &["forecast", "--input", &one, "--model", "last"],
        "one.csv",
        "nothing to score",
    );
    let model = write(
        d,
        "model.toml",
        "[gp]\ncold_max_iters = 100000000000\nbogus = 1\n",
    );
    refused(
        &["forecast", "--input", &series, "--config", &model],
        "gp.cold_max_iters",
        "gp.bogus",
    );
}

#[test]
fn config_check_reports_value_errors_next_to_unknown_keys_and_cluster_errors_without_token_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        "agent.toml",
        "mode = \"cluster\"\n[shaper]\nk1 = -1.0\nnope = 1\n[cluster]\nshaper_url = \"ftp://x\"\ntimeout_s = 0.0\n[cluster.fail_safe]\nhold_s = -1.0\n",
    );
    let (ok, stdout, _) = tailor_quiet(&["config", "check", &f]);
    assert!(!ok);
    for key in [
        "shaper.k1",
        "shaper.nope",
        "cluster.token_file",
        "cluster.shaper_url",
        "cluster.timeout_s",
        "cluster.fail_safe.hold_s",
    ] {
        assert!(
            stdout.contains(&format!("{f}: {key}: ")),
            "missing {key}:\n{stdout}"
        );
    }
}

#[test]
fn config_check_reads_the_token_file_as_the_agent_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let cfg = |tok: &str| {
        write(
            d,
            "agent.toml",
            &format!("mode = \"cluster\"\n[cluster]\nshaper_url = \"http://127.0.0.1:9848\"\ntoken_file = \"{tok}\"\n"),
        )
    };
    let missing = d.join("nope").to_str().expect("utf8").to_string();
    let (ok, stdout, _) = tailor_quiet(&["config", "check", &cfg(&missing)]);
    assert!(
        !ok && stdout.contains("cluster.token_file: cannot read"),
        "{stdout}"
    );
    let tok = token(d, 0o644);
    let (ok, stdout, _) = tailor_quiet(&["config", "check", &cfg(&tok)]);
    assert!(
        !ok && stdout.contains("cluster.token_file: token file") && stdout.contains("chmod 600"),
        "{stdout}"
    );
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (ok, stdout, stderr) = tailor_quiet(&["config", "check", &cfg(&tok)]);
    assert!(ok, "{stdout}{stderr}");
    std::fs::write(&tok, "").expect("empty");
    let (ok, stdout, _) = tailor_quiet(&["config", "check", &cfg(&tok)]);
    assert!(!ok && stdout.contains("cluster.token_file"), "{stdout}");
}

#[test]
fn config_check_print_prints_only_valid_toml() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let a = write(d, "a.toml", "interval_s = 5.0\n[shaper]\nk1 = 0.2\n");
    let b = write(d, "b.toml", "[shaper]\nk2 = 2.0\n");
    let (ok, stdout, stderr) = tailor_quiet(&["config", "check", "--print", &a, &b]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!("{a}: ok")),
        "status lines on stderr: {stderr}"
    );
    let table: toml::Table = stdout.parse().expect("stdout is TOML only");
    assert_eq!(table["interval_s"].as_float(), Some(5.0));
    // and it is a valid agent config that checks back to the same values
    let printed = write(d, "printed.toml", &stdout);
    let (ok, again, stderr) = tailor_quiet(&["config", "check", "--print", &printed]);
    assert!(ok, "{stderr}");
    assert_eq!(again, stdout);
    for kind in ["shaper", "sim"] {
        let text = if kind == "shaper" {
            let creds = write(d, "credentials.toml", "");
            std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
            format!(
                "token_file = \"{}\"\ncredentials_file = \"{creds}\"\n",
                token(d, 0o600)
            )
        } else {
            "interval_s = 60.0\n".to_string()
        };
        let f = write(d, &format!("{kind}.toml"), &text);
        let (ok, stdout, stderr) =
            tailor_quiet(&["config", "check", "--kind", kind, "--print", &f]);
        assert!(ok, "{kind}: {stderr}");
        stdout.parse::<toml::Table>().expect("TOML only");
    }
}

// Whatever interval an agent may record at, the simulator replays (checked
// when the tests compile).
const _: () = assert!(
    sim::config::MIN_INTERVAL_S <= agent::config::MIN_INTERVAL_S
        && sim::config::MAX_INTERVAL_S >= agent::config::MAX_INTERVAL_S
);
