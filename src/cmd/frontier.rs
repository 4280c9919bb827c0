//! `tailor frontier`: the savings frontier of every forecaster family on a
//! workload (reserved memory reclaimed against the baseline vs failures),
//! with the best reclaim of tailor and of the VPA at failure budgets of
//! 0.1%, 0.5% and 1%. See `sim::frontier`.

use std::path::PathBuf;

use sim::frontier::{
    budget_rows, point_specs, run_frontier, write_outputs, BudgetMeasure, Family, FrontierGrid,
    DEFAULT_K1, DEFAULT_K2, DEFAULT_MEMORY_RISK, DEFAULT_VPA_MARGIN, DEFAULT_VPA_PERCENTILE,
};

use crate::cmd::sim_args::SimArgs;

/// `--forecasters` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FamilyArg {
    Gp,
    Arima,
    Peak,
    Last,
    Vpa,
}

impl From<FamilyArg> for Family {
    fn from(f: FamilyArg) -> Self {
        match f {
            FamilyArg::Gp => Family::Gp,
            FamilyArg::Arima => Family::Arima,
            FamilyArg::Peak => Family::Peak,
            FamilyArg::Last => Family::Last,
            FamilyArg::Vpa => Family::Vpa,
        }
    }
}

/// `--budget-measure` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeasureArg {
    /// Share of applications that crashed at least once (batch traces such as Google 2011).
    FailedApps,
    /// Share of component-days with at least one OOM kill (services such as Google 2019).
    OomComponentDays,
}

