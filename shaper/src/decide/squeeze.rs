//! Hosts short of room: what `cpu_shortfall = "share"` and
//! `mem_shortfall = "buffer"` cut, and by how much (the squeeze of a
//! component's CPU, the tiers of a host's memory buffers).

use super::pessimistic::AppInfo;
use super::*;

/// A component cut to what was left on its host: its application (view
/// index), slot, and per squeezed resource what it needed and found.
#[derive(Clone, Copy, Debug)]
pub(super) struct Squeezed {
    pub(super) app: u32,
    pub(super) slot: u32,
    /// `cpu_shortfall = share`: (needed, free) cores.
    pub(super) cpu: Option<(f64, f64)>,
    /// `mem_shortfall = buffer`: (needed, free) bytes.
    pub(super) mem: Option<(f64, f64)>,
}

/// `cpu_shortfall = share`: what squeezing needs, and the squeezed
/// components found so far.
pub(super) struct Squeeze<'a> {
    pub(super) cfg: &'a ShaperConfig,
    /// The smallest CPU a squeezed component gets.
    pub(super) cpu_floor: f64,
    pub(super) app_info: &'a [AppInfo],
    pub(super) out: &'a mut Vec<Squeezed>,
}

impl Squeeze<'_> {
    /// When slot `g`'s CPU does not fit in what is left on its host
    /// (`free`), cuts it to that (rounded down to the CPU step, at least
    /// the floor), through the same hysteresis as any target, and marks the
    /// slot [`State::Squeezed`].
    pub(super) fn apply(
        &mut self,
        view: &ClusterView,
        ai: u32,
        g: usize,
        free: &Resources,
        slots: &mut [Slot],
    ) {
        let s = &mut slots[g];
        let host_cpu = view.hosts[s.host as usize].capacity.cpu_cores;
        if s.eff.cpu_cores - free.cpu_cores <= host_cpu * FIT_TOLERANCE {
            return;
        }
        // What is left, rounded down, but never below the floor (so a host
        // may be overcommitted by floors, never by more).
        let room = align_down(Resource::Cpu, free.cpu_cores);
        let room = if room.is_finite() {
            room.max(self.cpu_floor).min(s.eff.cpu_cores)
        } else {
            self.cpu_floor.min(s.eff.cpu_cores)
        };
        let app = &view.apps[ai as usize];
        let c = &app.components[g - self.app_info[ai as usize].start as usize];
        let planned = Resources::new(room, s.eff.mem_bytes);
        let (eff, changed) = settle_within(planned, c, self.cfg);
        self.out.push(Squeezed {
            app: ai,
            slot: g as u32,
            cpu: Some((s.eff.cpu_cores, free.cpu_cores)),
            mem: None,
        });
        s.eff = eff;
        s.changed = changed;
        s.state = State::Squeezed;
    }
}

/// `planned` through the hysteresis, which may keep the current
/// allocation only when it fits in `planned` too: (allocation, changed).
fn settle_within(planned: Resources, c: &Component, cfg: &ShaperConfig) -> (Resources, bool) {
    let (eff, changed, _) = settle(planned, c, cfg);
    if eff.fits_in(&planned) {
        (eff, changed)
    } else {
        (planned, planned != c.allocation)
    }
}

