//! Scoped limits: limits set on a QoS, a partition, an account (inherited by
//! its sub-accounts) or one user's association, each counting running
//! resources, running jobs and queued + running jobs per group, user, account
//! or job, and a per-job wall-clock maximum. docs/core.md ("Scoped limits")
//! gives the rules and where they come from.
//!
//! A job's limits are resolved once per profile (QoS, partition, account,
//! user where a limit looks at users), so a pass checks a short list of
//! (limit, counter, items) entries per job; with no limits every job has the
//! empty profile and nothing here runs.

use crate::amounts::{fmt_amount, INF};
use crate::fxhash::FxMap;
use crate::wire::{WLimit, CPU, GPU, MEM, V3};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Qos,
    Partition,
    Account,
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    Group,
    User,
    Account,
    Job,
}

/// No profile: the job is subject to no limit.
pub const NO_PROFILE: u32 = u32::MAX;
const NO_COUNTER: u32 = u32::MAX;

pub struct Lim<'a> {
    pub scope: Scope,
    pub owner: &'a str,
    pub per: Per,
    /// Per resource key (cpu, memory, gpu, then `Limits::typed`), INF if unset.
    pub tres: Vec<f64>,
    pub jobs: Option<i64>,
    pub submit: Option<i64>,
    pub wall: Option<f64>,
    pub rank: i64,
}

/// One limit as it applies to a profile: its counter (none for per-job
/// limits) and the items it is checked on (`mask`; a limit overridden by a
/// stronger one for an item still counts the job, unchecked).
#[derive(Clone, Copy)]
pub struct Entry {
    pub lim: u32,
    pub counter: u32,
    pub mask: u64,
}

#[derive(Clone, Default)]
pub struct Counter {
    pub tres: Vec<f64>,
    pub running: i64,
    pub submitted: i64,
}

/// Why a limit holds a job (worded by `Limits::words`).
#[derive(Debug, Clone)]
pub struct LimitBlock {
    pub lim: u32,
    pub item: u32,
    /// What the counter holds (resources or running jobs).
    pub holds: f64,
    pub asks: f64,
}

#[derive(Default)]
pub struct Limits<'a> {
    pub active: bool,
    pub lims: Vec<Lim<'a>>,
    /// Typed GPU names some limit sets; resource key 3 + k.
    pub typed: Vec<&'a str>,
    pub entries: Vec<Entry>,
    /// Per profile: its entries, `entries[lo..hi]`.
    pub profiles: Vec<(u32, u32)>,
    pub counters: Vec<Counter>,
    /// Whether any limit is set on a user or counted per user (profiles then differ per user).
    pub user_matters: bool,
}

/// The profile of a job: who it is, as limits see it.
pub struct Who<'a, 'x> {
    pub qos: &'a str,
    pub part: Option<&'a str>,
    pub part_qos: Option<&'a str>,
    /// The job's account, then its ancestors.
    pub accounts: &'x [(usize, &'a str)],
    pub user: &'a str,
}

impl<'a> Limits<'a> {
    pub fn nkeys(&self) -> usize {
        3 + self.typed.len()
    }
    pub fn item_jobs(&self) -> usize {
        self.nkeys()
    }
    pub fn item_submit(&self) -> usize {
        self.nkeys() + 1
    }
    pub fn item_wall(&self) -> usize {
        self.nkeys() + 2
    }

