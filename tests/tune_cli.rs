//! `tailor tune` end to end on the bundled workload (oracle, small grid).

use std::process::Command;

#[test]
fn tune_writes_grid_heatmaps_and_an_accepted_snippet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args([
            "tune",
            "--forecaster",
            "oracle",
            "--k1",
            "0,0.05",
            "--k2",
            "0,3",
            "--quiet",
            "--max-failed-fraction",
            "0.05",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("run tailor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.path().join("grid.csv")).expect("grid.csv");
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(csv.starts_with("k1,k2,turnaround_ratio"));
    for stem in [
        "heatmap_turnaround_ratio",
        "heatmap_mem_slack",
        "heatmap_failed_fraction",
    ] {
        assert!(
            dir.path().join(format!("{stem}.svg")).exists(),
            "{stem}.svg"
        );
        assert!(
            dir.path().join(format!("{stem}.png")).exists(),
            "{stem}.png"
        );
    }
    // The snippet is a [shaper] table the shaper (and so the agent) accepts.
    let text = std::fs::read_to_string(dir.path().join("best.toml")).expect("best.toml");
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Snippet {
        shaper: shaper::ShaperConfig,
    }
    let s: Snippet = toml::from_str(&text).expect("valid [shaper] table");
    s.shaper.validate().expect("valid shaper config");
    assert!([0.0, 0.05].contains(&s.shaper.k1));
    assert!([0.0, 3.0].contains(&s.shaper.k2));
}