/// `mem_shortfall = buffer`, second pass: every kept component gets its
/// memory buffer (target above its need) where its host has room for all
/// of them. On a host that has not, the buffers are cut in four tiers:
/// * first the elastic components' **holds**, the part of a target raised
///   to a sibling's kill mark (`Forecasts::mem_hold_bytes`), insurance
///   against a peak the component has not shown;
/// * then, when cutting every such hold is not enough, the rest of the
///   **elastic** components' buffers alone, down to
///   [`ELASTIC_CUT_FIRST_TO`] of them: an elastic component's kill costs
///   its own work, a core component's fails its whole application;
/// * then, when that is not enough either, the rest of every buffer, the
///   elastic ones' from what the second tier left them;
/// * last, the **core** components' holds. A core kill re-runs its whole
///   application, and the re-run replays the same usage: its components
///   reach the mark that killed the first run at the same age, which is
///   what the hold covers (a cut hold let the re-run of one 1,499-task job
///   die again at the same sample; docs/results.md, "Core holds are cut
///   last").
///
/// Within a tier every buffer there is cut by the same fraction (what is
/// left over what they want), so that no component loses its whole buffer
/// for another to keep all of its own: the chance of a kill falls ever
/// more slowly as a buffer grows, so an even cut kills fewest. The one
/// exception is a target at its ceiling whose cut would be a sliver
/// (under [`CEILING_CUT_MIN`] of its request): it is not cut, and the
/// host's other buffers share what it would have given (a second pass
/// over that host's shares, skipped where the rest cannot make room). A cut
/// component gets need + its share, rounded down to whole steps, and is
/// marked [`State::Squeezed`], with a memory record in `squeezed` (a
/// component whose CPU was squeezed too gets a second record:
/// [`merge_squeezed`] joins them).
///
/// The per-host sums are exact (in integers), so the shares
/// and cuts do not depend on the order the slots are visited in: they are
/// visited in memory order, which costs a fraction of scheduler order's
/// cache misses.
pub(super) fn give_buffers(
    view: &ClusterView,
    app_info: &[AppInfo],
    need: &[f64],
    slots: &mut [Slot],
    free: &[Resources],
    cfg: &ShaperConfig,
    squeezed: &mut Vec<Squeezed>,
) {
    let kept = |s: &Slot| matches!(s.state, State::Kept | State::Squeezed);
    let wanted = |s: &Slot, g: usize| (s.eff.mem_bytes - need[g].min(s.eff.mem_bytes)).max(0.0);
    // The held part of what slot `g` (a component `c`) wants.
    let held = |c: &Component, want: f64, g: usize| {
        let hold = c.forecast.as_ref().map_or(0.0, |f| sane(f.mem_hold_bytes));
        (hold - need[g]).clamp(0.0, want)
    };
    // Per host: the buffers wanted, in 1/1024 bytes rounded up (an
    // integer sum is exact in any order; `as` saturates at 16 PiB), then
    // the share of each that fits (never above the exact share).
    const UNITS_PER_BYTE: f64 = 1024.0;
    let units = |x: f64| (x * UNITS_PER_BYTE).ceil() as u64;
    let mut total: Vec<u64> = vec![0; free.len()];
    for (g, s) in slots.iter().enumerate() {
        if kept(s) {
            let t = &mut total[s.host as usize];
            *t = t.saturating_add(units(wanted(s, g)));
        }
    }
    // Per host: short of room for all of its buffers (worked out once: the
    // passes below ask it for every slot).
    let short: Vec<bool> = (0..free.len())
        .map(|h| {
            free[h].mem_bytes - total[h] as f64 / UNITS_PER_BYTE
                < -view.hosts[h].capacity.mem_bytes * FIT_TOLERANCE
        })
        .collect();
    if !short.contains(&true) {
        // Every host has room for all of its buffers: nothing is cut.
        return;
    }
    // Some host is short: per host, the held part of its elastic and of
    // its core components' buffers, and the rest of its core components'.
    let mut elastic_holds: Vec<u64> = vec![0; free.len()];
    let mut core_holds: Vec<u64> = vec![0; free.len()];
    let mut core_rest: Vec<u64> = vec![0; free.len()];
    for (ai, a) in app_info.iter().enumerate() {
        let range = a.start as usize..a.end as usize;
        for (g, s) in range.clone().zip(&slots[range]) {
            if kept(s) && short[s.host as usize] {
                let c = &view.apps[ai].components[g - a.start as usize];
                let want = wanted(s, g);
                let hold = held(c, want, g);
                let h = s.host as usize;
                if s.core {
                    core_holds[h] = core_holds[h].saturating_add(units(hold));
                    core_rest[h] = core_rest[h].saturating_add(units(want - hold));
                } else {
                    elastic_holds[h] = elastic_holds[h].saturating_add(units(hold));
                }
            }
        }
    }
    // Per host: the share of each tier that fits.
    let bytes = |u: u64| u as f64 / UNITS_PER_BYTE;
    let tiers = |h: usize| Tiers {
        elastic_hold: bytes(elastic_holds[h]),
        core_hold: bytes(core_holds[h]),
        core: bytes(core_rest[h]),
        elastic: bytes(
            total[h]
                .saturating_sub(elastic_holds[h])
                .saturating_sub(core_holds[h])
                .saturating_sub(core_rest[h]),
        ),
    };
    let share: Vec<Shares> = (0..free.len())
        .map(|h| {
            if short[h] {
                tiers(h).shares(free[h].mem_bytes)
            } else {
                Shares::WHOLE
            }
        })
        .collect();
    // What slot `g` (component `c`) wants, the held part of that, and
    // what it keeps under `sh`.
    let kept_of = |c: &Component, s: &Slot, g: usize, sh: Shares| {
        let want = wanted(s, g);
        let hold = held(c, want, g);
        let (sh_rest, sh_hold) = if s.core {
            (sh.core, sh.core_hold)
        } else {
            (sh.elastic, sh.elastic_hold)
        };
        let whole = (hold <= 0.0 || sh_hold >= 1.0) && (want - hold <= 0.0 || sh_rest >= 1.0);
        let keeps = if whole {
            want
        } else {
            (want - hold) * sh_rest + hold * sh_hold
        };
        (want, hold, keeps)
    };
    // A target at its ceiling whose cut would be smaller than
    // `CEILING_CUT_MIN` of its request is not cut ([`CEILING_CUT_MIN`]):
    // its (want, hold) when so.
    let ceiling_kept = |c: &Component, s: &Slot, g: usize, sh: Shares| {
        let (want, hold, keeps) = kept_of(c, s, g, sh);
        (want > 0.0
            && s.eff.mem_bytes >= ceiling(c.request.mem_bytes, cfg.max_growth) - MEM_STEP_BYTES
            && want - keeps < CEILING_CUT_MIN * c.request.mem_bytes)
            .then_some((want, hold))
    };
    // Per host: the buffers kept whole that way, out of their tiers, and
    // the shares of the rest in what is left; a host whose other needs
    // leave no room for them cuts every buffer as above.
    let mut whole_bytes = vec![0.0; free.len()];
    let mut out: Vec<Tiers> = vec![Tiers::default(); free.len()];
    for (ai, a) in app_info.iter().enumerate() {
        let range = a.start as usize..a.end as usize;
        for (g, s) in range.clone().zip(&slots[range]) {
            let h = s.host as usize;
            if !kept(s) || !short[h] {
                continue;
            }
            let c = &view.apps[ai].components[g - a.start as usize];
            if let Some((want, hold)) = ceiling_kept(c, s, g, share[h]) {
                whole_bytes[h] += want;
                let o = &mut out[h];
                if s.core {
                    o.core_hold += hold;
                    o.core += want - hold;
                } else {
                    o.elastic_hold += hold;
                    o.elastic += want - hold;
                }
            }
        }
    }
    let rest: Vec<Option<Shares>> = (0..free.len())
        .map(|h| {
            let f = free[h].mem_bytes - whole_bytes[h];
            (whole_bytes[h] > 0.0 && f >= 0.0).then(|| tiers(h).without(&out[h]).shares(f))
        })
        .collect();
    for (ai, a) in app_info.iter().enumerate() {
        let range = a.start as usize..a.end as usize;
        for (g, s) in range.clone().zip(&mut slots[range]) {
            let h = s.host as usize;
            if !kept(s) || !short[h] {
                // nothing is cut on a host with room for every buffer
                continue;
            }
            let c = &view.apps[ai].components[g - a.start as usize];
            let sh = match rest[h] {
                Some(_) if ceiling_kept(c, s, g, share[h]).is_some() => continue,
                Some(rest) => rest,
                None => share[h],
            };
            let (want, _, exact) = kept_of(c, s, g, sh);
            if want <= 0.0 || exact >= want {
                continue;
            }
            // Its share, in whole steps (a cut limit is not rounded up; the
            // shares of a host sum to at most what is free there). What
            // was placed is its need, in whole steps too (rounded up when
            // placed), or its allocation: the sum is whole steps.
            let room = align_down(Resource::Mem, exact).max(0.0);
            let placed = s.eff.mem_bytes - want;
            let planned = Resources::new(s.eff.cpu_cores, placed + room);
            let (eff, changed) = settle_within(planned, c, cfg);
            squeezed.push(Squeezed {
                app: ai as u32,
                slot: g as u32,
                cpu: None,
                mem: Some((s.eff.mem_bytes, placed + room)),
            });
            s.eff = eff;
            s.changed = changed;
            s.state = State::Squeezed;
        }
    }
}

