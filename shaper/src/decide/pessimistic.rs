//! Pessimistic planning (thesis Algorithm 3) and the eviction cap.

use super::*;
use crate::AppSize;

/// Cluster-wide elastic keep-order key: (victim-order key, scheduler
/// position, start time, component id, slot).
pub(super) type GlobalKey = (u64, u64, u64, u64, u32);

/// Per application: everything the planning needs in one cache line.
#[derive(Clone, Copy, Debug)]
pub(super) struct AppInfo {
    /// Its slots are `start..end`.
    pub(super) start: u32,
    pub(super) end: u32,
    /// First elastic slot in keep order (oldest first), linked by
    /// `Slot::next`; `NO_NEXT` when none (or not pessimistic).
    pub(super) elastic_head: u32,
    /// Has a protected component: its core components are forced.
    pub(super) pinned: bool,
    /// Its components' constant buffer terms and smallness, by class.
    pub(super) rules: AppRules,
}

/// A component's constant buffer term and whether the size rules count it
/// as small, the same for every component of one class in an application.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClassRules {
    pub(super) k1: f64,
    pub(super) small: bool,
}

/// The [`ClassRules`] of an application's elastic and core components.
#[derive(Clone, Copy, Debug)]
pub(super) struct AppRules {
    elastic: ClassRules,
    core: ClassRules,
}

impl AppRules {
    /// The rules of an application of size `size` whose K1 is `app_k1`
    /// ([`ShaperConfig::k1_for`]): [`ShaperConfig::k1_for_class`] and
    /// [`ShaperConfig::is_small`] for each class.
    pub(super) fn new(cfg: &ShaperConfig, size: AppSize, app_k1: f64) -> Self {
        let rules = |class| ClassRules {
            k1: cfg.k1_for_class(size, app_k1, class),
            small: cfg.is_small(size, class),
        };
        Self {
            elastic: rules(Class::Elastic),
            core: rules(Class::Core),
        }
    }

    /// The rules of a component of class `class`.
    pub(super) fn of(&self, class: Class) -> ClassRules {
        match class {
            Class::Core => self.core,
            Class::Elastic => self.elastic,
        }
    }
}

/// Touches the data of the applications a few places after `pos` in
/// `order`, so that their cache misses overlap with the work on `pos` (a
/// plain load; `black_box` keeps it): walks in scheduler order read the
/// slots out of memory order.
#[inline(always)]
fn touch_ahead(order: &[u32], pos: usize, app_info: &[AppInfo], slots: &[Slot]) {
    if let Some(&ahead) = order.get(pos + 8) {
        std::hint::black_box(app_info[ahead as usize].start);
    }
    if let Some(&ahead) = order.get(pos + 4) {
        let a = app_info[ahead as usize];
        if a.start < a.end {
            std::hint::black_box(slots[a.start as usize].host);
            std::hint::black_box(slots[(a.end - 1) as usize].host);
        }
    }
}