    pub fn build(ws: &[WLimit<'a>]) -> Result<Limits<'a>, String> {
        let mut l = Limits {
            active: !ws.is_empty(),
            ..Default::default()
        };
        for w in ws {
            if let Some(t) = &w.tres {
                for (k, _) in &t.typed {
                    if !l.typed.contains(k) {
                        l.typed.push(k);
                    }
                }
            }
        }
        l.typed.sort_unstable();
        if l.typed.len() > 58 {
            return Err(format!(
                "limits: {} typed GPU keys, at most 58 are supported",
                l.typed.len()
            ));
        }
        for (i, w) in ws.iter().enumerate() {
            let what = format!("limit {i} ({} {:?})", w.scope, w.owner);
            let scope = match w.scope {
                "qos" => Scope::Qos,
                "partition" => Scope::Partition,
                "account" => Scope::Account,
                "user" => Scope::User,
                v => {
                    return Err(format!(
                        "{what}: unknown scope {v:?} (allowed: qos, partition, account, user)"
                    ))
                }
            };
            let per = match w.per {
                "group" => Per::Group,
                "user" => Per::User,
                "account" => Per::Account,
                "job" => Per::Job,
                v => {
                    return Err(format!(
                        "{what}: unknown per {v:?} (allowed: group, user, account, job)"
                    ))
                }
            };
            let mut tres = vec![INF; 3 + l.typed.len()];
            if let Some(t) = &w.tres {
                if let Some((k, x)) = t.res.bad {
                    return Err(format!(
                        "{what}: tres {k} = {x} is negative or not a number"
                    ));
                }
                for d in 0..3 {
                    if let Some(x) = t.res.v[d] {
                        tres[d] = x;
                    }
                }
                for (k, x) in &t.typed {
                    let ix = l.typed.iter().position(|t| t == k).expect("collected");
                    tres[3 + ix] = *x;
                }
            }
            for (f, x) in [("jobs", w.jobs), ("submit", w.submit)] {
                if x.is_some_and(|x| x < 0) {
                    return Err(format!("{what}: {f} is negative"));
                }
            }
            if w.wall.is_some_and(|x| !x.is_finite() || x < 0.0) {
                return Err(format!("{what}: wall is negative or not a number"));
            }
            if scope == Scope::User || per == Per::User {
                l.user_matters = true;
            }
            l.lims.push(Lim {
                scope,
                owner: w.owner,
                per,
                tres,
                jobs: w.jobs,
                submit: w.submit,
                wall: w.wall,
                rank: w.rank,
            });
        }
        Ok(l)
    }

    /// Whether limit `i` is set on an object the job belongs to.
    fn matches(&self, i: usize, who: &Who<'a, '_>) -> bool {
        let lim = &self.lims[i];
        match lim.scope {
            Scope::Qos => lim.owner == who.qos || who.part_qos == Some(lim.owner),
            Scope::Partition => who.part == Some(lim.owner),
            Scope::Account => who.accounts.iter().any(|a| a.1 == lim.owner),
            Scope::User => {
                let (Some(acct), u) = (who.accounts.first(), who.user) else {
                    return false;
                };
                let o = lim.owner;
                o.len() == acct.1.len() + 1 + u.len()
                    && o.starts_with(acct.1)
                    && o.ends_with(u)
                    && o.as_bytes()[acct.1.len()] == b'/'
            }
        }
    }

    /// Items limit `i` sets: resource keys, then jobs, submit, wall.
    fn items(&self, i: usize) -> u64 {
        let lim = &self.lims[i];
        let mut m = 0u64;
        for (r, x) in lim.tres.iter().enumerate() {
            if x.is_finite() {
                m |= 1 << r;
            }
        }
        if lim.jobs.is_some() && lim.per != Per::Job {
            m |= 1 << self.item_jobs();
        }
        if lim.submit.is_some() && lim.per != Per::Job {
            m |= 1 << self.item_submit();
        }
        if lim.wall.is_some() {
            m |= 1 << self.item_wall();
        }
        m
    }

    /// Builds (or finds) the profile of a job and the counters it counts in.
    /// `cache` maps (qos, partition, account, user) to a profile; `counter_ix`
    /// maps (limit, user, account) to a counter.
    pub fn profile(
        &mut self,
        key: (&'a str, Option<&'a str>, usize, &'a str),
        who: &Who<'a, '_>,
        cache: &mut FxMap<(&'a str, Option<&'a str>, usize, &'a str), u32>,
        counter_ix: &mut FxMap<(u32, &'a str, usize), u32>,
    ) -> u32 {
        if let Some(&p) = cache.get(&key) {
            return p;
        }
        let matched: Vec<usize> = (0..self.lims.len())
            .filter(|&i| self.matches(i, who))
            .collect();
        let wall = self.item_wall();
        let lo = self.entries.len() as u32;
        for &i in &matched {
            let lim = &self.lims[i];
            let mut mask = 0u64;
            let items = self.items(i);
            for item in 0..=wall {
                if items & (1 << item) == 0 {
                    continue;
                }
                // The kind of limit: (per, item); a wall limit is per job whatever `per` says.
                let kind_per = |l: &Lim| if item == wall { Per::Job } else { l.per };
                let qos_class = |l: &Lim| matches!(l.scope, Scope::Qos | Scope::Partition);
                let rivals: Vec<usize> = matched
                    .iter()
                    .copied()
                    .filter(|&k| {
                        self.items(k) & (1 << item) != 0 && kind_per(&self.lims[k]) == kind_per(lim)
                    })
                    .collect();
                let any_qos = rivals.iter().any(|&k| qos_class(&self.lims[k]));
                let applies = if qos_class(lim) {
                    // The QoS-side limit of lowest rank wins (a job QoS over its
                    // partition's, or the other way round; the source ranks them).
                    rivals
                        .iter()
                        .filter(|&&k| qos_class(&self.lims[k]))
                        .min_by_key(|&&k| (self.lims[k].rank, k))
                        == Some(&i)
                } else if any_qos {
                    false // a QoS that sets this item overrides every association limit on it
                } else if kind_per(lim) == Per::Group {
                    true // each account up the tree enforces its own group limit
                } else {
                    rivals.iter().min_by_key(|&&k| (self.lims[k].rank, k)) == Some(&i)
                };
                if applies {
                    mask |= 1 << item;
                }
            }
            let counter = if lim.per == Per::Job {
                NO_COUNTER
            } else {
                let ck = (
                    i as u32,
                    if lim.per == Per::User { key.3 } else { "" },
                    if lim.per == Per::Account {
                        key.2
                    } else {
                        usize::MAX
                    },
                );
                let next = self.counters.len() as u32;
                let c = *counter_ix.entry(ck).or_insert(next);
                if c == next {
                    self.counters.push(Counter {
                        tres: vec![0.0; self.nkeys()],
                        running: 0,
                        submitted: 0,
                    });
                }
                c
            };
            if mask != 0 || counter != NO_COUNTER {
                self.entries.push(Entry {
                    lim: i as u32,
                    counter,
                    mask,
                });
            }
        }
        let p = self.profiles.len() as u32;
        self.profiles.push((lo, self.entries.len() as u32));
        cache.insert(key, p);
        p
    }

    fn entries_of(&self, prof: u32) -> &[Entry] {
        if prof == NO_PROFILE {
            return &[];
        }
        let (lo, hi) = self.profiles[prof as usize];
        &self.entries[lo as usize..hi as usize]
    }

    /// A job's amount in resource key `r`: a typed key counts only jobs asking that type.
    pub fn amount(total: &V3, ltype: Option<u16>, r: usize) -> f64 {
        if r < 3 {
            total[r]
        } else if ltype == Some((r - 3) as u16) {
            total[GPU]
        } else {
            0.0
        }
    }

    /// Counts a job that starts (`sign` 1) or stops (-1) running.
    pub fn account(&mut self, prof: u32, total: &V3, ltype: Option<u16>, sign: f64) {
        if prof == NO_PROFILE {
            return;
        }
        let (lo, hi) = self.profiles[prof as usize];
        for e in lo..hi {
            let c = self.entries[e as usize].counter;
            if c == NO_COUNTER {
                continue;
            }
            let ctr = &mut self.counters[c as usize];
            for (r, x) in ctr.tres.iter_mut().enumerate() {
                *x += sign * Self::amount(total, ltype, r);
            }
            ctr.running += sign as i64;
        }
    }

    /// Counts a job that enters (`by` 1) or leaves (-1) the queue or the machine.
    pub fn count_submitted(&mut self, prof: u32, by: i64) {
        if prof == NO_PROFILE {
            return;
        }
        let (lo, hi) = self.profiles[prof as usize];
        for e in lo..hi {
            let c = self.entries[e as usize].counter;
            if c != NO_COUNTER {
                self.counters[c as usize].submitted += by;
            }
        }
    }

    /// The first limit that holds a job now (running resources or jobs), if any.
    pub fn hold(&self, prof: u32, total: &V3, ltype: Option<u16>) -> Option<LimitBlock> {
        let nk = self.nkeys();
        for e in self.entries_of(prof) {
            if e.mask == 0 || e.counter == NO_COUNTER {
                continue;
            }
            let lim = &self.lims[e.lim as usize];
            let ctr = &self.counters[e.counter as usize];
            for r in [GPU, CPU, MEM].into_iter().chain(3..nk) {
                if e.mask & (1 << r) != 0 {
                    let ask = Self::amount(total, ltype, r);
                    if ask > 0.0 && ctr.tres[r] + ask > lim.tres[r] {
                        return Some(LimitBlock {
                            lim: e.lim,
                            item: r as u32,
                            holds: ctr.tres[r],
                            asks: ask,
                        });
                    }
                }
            }
            if e.mask & (1 << self.item_jobs()) != 0
                && ctr.running + 1 > lim.jobs.unwrap_or(i64::MAX)
            {
                return Some(LimitBlock {
                    lim: e.lim,
                    item: self.item_jobs() as u32,
                    holds: ctr.running as f64,
                    asks: 1.0,
                });
            }
        }
        None
    }

    /// A limit the job can never get past on its own: a per-job resource limit
    /// (Some((block, true)): rejected) or the wall limit (Some((block, false)): held).
    pub fn never(
        &self,
        prof: u32,
        total: &V3,
        ltype: Option<u16>,
        time_limit: Option<f64>,
    ) -> Option<(LimitBlock, bool)> {
        let (nk, wall) = (self.nkeys(), self.item_wall());
        for e in self.entries_of(prof) {
            let lim = &self.lims[e.lim as usize];
            if e.counter == NO_COUNTER {
                for r in 0..nk {
                    let ask = Self::amount(total, ltype, r);
                    if e.mask & (1 << r) != 0 && ask > lim.tres[r] {
                        return Some((
                            LimitBlock {
                                lim: e.lim,
                                item: r as u32,
                                holds: 0.0,
                                asks: ask,
                            },
                            true,
                        ));
                    }
                }
            }
            if e.mask & (1 << wall) != 0 {
                let (l, w) = (time_limit.unwrap_or(INF), lim.wall.unwrap_or(INF));
                if l > w {
                    return Some((
                        LimitBlock {
                            lim: e.lim,
                            item: wall as u32,
                            holds: 0.0,
                            asks: l,
                        },
                        false,
                    ));
                }
            }
        }
        None
    }

    /// A queued + running count the job would exceed by entering the queue.
    pub fn over_submit(&self, prof: u32) -> Option<LimitBlock> {
        let item = self.item_submit();
        for e in self.entries_of(prof) {
            if e.mask & (1 << item) != 0 && e.counter != NO_COUNTER {
                let n = self.counters[e.counter as usize].submitted;
                if n + 1 > self.lims[e.lim as usize].submit.unwrap_or(i64::MAX) {
                    return Some(LimitBlock {
                        lim: e.lim,
                        item: item as u32,
                        holds: n as f64,
                        asks: 1.0,
                    });
                }
            }
        }
        None
    }

    fn owner_words(&self, lim: &Lim) -> String {
        match lim.scope {
            Scope::Qos => format!("QoS {}", lim.owner),
            Scope::Partition => format!("partition {}", lim.owner),
            Scope::Account => format!("account {}", lim.owner),
            Scope::User => match lim.owner.rsplit_once('/') {
                Some((a, u)) => format!("user {u} in account {a}"),
                None => format!("user {}", lim.owner),
            },
        }
    }

    fn key_name(&self, r: usize) -> String {
        match r {
            CPU => "cpu".into(),
            MEM => "mem".into(),
            GPU => "gpu".into(),
            _ => format!("gpu:{}", self.typed[r - 3]),
        }
    }

    /// The limit's name as the source's documentation calls it.
    fn limit_name(&self, lim: &Lim, item: usize) -> &'static str {
        let assoc = matches!(lim.scope, Scope::User | Scope::Account);
        if item == self.item_wall() {
            return "MaxWall";
        }
        let kind = if item < self.nkeys() {
            0
        } else if item == self.item_jobs() {
            1
        } else {
            2
        };
        match (lim.per, kind) {
            (Per::Group, 0) => "GrpTRES",
            (Per::Group, 1) if lim.scope == Scope::User => "MaxJobs",
            (Per::Group, 1) => "GrpJobs",
            (Per::Group, _) if lim.scope == Scope::User => "MaxSubmitJobs",
            (Per::Group, _) => "GrpSubmitJobs",
            (Per::User, 0) => "MaxTRESPerUser",
            (Per::User, 1) => "MaxJobsPerUser",
            (Per::User, _) => "MaxSubmitJobsPerUser",
            (Per::Account, 0) => "MaxTRESPerAccount",
            (Per::Account, 1) => "MaxJobsPerAccount",
            (Per::Account, _) => "MaxSubmitJobsPerAccount",
            (Per::Job, _) if assoc => "MaxTRES",
            (Per::Job, _) => "MaxTRESPerJob",
        }
    }

    /// The binding limit in short words: "QoS high GrpTRES gpu".
    pub fn binding(&self, b: &LimitBlock) -> String {
        let lim = &self.lims[b.lim as usize];
        let item = b.item as usize;
        let mut s = format!("{} {}", self.owner_words(lim), self.limit_name(lim, item));
        if item < self.nkeys() {
            s.push(' ');
            s.push_str(&self.key_name(item));
        }
        s
    }

    /// The reason in words, for a job of `user` in `account`.
    pub fn words(&self, b: &LimitBlock, user: &str, account: &str) -> String {
        let lim = &self.lims[b.lim as usize];
        let item = b.item as usize;
        let (owner, name) = (self.owner_words(lim), self.limit_name(lim, item));
        let who = match lim.per {
            Per::User => format!("user {user}"),
            Per::Account => format!("account {account}"),
            _ => "group".into(),
        };
        if item == self.item_wall() {
            // Exact seconds, as in admission.rs: the human format's truncation could
            // make a limit read equal to the MaxWall it is over.
            return format!(
                "held: time limit {}s over {owner}'s MaxWall of {}s",
                fmt_amount(b.asks),
                fmt_amount(lim.wall.unwrap_or(INF))
            );
        }
        if item == self.item_submit() {
            let n = lim.submit.unwrap_or(0);
            return format!(
                "rejected: {who} has {} jobs queued or running, {owner}'s {name} is {n}",
                fmt_amount(b.holds)
            );
        }
        if item == self.item_jobs() {
            let n = lim.jobs.unwrap_or(0);
            return match lim.per {
                Per::Group => format!(
                    "held: {owner}'s {name}={n} (group runs {})",
                    fmt_amount(b.holds)
                ),
                _ => format!(
                    "held: {who} runs {} jobs, {owner}'s {name} is {n}",
                    fmt_amount(b.holds)
                ),
            };
        }
        let key = self.key_name(item);
        let max = fmt_amount(lim.tres[item]);
        match lim.per {
            Per::Job => {
                let unit = match item {
                    CPU => "CPUs".to_string(),
                    MEM => "MiB of memory".to_string(),
                    GPU => "GPUs".to_string(),
                    _ => format!("{key} GPUs"),
                };
                format!(
                    "rejected: asks {} {unit} over {owner}'s {name} of {max}",
                    fmt_amount(b.asks)
                )
            }
            Per::Group => format!(
                "held: {owner}'s {name} {key}={max} (group holds {}, asks {})",
                fmt_amount(b.holds),
                fmt_amount(b.asks)
            ),
            _ => format!(
                "held: {who} holds {} of {owner}'s {name} {key}={max} (asks {})",
                fmt_amount(b.holds),
                fmt_amount(b.asks)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{WQuota, WRes};

    fn gpu(n: f64) -> Option<WQuota<'static>> {
        Some(WQuota {
            res: WRes {
                v: [None, None, Some(n)],
                typed: None,
                bad: None,
            },
            typed: Vec::new(),
            other: Vec::new(),
        })
    }

    fn lim(
        scope: &'static str,
        owner: &'static str,
        per: &'static str,
        tres: Option<WQuota<'static>>,
        rank: i64,
    ) -> WLimit<'static> {
        WLimit {
            scope,
            owner,
            per,
            tres,
            jobs: None,
            submit: None,
            wall: None,
            rank,
        }
    }

    /// The checked items of each limit in the profile of a job of QoS normal,
    /// partition p (whose QoS is pq), account leaf under root, user u.
    fn masks(ws: &[WLimit<'static>]) -> Vec<(u32, u64)> {
        let mut l = Limits::build(ws).expect("valid");
        let accounts = [(0, "leaf"), (1, "root")];
        let who = Who {
            qos: "normal",
            part: Some("p"),
            part_qos: Some("pq"),
            accounts: &accounts,
            user: "u",
        };
        let (mut cache, mut cix) = (FxMap::default(), FxMap::default());
        let p = l.profile(("normal", Some("p"), 0, "u"), &who, &mut cache, &mut cix);
        l.entries_of(p).iter().map(|e| (e.lim, e.mask)).collect()
    }

    const G: u64 = 1 << GPU;

    #[test]
    fn a_qos_limit_overrides_account_limits_on_the_same_resource_and_per() {
        let m = masks(&[
            lim("qos", "normal", "group", gpu(16.0), 1),
            lim("account", "leaf", "group", gpu(8.0), 3),
        ]);
        assert_eq!(
            m,
            vec![(0, G), (1, 0)],
            "the account's still counts the job, unchecked"
        );
        // A per-user QoS limit is another kind: the account group limit stays.
        let m = masks(&[
            lim("qos", "normal", "user", gpu(16.0), 1),
            lim("account", "leaf", "group", gpu(8.0), 3),
        ]);
        assert_eq!(m, vec![(0, G), (1, G)]);
    }

    #[test]
    fn every_account_up_the_tree_enforces_its_group_limit_but_per_job_limits_take_the_nearest() {
        let m = masks(&[
            lim("account", "leaf", "group", gpu(8.0), 3),
            lim("account", "root", "group", gpu(16.0), 4),
        ]);
        assert_eq!(m, vec![(0, G), (1, G)]);
        let m = masks(&[
            lim("account", "root", "job", gpu(16.0), 4),
            lim("user", "leaf/u", "job", gpu(4.0), 2),
        ]);
        assert_eq!(
            m,
            vec![(1, G)],
            "an overridden per-job limit counts nothing: left out"
        );
    }

    #[test]
    fn partition_and_job_qos_go_by_rank_and_unrelated_owners_do_not_match() {
        let m = masks(&[
            lim("partition", "p", "user", gpu(4.0), 0),
            lim("qos", "normal", "user", gpu(16.0), 1),
        ]);
        assert_eq!(m, vec![(0, G), (1, 0)]);
        let m = masks(&[
            lim("partition", "p", "user", gpu(4.0), 1),
            lim("qos", "pq", "user", gpu(16.0), 0),
        ]);
        assert_eq!(
            m,
            vec![(0, 0), (1, G)],
            "the partition's own QoS counts as the partition's"
        );
        let m = masks(&[
            lim("qos", "other", "group", gpu(4.0), 0),
            lim("user", "leaf/v", "group", gpu(4.0), 0),
            lim("account", "elsewhere", "group", gpu(1.0), 0),
        ]);
        assert!(m.is_empty());
    }

    #[test]
    fn counters_hold_and_free_and_a_typed_limit_counts_its_type_only() {
        let mut typed = gpu(8.0).expect("set");
        typed.res.v[GPU] = None;
        typed.typed.push(("h100", 8.0));
        let mut l = Limits::build(&[lim("qos", "normal", "group", Some(typed), 0)]).expect("valid");
        let accounts = [(0, "a")];
        let who = Who {
            qos: "normal",
            part: None,
            part_qos: None,
            accounts: &accounts,
            user: "u",
        };
        let p = l.profile(
            ("normal", None, 0, "u"),
            &who,
            &mut FxMap::default(),
            &mut FxMap::default(),
        );
        let h100 = Some(0u16);
        l.account(p, &[0.0, 0.0, 8.0], h100, 1.0);
        let b = l.hold(p, &[0.0, 0.0, 1.0], h100).expect("held");
        assert_eq!((b.holds, b.asks), (8.0, 1.0));
        assert_eq!(l.binding(&b), "QoS normal GrpTRES gpu:h100");
        assert!(
            l.hold(p, &[0.0, 0.0, 8.0], None).is_none(),
            "a plain gpu job is not counted against h100"
        );
        l.account(p, &[0.0, 0.0, 8.0], h100, -1.0);
        assert!(l.hold(p, &[0.0, 0.0, 8.0], h100).is_none());
    }

    #[test]
    fn unknown_scope_or_per_is_an_error_naming_the_limit() {
        let e = Limits::build(&[lim("cluster", "x", "group", None, 0)])
            .err()
            .expect("error");
        assert!(e.contains("unknown scope \"cluster\""), "{e}");
        let e = Limits::build(&[lim("qos", "x", "node", None, 0)])
            .err()
            .expect("error");
        assert!(e.contains("unknown per \"node\""), "{e}");
    }
}