impl From<MeasureArg> for BudgetMeasure {
    fn from(m: MeasureArg) -> Self {
        match m {
            MeasureArg::FailedApps => BudgetMeasure::FailedApps,
            MeasureArg::OomComponentDays => BudgetMeasure::OomComponentDays,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub sim: SimArgs,
    /// Forecaster families to sweep (baseline and oracle always run).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "gp,arima,peak,last,vpa"
    )]
    pub forecasters: Vec<FamilyArg>,
    /// K1 values for gp, arima, peak, last (default 0,0.05,0.1,0.15,0.2,0.3,0.4).
    #[arg(long, value_delimiter = ',')]
    pub k1: Option<Vec<f64>>,
    /// K2 values (default 0,1,2,3).
    #[arg(long, value_delimiter = ',')]
    pub k2: Option<Vec<f64>>,
    /// `[shaper] memory_risk` values for risk-targeted sizing (default
    /// 0.0001,0.001,0.01); `--memory-risk none` sweeps none.
    #[arg(long, value_delimiter = ',')]
    pub memory_risk: Option<Vec<String>>,
    /// `[shaper] sibling_hold_s` values for the tailor families (default:
    /// the config's value only), e.g. `0,3600,7200`.
    #[arg(long, value_delimiter = ',')]
    pub sibling_hold_s: Option<Vec<f64>>,
    /// `[shaper] mem_margin` values for the tailor families' K1/K2 points
    /// (default: the config's value only), e.g. `0,0.1,0.2`.
    #[arg(long, value_delimiter = ',')]
    pub mem_margin: Option<Vec<f64>>,
    /// `[shaper] small_app_k1` values for the tailor families' K1/K2
    /// points (default: the config's value only), e.g. `0.3,0.5`; needs
    /// `--small-app-components N` (or the config's `small_app_components`).
    #[arg(long, value_delimiter = ',')]
    pub small_app_k1: Option<Vec<f64>>,
    /// `[shaper] app_k1_slope` values for the tailor families' K1/K2
    /// points (default: the config's value only), e.g. `0.15,0.25,0.35`;
    /// needs `--app-mem-ref-gib GIB` or `--app-mem-ref-rel X` (or the
    /// config's `app_mem_ref_gib` / `app_mem_ref_rel`).
    #[arg(long, value_delimiter = ',')]
    pub app_k1_slope: Option<Vec<f64>>,
    /// `[shaper] core_k1_factor` values for the tailor families' K1/K2
    /// points (default: the config's value only), e.g. `1,1.2,1.5`: a
    /// core component whose kill fails its application gets at least
    /// this times K1.
    #[arg(long, value_delimiter = ',')]
    pub core_k1_factor: Option<Vec<f64>>,
    /// `[shaper] elastic_k1_factor` values for the tailor families' K1/K2
    /// points (default: the config's value only), e.g. `0.2,0.4,1`: an
    /// elastic component gets this times K1.
    #[arg(long, value_delimiter = ',')]
    pub elastic_k1_factor: Option<Vec<f64>>,
    /// VPA target memory percentiles (default 0.5,0.8,0.9,0.95).
    #[arg(long, value_delimiter = ',')]
    pub vpa_percentile: Option<Vec<f64>>,
    /// VPA safety margins (default 0,0.15,0.3).
    #[arg(long, value_delimiter = ',')]
    pub vpa_margin: Option<Vec<f64>>,
    /// The failure measure of the budgets and the plot's x axis (default:
    /// oom-component-days when every component of the workload restarts
    /// alone after an OOM kill, as Google 2019's service tasks do or under
    /// `oom_restart = "component"`; failed-apps otherwise).
    #[arg(long, value_enum)]
    pub budget_measure: Option<MeasureArg>,
    /// Write frontier.svg, frontier.png, points.csv and frontier.md here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the frontier as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

fn sorted(v: Vec<f64>) -> Vec<f64> {
    let mut v = v;
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn risk_list(v: &Option<Vec<String>>) -> anyhow::Result<Vec<f64>> {
    match v {
        None => Ok(DEFAULT_MEMORY_RISK.to_vec()),
        Some(items) if items.len() == 1 && items[0].trim() == "none" => Ok(Vec::new()),
        Some(items) => items
            .iter()
            .map(|s| match s.trim() {
                "none" => anyhow::bail!(
                    "--memory-risk: `none` (no risk-targeted points) goes alone, not with probabilities"
                ),
                t => t.parse::<f64>().map_err(|_| {
                    anyhow::anyhow!("--memory-risk: {s:?} is not a number (or use `none`)")
                }),
            })
            .collect::<anyhow::Result<Vec<f64>>>()
            .map(sorted),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    crate::cmd::sim_args::init_logging();
    let cfg = args.sim.base_config()?;
    cfg.validate()?;
    let mut families: Vec<Family> = args.forecasters.iter().map(|&f| f.into()).collect();
    families.sort();
    families.dedup();
    let grid = FrontierGrid {
        k1: sorted(args.k1.clone().unwrap_or_else(|| DEFAULT_K1.to_vec())),
        k2: sorted(args.k2.clone().unwrap_or_else(|| DEFAULT_K2.to_vec())),
        memory_risk: risk_list(&args.memory_risk)?,
        sibling_hold_s: sorted(args.sibling_hold_s.clone().unwrap_or_default()),
        mem_margin: sorted(args.mem_margin.clone().unwrap_or_default()),
        small_app_k1: sorted(args.small_app_k1.clone().unwrap_or_default()),
        app_k1_slope: sorted(args.app_k1_slope.clone().unwrap_or_default()),
        core_k1_factor: sorted(args.core_k1_factor.clone().unwrap_or_default()),
        elastic_k1_factor: sorted(args.elastic_k1_factor.clone().unwrap_or_default()),
        vpa_percentile: sorted(
            args.vpa_percentile
                .clone()
                .unwrap_or_else(|| DEFAULT_VPA_PERCENTILE.to_vec()),
        ),
        vpa_margin: sorted(
            args.vpa_margin
                .clone()
                .unwrap_or_else(|| DEFAULT_VPA_MARGIN.to_vec()),
        ),
        families,
    };
    let specs = point_specs(&cfg, &grid)?;
    let seeds = args.sim.seed_list(&cfg)?;
    sim::frontier::check_runs(specs.len(), seeds.len())?;
    // The workload is read before `--out` is made: bad input leaves no
    // empty directory behind.
    let workloads = args.sim.seeded_workloads(&seeds)?;
    if let Some(dir) = &args.out {
        crate::cmd::sim_args::prepare_out_dir(dir)?;
    }
    let pb = args.sim.progress_bar("frontier");
    let cb = |done: usize, total: usize| {
        if let Some(pb) = &pb {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
        }
    };
    let measure: BudgetMeasure = match args.budget_measure {
        Some(m) => m.into(),
        None => BudgetMeasure::for_workload(workloads.first(), cfg.oom_restart),
    };
    let f = run_frontier(workloads, &specs, Some(&cb)).map_err(|e| args.sim.explain(e))?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    if let Some(dir) = &args.out {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        for p in write_outputs(dir, &f, measure, &command)? {
            eprintln!("warning: plot not written: {p}");
        }
        eprintln!("frontier written to {}", dir.join("frontier.md").display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&f)?);
        return Ok(());
    }
    let pct = |x: f64| {
        if x.is_finite() {
            format!("{:.2}%", 100.0 * x)
        } else {
            "-".to_string()
        }
    };
    println!(
        "workload {}: {} points x {} seed(s), policy {}",
        f.workload,
        f.points.len(),
        f.seeds.len(),
        f.policy
    );
    println!(
        "baseline {:.1} GiB-h reserved ({} failed apps); oracle {:.1} GiB-h (reclaims {:.1})",
        f.baseline.mem_alloc_gib_h,
        pct(f.baseline.failed_app_fraction),
        f.oracle_mem_alloc_gib_h,
        f.baseline.mem_alloc_gib_h - f.oracle_mem_alloc_gib_h
    );
    let has_vpa = f.families().contains(&Family::Vpa);
    let show = |p: Option<&sim::frontier::Point>| match p {
        None => "none within budget".to_string(),
        Some(p) => format!(
            "{} {:.1} GiB-h ({}), {}",
            p.forecaster,
            f.reclaimed_gib_h(p),
            pct(p.oracle_capture),
            p.params_label()
        ),
    };
    println!("best reclaimed within each failure budget (share of the oracle's saving):");
    for (b, t, v) in budget_rows(&f, measure) {
        let vpa = match (has_vpa, v) {
            (false, _) => String::new(),
            (true, Some(_)) => format!("; {}", show(v)),
            (true, None) => "; vpa: none within budget".to_string(),
        };
        println!("  <= {:>6}  tailor: {}{vpa}", pct(b), show(t));
    }
    println!("(failure measure: {})", measure.label());
    Ok(())
}