/// Thesis Algorithm 3 over the slots; returns the victims in decision order.
pub(super) fn plan_pessimistic(
    view: &ClusterView,
    order: &[u32],
    app_info: &[AppInfo],
    // Cluster-wide elastic keep order (slot last) for the victim orders
    // other than the thesis's; `None` for the thesis's per-app order.
    global: Option<&[GlobalKey]>,
    slots: &mut [Slot],
    cfg: &ShaperConfig,
    squeezed: &mut Vec<Squeezed>,
) -> Vec<Victim> {
    let cpu_shared = cfg.cpu_shortfall == CpuShortfall::Share;
    let mut share = cpu_shared.then(|| Squeeze {
        cfg,
        cpu_floor: sane(cfg.min_cpu_cores).max(MIN_SHARE_CPU_CORES),
        app_info,
        out: squeezed,
    });
    let mut free: Vec<Resources> = view
        .hosts
        .iter()
        .map(|h| Resources::new(sane(h.capacity.cpu_cores), sane(h.capacity.mem_bytes)))
        .collect();
    let tol: Vec<Resources> = free
        .iter()
        .map(|c| Resources::new(c.cpu_cores * FIT_TOLERANCE, c.mem_bytes * FIT_TOLERANCE))
        .collect();
    // `mem_shortfall = buffer`: every component's memory need, placed in
    // the first pass; buffers are given out in a second.
    let need: Option<Vec<f64>> = (cfg.mem_shortfall == MemShortfall::Buffer).then(|| {
        let mut n = vec![0.0; slots.len()];
        for (ai, a) in app_info.iter().enumerate() {
            let app = &view.apps[ai];
            // An application over the failure limit keeps its requests:
            // all of its target is need, none of it a buffer to cut.
            let unshaped = app.failures >= cfg.failure_limit;
            for (j, g) in (a.start as usize..a.end as usize).enumerate() {
                n[g] = if unshaped {
                    f64::INFINITY
                } else {
                    mem_need(&app.components[j], cfg)
                };
            }
        }
        n
    });
    let range = |ai: u32| {
        let a = &app_info[ai as usize];
        a.start as usize..a.end as usize
    };

    // Forced allocations first: protected components, and the core
    // components of applications that have a protected component (evicting
    // such an application would kill its protected component). Taken in
    // scheduler order so that the float sums do not depend on the view's
    // order.
    let any_pinned = app_info.iter().any(|a| a.pinned);
    for &ai in order.iter().filter(|_| any_pinned) {
        let protected_app = app_info[ai as usize].pinned;
        for s in &mut slots[range(ai)] {
            if s.state == State::Pending && (s.protected || (protected_app && s.core)) {
                let f = &mut free[s.host as usize];
                *f = f.sub(&s.eff);
                s.state = State::Forced;
            }
        }
    }

    let mut victims: Vec<Victim> = Vec::new();
    let mut undo: Vec<(u32, Resources)> = Vec::new();
    for (pos, &ai) in order.iter().enumerate() {
        touch_ahead(order, pos, app_info, slots);
        let r = range(ai);
        // Core components: all or nothing across every host.
        undo.clear();
        let mut failed: Option<(usize, Binding)> = None;
        for g in r.clone() {
            if !slots[g].core || slots[g].state != State::Pending {
                continue;
            }
            let h = slots[g].host as usize;
            if let Some(q) = share.as_mut() {
                q.apply(view, ai, g, &free[h], slots);
            }
            let d = demand(&slots[g], g, need.as_deref());
            if let Some(res) = fits(&free[h], &d, &tol[h], cpu_shared) {
                let host = view.hosts[h].id;
                failed = Some((
                    g,
                    Binding {
                        host,
                        resource: res,
                        needed: d.get(res),
                        free: free[h].get(res),
                    },
                ));
                break;
            }
            undo.push((h as u32, free[h]));
            free[h] = free[h].sub(&d);
        }
        if let Some((culprit, binding)) = failed {
            for &(h, before) in undo.iter().rev() {
                free[h as usize] = before;
            }
            let vi = victims.len() as u32;
            victims.push(Victim {
                app: ai,
                slot: culprit as u32,
                whole_app: true,
                deferred: false,
                binding,
            });
            for s in &mut slots[r] {
                if matches!(s.state, State::Pending | State::Squeezed) {
                    s.state = State::AppEvicted;
                    s.victim = vi;
                }
            }
            continue;
        }
        for s in &mut slots[r] {
            if s.core && s.state == State::Pending {
                s.state = State::Kept;
            }
        }
        if global.is_none() {
            // Elastic components, oldest first (thesis line 25).
            let mut g = app_info[ai as usize].elastic_head;
            while g != NO_NEXT {
                keep_or_evict(
                    ai,
                    g,
                    slots,
                    &mut free,
                    &tol,
                    &mut victims,
                    view,
                    &mut share,
                    need.as_deref(),
                );
                g = slots[g as usize].next;
            }
        }
    }

    if let Some(global) = global {
        // Every application's core components are placed; now the elastic
        // components cluster-wide in keep order.
        for &(_, pos, _, _, g) in global {
            if slots[g as usize].state == State::Pending {
                keep_or_evict(
                    order[pos as usize],
                    g,
                    slots,
                    &mut free,
                    &tol,
                    &mut victims,
                    view,
                    &mut share,
                    need.as_deref(),
                );
            }
        }
    }
    if let Some(need) = &need {
        give_buffers(view, app_info, need, slots, &free, cfg, squeezed);
    }
    merge_squeezed(squeezed);
    victims
}

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
    cfg: &'a ShaperConfig,
    /// The smallest CPU a squeezed component gets.
    cpu_floor: f64,
    app_info: &'a [AppInfo],
    out: &'a mut Vec<Squeezed>,
}

