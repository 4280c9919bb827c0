//! Homogeneous hosts for traces without a machine table (Alibaba GPU
//! lifecycles, Bitbrains VMs): as many hosts of one capacity as hold the
//! trace's peak concurrent request with some headroom.

use crate::workload::{HostSpec, Resources};
use crate::DatasetError;
use std::path::Path;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Most hosts a workload may have (configured, computed or from a node list).
pub const MAX_HOSTS: usize = 100_000;
/// Default homogeneous host capacity, in multiples of the largest request
/// (CPU and memory separately).
pub const HOST_REQUEST_MULTIPLE: f64 = 8.0;

/// How to size homogeneous hosts; the fields are validated by the caller's
/// config (`hosts` in [1, [`MAX_HOSTS`]], capacities > 0, `headroom` >= 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSizing {
    /// Capacity of every host. `None`: [`HOST_REQUEST_MULTIPLE`] x the
    /// largest request, CPU and memory separately (at least 1 core / 1 GiB).
    pub capacity: Option<Resources>,
    /// Number of hosts. `None`: the smallest count that holds the peak
    /// concurrent summed request x `headroom` in the binding resource,
    /// `max over r of ceil(peak_r * headroom / capacity_r)`, at least 1.
    pub hosts: Option<usize>,
    pub headroom: f64,
}

/// Largest request or capacity accepted in a config: 1e6 cores, 2^60 bytes.
pub const MAX_CONFIG_CORES: f64 = crate::bounds::MAX_CORES;
pub const MAX_CONFIG_BYTES: f64 = crate::bounds::MAX_BYTES;

impl HostSizing {
    /// Checks `min_request` (cores [0, 1e6], bytes [0, 2^60]), `hosts` [1,
    /// [`MAX_HOSTS`]], `host_capacity` (cores (0, 1e6], bytes (0, 2^60])
    /// and `headroom` [1, 100] into `e`, under those key names.
    pub fn check(&self, min_request: Resources, e: &mut tailor_core::ConfigErrors) {
        e.range(
            "min_request.cpu_cores",
            min_request.cpu_cores,
            0.0,
            MAX_CONFIG_CORES,
        );
        e.range(
            "min_request.mem_bytes",
            min_request.mem_bytes,
            0.0,
            MAX_CONFIG_BYTES,
        );
        e.range_opt("hosts", self.hosts, 1, MAX_HOSTS);
        if let Some(c) = self.capacity {
            crate::google2011::check_positive_resources(e, "host_capacity", c);
        }
        e.range("headroom", self.headroom, 1.0, 100.0);
    }
}

/// The peak concurrent summed request (CPU and memory peaks apart) of
/// `(start_s, end_s, request)` lifetimes, by a sweep over starts (+) and
/// ends (-), ends first at equal times; and the largest single request,
/// per resource.
pub fn peak_request(lifetimes: &[(f64, f64, Resources)]) -> (Resources, Resources) {
    let mut events: Vec<(f64, bool, Resources)> = Vec::with_capacity(2 * lifetimes.len());
    let mut largest = Resources::ZERO;
    for &(start, end, r) in lifetimes {
        events.push((start, true, r));
        events.push((end, false, r));
        largest = Resources::from_fn(|k| largest.get(k).max(r.get(k)));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (Resources::ZERO, Resources::ZERO);
    for (_, start, r) in &events {
        let sign = if *start { 1.0 } else { -1.0 };
        now = Resources::from_fn(|k| now.get(k) + sign * r.get(k));
        peak = Resources::from_fn(|k| peak.get(k).max(now.get(k)));
    }
    (peak, largest)
}

/// Homogeneous hosts sized by `sizing` for a trace whose peak concurrent
/// request is `peak` and largest request `largest` ([`peak_request`]).
/// More than [`MAX_HOSTS`] is an error naming `path`.
pub fn homogeneous_hosts(
    path: &Path,
    sizing: HostSizing,
    peak: Resources,
    largest: Resources,
) -> Result<Vec<HostSpec>, DatasetError> {
    let cap = sizing.capacity.unwrap_or(Resources::new(
        (largest.cpu_cores * HOST_REQUEST_MULTIPLE).max(1.0),
        (largest.mem_bytes * HOST_REQUEST_MULTIPLE).max(GIB),
    ));
    let n = match sizing.hosts {
        Some(n) => n,
        None => {
            // capacities are > 0 (validated or floored above)
            let need = |peak: f64, cap: f64| (peak * sizing.headroom / cap).ceil();
            let n = need(peak.cpu_cores, cap.cpu_cores)
                .max(need(peak.mem_bytes, cap.mem_bytes))
                .max(1.0);
            if !n.is_finite() || n > MAX_HOSTS as f64 {
                return Err(DatasetError::format(
                    path,
                    format!(
                        "the peak request ({:.1} cores, {:.1} GiB) x headroom {} needs {n} hosts of {} cores / {:.1} GiB, more than {MAX_HOSTS}: set a larger host_capacity or hosts",
                        peak.cpu_cores,
                        peak.mem_bytes / GIB,
                        sizing.headroom,
                        cap.cpu_cores,
                        cap.mem_bytes / GIB
                    ),
                ));
            }
            n as usize
        }
    };
    Ok(vec![HostSpec { capacity: cap }; n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_counts_ends_before_starts_at_equal_times() {
        let r = Resources::new(1.0, GIB);
        // back to back: never two at once
        let (peak, largest) = peak_request(&[(0.0, 10.0, r), (10.0, 20.0, r)]);
        assert_eq!(peak, r);
        assert_eq!(largest, r);
        let (peak, _) = peak_request(&[(0.0, 10.0, r), (5.0, 20.0, r.add(&r))]);
        assert_eq!(peak, Resources::new(3.0, 3.0 * GIB));
    }

    #[test]
    fn hosts_hold_the_peak_with_headroom_or_say_why_not() {
        let sizing = HostSizing {
            capacity: None,
            hosts: None,
            headroom: 1.25,
        };
        let largest = Resources::new(2.0, 4.0 * GIB);
        // capacity 16 cores / 32 GiB; 100 GiB x 1.25 needs 4 hosts
        let h = homogeneous_hosts(
            Path::new("x"),
            sizing,
            Resources::new(10.0, 100.0 * GIB),
            largest,
        )
        .expect("hosts");
        assert_eq!(h.len(), 4);
        assert_eq!(h[0].capacity, Resources::new(16.0, 32.0 * GIB));
        let e = homogeneous_hosts(
            Path::new("trace.csv"),
            sizing,
            Resources::new(1e9, GIB),
            largest,
        )
        .expect_err("too many hosts");
        assert!(e.to_string().contains("trace.csv"), "{e}");
    }
}
