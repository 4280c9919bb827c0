//! The faithful VPA's workload state: one aggregate per application and
//! resource, shared by the models of all its components, as the Kubernetes
//! VPA keeps one state per workload fed by every container of it. Used by
//! the agent's models ([`crate::node_models::NodeModels`]) and by the simulator alike.

use crate::model::{Resource, Resources};
use crate::models::ComponentModels;
use forecaster::config::ModelConfig;
use forecaster::vpa::SharedVpa;
use forecaster::{ForecastError, Forecaster};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

/// Each application's VPA aggregates (CPU, memory), by application key.
#[derive(Debug)]
pub struct VpaWorkloads<K> {
    apps: HashMap<K, [SharedVpa; 2]>,
    max_apps: usize,
}

impl<K: Hash + Eq + Clone> VpaWorkloads<K> {
    /// At most `max_apps` applications are kept: past that, those without
    /// a live component are forgotten first, then all.
    pub fn new(max_apps: usize) -> Self {
        Self {
            apps: HashMap::new(),
            max_apps: max_apps.max(1),
        }
    }

    /// Applications with aggregates.
    pub fn len(&self) -> usize {
        self.apps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
    }

    /// A component's models attached to application `app`'s aggregates
    /// (created at its first component, one sample every `interval_s`):
    /// model number `build` (unique per aggregate), first sample at
    /// `start_s` on the aggregates' clock, `request` the units of one
    /// observed unit. `model` must be a `vpa` config.
    pub fn models(
        &mut self,
        model: &ModelConfig,
        app: &K,
        build: u64,
        start_s: f64,
        interval_s: f64,
        request: Resources,
    ) -> Result<ComponentModels, ForecastError> {
        let shared = self.shared(model, app, interval_s)?;
        ComponentModels::build(request, |r, unit| {
            model.build_vpa_attached(shared[index(r)].clone(), build, start_s, unit)
        })
    }

    /// One resource's model of [`VpaWorkloads::models`], `unit` bytes or
    /// cores per observed unit.
    #[allow(clippy::too_many_arguments)]
    pub fn model(
        &mut self,
        model: &ModelConfig,
        app: &K,
        resource: Resource,
        build: u64,
        start_s: f64,
        interval_s: f64,
        unit: f64,
    ) -> Result<Box<dyn Forecaster>, ForecastError> {
        let shared = self.shared(model, app, interval_s)?;
        model.build_vpa_attached(shared[index(resource)].clone(), build, start_s, unit)
    }

    /// Application `app`'s aggregates, created when missing.
    fn shared(
        &mut self,
        model: &ModelConfig,
        app: &K,
        interval_s: f64,
    ) -> Result<[SharedVpa; 2], ForecastError> {
        if let Some(s) = self.apps.get(app) {
            return Ok(s.clone());
        }
        if self.apps.len() >= self.max_apps {
            self.apps
                .retain(|_, v| v.iter().any(|s| Arc::strong_count(s) > 1));
            if self.apps.len() >= self.max_apps {
                self.apps.clear();
            }
        }
        let s = [
            model.vpa_aggregate(Resource::Cpu, interval_s)?,
            model.vpa_aggregate(Resource::Mem, interval_s)?,
        ];
        self.apps.insert(app.clone(), s.clone());
        Ok(s)
    }
}

fn index(r: Resource) -> usize {
    match r {
        Resource::Cpu => 0,
        Resource::Mem => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ShaperConfig;
    use forecaster::config::ModelKind;

    /// A young component of an application sees its siblings' usage: the
    /// VPA recommends for the workload, not for one container.
    #[test]
    fn siblings_share_one_recommendation() {
        let model = ModelConfig {
            kind: ModelKind::Vpa,
            calibrated: false,
            ..ModelConfig::default()
        };
        let cfg = ShaperConfig {
            min_history_samples: 1,
            prior: false,
            mem_hold_s: 0.0,
            ..ShaperConfig::default()
        };
        let req = Resources::new(1.0, 4e9);
        let mut w: VpaWorkloads<&str> = VpaWorkloads::new(10);
        let mut big = w.models(&model, &"web", 0, 0.0, 300.0, req).expect("vpa");
        let mut alone = VpaWorkloads::new(10)
            .models(&model, &"web", 0, 0.0, 300.0, req)
            .expect("vpa");
        for _ in 0..50 {
            big.observe(Some(0.5), 3e9, req);
        }
        let mut young = w
            .models(&model, &"web", 1, 50.0 * 300.0, 300.0, req)
            .expect("vpa");
        young.observe(Some(0.1), 1e9, req);
        alone.observe(Some(0.1), 1e9, req);
        let mem = |m: &ComponentModels| {
            m.forecast_with(1, req, &cfg, None)
                .0
                .expect("forecast")
                .mem
                .mean
        };
        assert!(
            mem(&young) > 2e9,
            "the workload's recommendation: {}",
            mem(&young)
        );
        assert!(
            mem(&alone) < mem(&young),
            "{} vs {}",
            mem(&alone),
            mem(&young)
        );
        assert_eq!(w.len(), 1);
        // over the cap, applications without a live model go first
        drop((big, young));
        let mut small: VpaWorkloads<u32> = VpaWorkloads::new(1);
        let kept = small.models(&model, &1, 0, 0.0, 300.0, req).expect("vpa");
        let _other = small.models(&model, &2, 1, 0.0, 300.0, req).expect("vpa");
        assert_eq!(
            small.len(),
            1,
            "app 1 still has a live model: all cleared, 2 kept"
        );
        drop(kept);
    }
}