impl Squeeze<'_> {
    /// When slot `g`'s CPU does not fit in what is left on its host
    /// (`free`), cuts it to that (rounded down to the CPU step, at least
    /// the floor), through the same hysteresis as any target, and marks the
    /// slot [`State::Squeezed`].
    fn apply(
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
        let room = (free.cpu_cores / CPU_STEP_CORES).floor() * CPU_STEP_CORES;
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
/// component gets need + its share, rounded down to whole pages, and is
/// marked [`State::Squeezed`], with a memory record in `squeezed` (a
/// component whose CPU was squeezed too gets a second record:
/// [`merge_squeezed`] joins them).
///
/// The per-host sums are exact (in integers), so the shares
/// and cuts do not depend on the order the slots are visited in: they are
/// visited in memory order, which costs a fraction of scheduler order's
/// cache misses.
fn give_buffers(
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
    let short = |h: usize, t: u64| {
        free[h].mem_bytes - t as f64 / UNITS_PER_BYTE
            < -view.hosts[h].capacity.mem_bytes * FIT_TOLERANCE
    };
    if (0..free.len()).all(|h| !short(h, total[h])) {
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
            if kept(s) && short(s.host as usize, total[s.host as usize]) {
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
            if short(h, total[h]) {
                tiers(h).shares(free[h].mem_bytes)
            } else {
                Shares::WHOLE
            }
        })
        .collect();
    // What slot `g` (component `c`) keeps of what it wants under `sh`.
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
        (want, keeps)
    };
    // A target at its ceiling whose cut would be smaller than
    // `CEILING_CUT_MIN` of its request is not cut ([`CEILING_CUT_MIN`]).
    let ceiling_kept = |c: &Component, s: &Slot, g: usize, sh: Shares| {
        let (want, keeps) = kept_of(c, s, g, sh);
        want > 0.0
            && s.eff.mem_bytes
                >= crate::limits::ceiling(c.request.mem_bytes, cfg.max_growth) - MEM_STEP_BYTES
            && want - keeps < CEILING_CUT_MIN * c.request.mem_bytes
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
            if !kept(s) || !short(h, total[h]) {
                continue;
            }
            let c = &view.apps[ai].components[g - a.start as usize];
            if ceiling_kept(c, s, g, share[h]) {
                let want = wanted(s, g);
                let hold = held(c, want, g);
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
            if !kept(s) || !short(h, total[h]) {
                // nothing is cut on a host with room for every buffer
                continue;
            }
            let c = &view.apps[ai].components[g - a.start as usize];
            let sh = match rest[h] {
                Some(_) if ceiling_kept(c, s, g, share[h]) => continue,
                Some(rest) => rest,
                None => share[h],
            };
            let (want, exact) = kept_of(c, s, g, sh);
            if want <= 0.0 || exact >= want {
                continue;
            }
            // Its share, in whole pages (a cut limit is not rounded up; the
            // shares of a host sum to at most what is free there).
            let room = ((exact / MEM_STEP_BYTES).floor() * MEM_STEP_BYTES).max(0.0);
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

/// The least memory a squeezed component keeps: its current peak usage
/// (raised to the OOM floor by the view), its forecast's mean when it has
/// one, and the memory floor.
fn mem_need(c: &Component, cfg: &ShaperConfig) -> f64 {
    let mean = c
        .forecast
        .as_ref()
        .map(|f| f.mem.mean)
        .filter(|m| m.is_finite())
        .unwrap_or(0.0);
    sane(c.usage.mem_bytes)
        .max(mean)
        .max(sane(cfg.min_mem_bytes))
}

/// Keeps elastic slot `g` if it fits on its host (`share`: after squeezing
/// its CPU), else makes it a victim.
#[allow(clippy::too_many_arguments)]
pub(super) fn keep_or_evict(
    ai: u32,
    g: u32,
    slots: &mut [Slot],
    free: &mut [Resources],
    tol: &[Resources],
    victims: &mut Vec<Victim>,
    view: &ClusterView,
    share: &mut Option<Squeeze<'_>>,
    need: Option<&[f64]>,
) {
    let h = slots[g as usize].host as usize;
    if let Some(q) = share.as_mut() {
        q.apply(view, ai, g as usize, &free[h], slots);
    }
    let s = &mut slots[g as usize];
    let d = demand(s, g as usize, need);
    match fits(&free[h], &d, &tol[h], share.is_some()) {
        None => {
            free[h] = free[h].sub(&d);
            if s.state == State::Pending {
                s.state = State::Kept;
            }
        }
        Some(r) => {
            s.state = State::Victim;
            s.victim = victims.len() as u32;
            victims.push(Victim {
                app: ai,
                slot: g,
                whole_app: false,
                deferred: false,
                binding: Binding {
                    host: view.hosts[h].id,
                    resource: r,
                    needed: d.get(r),
                    free: free[h].get(r),
                },
            });
        }
    }
}

/// What slot `g` takes of its host in the first pass: its planned
/// allocation, or with `mem_shortfall = buffer` (`need` given) its memory
/// need in place of its memory target (buffers come in the second pass).
fn demand(s: &Slot, g: usize, need: Option<&[f64]>) -> Resources {
    match need {
        Some(n) => Resources::new(s.eff.cpu_cores, n[g].min(s.eff.mem_bytes)),
        None => s.eff,
    }
}

/// `max_evictions_per_round`: when the victims would exceed the cap (counted
/// in components, every component of an evicted application included), the
/// latest decisions (least important by the scheduler and victim orders) are
/// evicted first while the budget lasts; a victim that does not fit in what
/// remains of the budget is deferred: it keeps its current allocation (shrunk
/// to its target when that is smaller, never grown). Returns the number of
/// deferred components.
pub(super) fn apply_eviction_cap(
    apps: &[Application],
    app_info: &[AppInfo],
    slots: &mut [Slot],
    victims: &mut [Victim],
    cfg: &ShaperConfig,
) -> u64 {
    let Some(cap) = cfg.max_evictions_per_round else {
        return 0;
    };
    let cost = |v: &Victim| {
        if v.whole_app {
            apps[v.app as usize].components.len() as u64
        } else {
            1
        }
    };
    let total: u64 = victims.iter().map(cost).sum();
    if total <= u64::from(cap) {
        return 0;
    }
    let mut budget = u64::from(cap);
    for v in victims.iter_mut().rev() {
        let c = cost(v);
        if c <= budget {
            budget -= c;
        } else {
            v.deferred = true;
        }
    }
    let mut deferred = 0u64;
    for (vi, v) in victims.iter().enumerate() {
        if !v.deferred {
            continue;
        }
        deferred += cost(v);
        let app = &apps[v.app as usize];
        let first = app_info[v.app as usize].start as usize;
        for (j, c) in app.components.iter().enumerate() {
            let s = &mut slots[first + j];
            let mine =
                s.victim == vi as u32 && matches!(s.state, State::AppEvicted | State::Victim);
            if !mine {
                continue;
            }
            let cur = c.allocation;
            // s.eff is the planned allocation after hysteresis; never grow.
            let capped = Resources::from_fn(|r| {
                let x = cur.get(r);
                if x.is_finite() && x >= 0.0 {
                    x.min(s.eff.get(r))
                } else {
                    s.eff.get(r)
                }
            });
            let (eff, changed, _) = settle(capped, c, cfg);
            s.eff = eff;
            s.changed = changed;
            s.state = State::Deferred;
        }
    }
    tracing::warn!(
        cap,
        would_evict = total,
        deferred,
        "max_evictions_per_round reached: victims deferred"
    );
    deferred
}