/// On a host short of room for its buffers, the elastic components'
/// buffers are cut alone down to this share of them before a core
/// component's buffer is cut ([`give_buffers`]). Cutting them to nothing
/// first (0) kills so many elastic components that their applications
/// reach the failure limit and are evicted; on Google 2011 parts 0-3 the
/// even cut of every buffer (1) failed 6 applications, 0.75 4, 0.5 2,
/// 0.25 and 0.1 one (docs/results.md, "Buffers cut elastic first").
pub(crate) const ELASTIC_CUT_FIRST_TO: f64 = 0.25;

/// On a host short of room for its buffers, a component whose target is
/// its ceiling (`request x max_growth`) keeps its whole buffer when its
/// cut would take less than this fraction of its request
/// ([`give_buffers`]): a usage that presses against its limit sits at the
/// ceiling (a trace's usage is cut there; a container's page cache fills
/// its limit), so any cut kills it there and a small one frees almost
/// nothing. The rest of the host's buffers are cut that much more.
pub(crate) const CEILING_CUT_MIN: f64 = 0.02;

/// A host's buffers by tier (bytes), cut in this order: the elastic
/// components' holds, their buffers (down to [`ELASTIC_CUT_FIRST_TO`]),
/// every buffer, the core components' holds ([`give_buffers`]).
#[derive(Clone, Copy, Debug, Default)]
struct Tiers {
    elastic_hold: f64,
    elastic: f64,
    core: f64,
    core_hold: f64,
}

