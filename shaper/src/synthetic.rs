//! Synthetic cluster views for benchmarks and load tests (deterministic for
//! a seed): 100 components per host, 10 per application (2 core + 8
//! elastic, spread over several hosts), requests summing to about each
//! host's capacity (32 cores, 128 GiB), forecasts at 30-90% of the request
//! with 2% spikes above it, and every tenth host 15% smaller so that some
//! evictions happen.

use crate::model::*;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// The `now_s` the synthetic views are built for.
pub const NOW_S: f64 = 100_000.0;

/// splitmix64: tiny, deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// A cluster of `n_components` components (`n/100` hosts, `n/10` apps).
pub fn synthetic_view(n_components: usize, seed: u64) -> ClusterView {
    let mut rng = Rng(seed);
    let n_hosts = (n_components / 100).max(1);
    let n_apps = (n_components / 10).max(1);
    let hosts = (0..n_hosts)
        .map(|i| {
            let shrink = if i % 10 == 3 { 0.85 } else { 1.0 };
            Host {
                id: HostId(i as u64),
                capacity: Resources::new(32.0 * shrink, 128.0 * GIB * shrink),
            }
        })
        .collect();
    let mut g = 0usize;
    let apps = (0..n_apps)
        .map(|a| {
            let components = (0..10)
                .map(|j| {
                    let host = HostId(((g * 7) % n_hosts) as u64);
                    g += 1;
                    let request = Resources::new(rng.range(0.2, 0.44), rng.range(0.8, 1.76) * GIB);
                    let level = if rng.unit() < 0.02 {
                        rng.range(1.0, 1.5)
                    } else {
                        rng.range(0.3, 0.9)
                    };
                    let usage = Resources::new(
                        request.cpu_cores * level * 0.95,
                        request.mem_bytes * level * 0.95,
                    );
                    let sd = rng.range(0.02, 0.1);
                    Component {
                        id: ComponentId((a * 10 + j) as u64),
                        class: if j < 2 { Class::Core } else { Class::Elastic },
                        host,
                        request,
                        started_s: rng.range(0.0, NOW_S),
                        allocation: request,
                        usage,
                        forecast: Some(Forecasts {
                            cpu: Predictive::gaussian(
                                request.cpu_cores * level,
                                request.cpu_cores * sd,
                            ),
                            mem: Predictive::gaussian(
                                request.mem_bytes * level,
                                request.mem_bytes * sd,
                            ),
                            mem_hold_bytes: 0.0,
                            mem_small_hold_bytes: 0.0,
                        }),
                        protected: false,
                        work_done_s: rng.range(0.0, NOW_S),
                        restarts_alone: false,
                        mem_floor_bytes: 0.0,
                        oom_floor_bytes: 0.0,
                    }
                })
                .collect();
            Application {
                tenant: 0,
                id: AppId(a as u64),
                submitted_s: rng.range(0.0, NOW_S),
                priority: (rng.next() % 5) as i32,
                failures: (rng.next() % 4) as u32,
                expected_remaining_s: Some(rng.range(0.0, 1e5)),
                components,
            }
        })
        .collect();
    ClusterView { hosts, apps }
}