impl Tiers {
    /// These tiers without `other`'s.
    fn without(&self, other: &Tiers) -> Tiers {
        let minus = |a: f64, b: f64| (a - b).max(0.0);
        Tiers {
            elastic_hold: minus(self.elastic_hold, other.elastic_hold),
            elastic: minus(self.elastic, other.elastic),
            core: minus(self.core, other.core),
            core_hold: minus(self.core_hold, other.core_hold),
        }
    }

    /// The share of each tier that `free_bytes` has room for.
    fn shares(&self, free_bytes: f64) -> Shares {
        let Tiers {
            elastic_hold,
            elastic,
            core,
            core_hold,
        } = *self;
        let part = |x: f64, of: f64| {
            if of > 0.0 {
                (x / of).clamp(0.0, 1.0)
            } else {
                1.0
            }
        };
        if free_bytes < core_hold {
            // the core holds last
            return Shares {
                elastic_hold: 0.0,
                elastic: 0.0,
                core: 0.0,
                core_hold: part(free_bytes, core_hold),
            };
        }
        let f = free_bytes - core_hold;
        if f >= elastic + core {
            Shares {
                elastic_hold: part(f - elastic - core, elastic_hold),
                ..Shares::WHOLE
            }
        } else if f >= elastic * ELASTIC_CUT_FIRST_TO + core {
            // the elastic buffers alone, down to `ELASTIC_CUT_FIRST_TO` of
            // them
            Shares {
                elastic_hold: 0.0,
                elastic: part(f - core, elastic),
                ..Shares::WHOLE
            }
        } else {
            // then every buffer evenly, the elastic ones' from there
            let y = part(f, elastic * ELASTIC_CUT_FIRST_TO + core);
            Shares {
                elastic_hold: 0.0,
                elastic: ELASTIC_CUT_FIRST_TO * y,
                core: y,
                core_hold: 1.0,
            }
        }
    }
}

/// The share of each tier of a host's buffers that it has room for
/// ([`give_buffers`]).
#[derive(Clone, Copy, Debug)]
struct Shares {
    elastic_hold: f64,
    elastic: f64,
    core: f64,
    core_hold: f64,
}

impl Shares {
    const WHOLE: Shares = Shares {
        elastic_hold: 1.0,
        elastic: 1.0,
        core: 1.0,
        core_hold: 1.0,
    };
}

/// Sorts the squeezed records by slot (memory order, for the emission
/// that reads each one's component) and joins a slot's CPU and memory
/// records into one.
pub(super) fn merge_squeezed(squeezed: &mut Vec<Squeezed>) {
    // A stable sort: the memory records come in slot order already (one
    // run), so this costs about a pass plus sorting the CPU records.
    squeezed.sort_by_key(|q| q.slot);
    squeezed.dedup_by(|later, first| {
        let same = later.slot == first.slot;
        if same {
            first.cpu = first.cpu.or(later.cpu);
            first.mem = first.mem.or(later.mem);
        }
        same
    });
}

/// The least memory a squeezed component keeps: its current peak usage,
/// its forecast's mean when it has one, and the memory floors
/// (`min_mem_bytes`, its own [`Component::mem_floor_bytes`] and its OOM
/// floor up to its ceiling); the first pass takes at most the planned
/// target of it.
pub(super) fn mem_need(c: &Component, cfg: &ShaperConfig) -> f64 {
    let mean = c
        .forecast
        .as_ref()
        .map(|f| f.mem.mean)
        .filter(|m| m.is_finite())
        .unwrap_or(0.0);
    sane(c.usage.mem_bytes)
        .max(mean)
        .max(sane(cfg.min_mem_bytes))
        .max(sane(c.mem_floor_bytes))
        .max(super::target::oom_floor_bytes(c, cfg))
}
