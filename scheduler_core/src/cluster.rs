//! Validated cluster state built from the lean wire model: nodes, teams, QoS
//! and jobs as indexed records. Every inconsistency is an error naming the object.

use std::collections::BTreeMap;

use crate::fxhash::{FxMap, FxSet};

use crate::features::Constraint;
use crate::limits::{Limits, Who, NO_PROFILE};
use crate::wire::{WJob, WQuota, WRes, WSnapshot, CPU, GPU, MEM, V3};

// Where the crate has always named it (crate::cluster::INF); defined in `amounts`.
pub use crate::amounts::INF;

pub struct Node<'a> {
    pub name: &'a str,
    pub capacity: V3,
    /// Allocation the snapshot reports but no listed job explains; never freed.
    pub foreign: V3,
    pub free: V3,
    pub gpu_type: Option<&'a str>,
    pub partitions: Vec<&'a str>,
    pub usable: bool,
    pub features: Vec<&'a str>,
    pub running: Vec<usize>,
    /// (time, job) of the last job that ended here: the "when job X ends" in reasons.
    pub last_end: Option<(f64, usize)>,
}

pub struct Team<'a> {
    pub name: &'a str,
    pub parent: Option<usize>,
    pub cohort: usize,
    pub has_guarantee: bool,
    /// Quota per dimension: cpu, memory, gpu, then one per typed GPU key
    /// (`Cluster::quota_gpu_types`) some team's quota names.
    pub guarantee: Vec<f64>,
    pub max: Vec<f64>,
    pub lendable: Vec<f64>,
    pub preemptible: bool,
    pub shares: f64,
    pub raw_usage: Option<f64>,
    pub per_job: Option<V3>,
    pub per_user: Option<V3>,
    pub max_wall: Option<f64>,
    pub max_submit: Option<i64>,
    /// Usage per quota dimension that no job of the snapshot holds (`unseen_usage`).
    pub unseen: Vec<f64>,
    pub declared: bool,
    /// Its quotas name every resource its jobs may use (`quota_exhaustive`), and the
    /// resources beyond the counted dimensions they name.
    pub exhaustive: bool,
    pub named_other: Vec<&'a str>,
    /// Whom its jobs may preempt, as the source states it (None: QoS and reclaim rules).
    pub stated: Option<Stated>,
}

/// Whom a team's jobs may preempt as its source states it (`TeamPreemption`).
#[derive(Clone, Copy, Debug)]
pub struct Stated {
    /// Its own jobs: never, of lower priority, or also of equal priority submitted later.
    pub within: Rule,
    /// Jobs of borrowing teams of its cohort: never, of lower priority, any.
    pub reclaim: Rule,
    /// While borrowing, other teams' jobs of priority below this (None: never).
    pub borrow_below: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Never,
    Lower,
    LowerOrNewerEqual,
    Any,
}

fn stated(what: What<'_>, p: &crate::wire::WTeamPreemption<'_>) -> Result<Stated, String> {
    let rule = |field: &str, v: Option<&str>, dflt: Rule, ok: &[Rule]| -> Result<Rule, String> {
        let r = match v {
            None => dflt,
            Some("never") => Rule::Never,
            Some("lower_priority") => Rule::Lower,
            Some("lower_or_newer_equal") => Rule::LowerOrNewerEqual,
            Some("any") => Rule::Any,
            Some(x) => return Err(format!("{what}: preemption.{field} {x:?} is not known")),
        };
        if ok.contains(&r) {
            Ok(r)
        } else {
            Err(format!(
                "{what}: preemption.{field} {:?} is not allowed",
                v.unwrap_or("")
            ))
        }
    };
    use Rule::*;
    let within = rule(
        "within",
        p.within,
        Lower,
        &[Never, Lower, LowerOrNewerEqual],
    )?;
    let reclaim = rule("reclaim", p.reclaim, Any, &[Never, Lower, Any])?;
    let borrow = rule("borrow_within", p.borrow_within, Never, &[Never, Lower])?;
    if p.borrow_max_priority.is_some_and(|x| !x.is_finite()) {
        return Err(format!(
            "{what}: preemption.borrow_max_priority is not a number"
        ));
    }
    Ok(Stated {
        within,
        reclaim,
        // Kueue's threshold: below the preemptor's priority, or at most the max.
        borrow_below: (borrow == Lower).then(|| p.borrow_max_priority.map_or(INF, |m| m + 1.0)),
    })
}

pub struct Qos<'a> {
    pub name: &'a str,
    pub priority: f64,
    pub preempts: Vec<usize>,
    pub exempt: bool,
    pub max_wall: Option<f64>,
    pub max_tres_user: Option<V3>,
    pub max_tres_job: Option<V3>,
    pub max_submit_user: Option<i64>,
    pub max_jobs_user: Option<i64>,
    /// Seconds a job of this QoS runs before it may be preempted.
    pub exempt_time: f64,
    /// Seconds a victim of this QoS is given to end after the preemption decision.
    pub grace: f64,
}

/// Where a job is in its life: not yet arrived, queued, running, or out of the schedule.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum JobState {
    Future,
    Pending,
    Running,
    Done,
    Rejected,
    Cancelled,
}

pub struct Job<'a> {
    pub id: &'a str,
    pub user: &'a str,
    pub team: usize,
    pub qos: usize,
    pub partition: Option<&'a str>,
    pub total: V3,
    pub per_node: V3,
    pub nodes_wanted: usize,
    pub gpu_type: Option<&'a str>,
    /// Quota dimension of the typed GPU request, if a team quota names its type.
    pub quota_dim: Option<usize>,
    pub limit: Option<f64>,
    /// Run time still to go (actual duration in simulation, limit in prediction).
    pub remaining: f64,
    pub submit: f64,
    pub eligible: f64,
    pub class_rank: i32,
    pub gang: Option<usize>,
    pub state: JobState,
    pub start: f64,
    pub first_start: Option<f64>,
    pub first_nodes: Vec<usize>,
    pub planned_end: f64,
    pub nodes: Vec<usize>,
    pub run_seq: u64,
    pub priority: f64,
    pub factors: [f64; 5],
    pub from_snapshot_running: bool,
    /// Jobs of one shape (per-node request, node count, GPU type, partition,
    /// time limit, constraint) place alike: a pass remembers a failed shape by this id.
    pub shape: usize,
    /// Index into `Cluster::constraint_nodes`: the nodes the job's constraint admits.
    pub constraint: Option<u32>,
    /// Index into `Cluster::resvs`: the advanced reservation the job runs in.
    pub resv: Option<u32>,
    pub exclusive: bool,
    /// The job's scoped-limit profile (`limits::NO_PROFILE`: none) and the
    /// typed GPU key of its request among the limits' keys.
    pub limit_profile: u32,
    pub limit_gpu_key: Option<u16>,
    /// Priority and weighted factors as the source reports them.
    pub source_priority: Option<f64>,
    pub source_factors: Option<[f64; 5]>,
    /// The place in its queue the source states (0 = next): when known it orders
    /// the queue before priority (`queue_cmp`).
    pub queue_position: Option<u32>,
    /// Whether `remaining` comes from a runtime estimate, and how it was made.
    pub estimated: bool,
    pub basis: Option<&'a str>,
    /// Run time the job was given at its first start (predict's `runtime`).
    pub first_run: f64,
    /// The source will not start it as things stand, in its words (`held`).
    pub held: Option<&'a str>,
    /// A resource it asks for beyond the counted ones that its team's exhaustive
    /// quota does not name: it never starts.
    pub unnamed: Option<&'a str>,
}

pub struct Cluster<'a> {
    pub nodes: Vec<Node<'a>>,
    pub teams: Vec<Team<'a>>,
    pub qos: Vec<Qos<'a>>,
    pub jobs: Vec<Job<'a>>,
    pub cohorts: Vec<&'a str>,
    pub gangs: Vec<&'a str>,
    pub gang_members: Vec<Vec<usize>>,
    pub part_factor: BTreeMap<&'a str, f64>,
    /// Per partition, whether each node is listed in it.
    pub part_nodes: BTreeMap<&'a str, Vec<bool>>,
    pub total: V3,
    /// Typed GPU keys named in team quotas; key k is quota dimension 3 + k.
    pub quota_gpu_types: Vec<&'a str>,
    /// The dimension usage and fairness are counted in: GPUs, or CPUs on a CPU-only cluster.
    pub unit: usize,
    pub n_shapes: usize,
    /// Per distinct job constraint, whether each node satisfies it.
    pub constraint_nodes: Vec<Vec<bool>>,
    pub constraint_text: Vec<&'a str>,
    /// Scoped limits (empty and inactive when the snapshot lists none).
    pub limits: Limits<'a>,
    /// Advanced reservations, and per node the windows `(start, end, reservation)`
    /// of those holding it (empty for most nodes; `has_resv` false when none).
    pub resvs: Vec<AdvResv<'a>>,
    pub node_resv: Vec<Vec<(f64, f64, u32)>>,
    pub has_resv: bool,
}

/// An advanced reservation (Slurm's `scontrol create reservation`): over
/// [start, end) its nodes take only jobs that request it, and those run
/// only on its nodes, from its start.
pub struct AdvResv<'a> {
    pub name: &'a str,
    pub start: f64,
    pub end: f64,
    pub nodes: Vec<bool>,
}

impl AdvResv<'_> {
    /// The binding of a job it holds back, in short words.
    pub fn binding(&self) -> String {
        format!("advanced reservation {}", self.name)
    }
}

/// Names an object in an error message ("job \"7\""), formatted only when an
/// error is raised: building it eagerly cost a string per job of the snapshot.
#[derive(Clone, Copy)]
struct What<'x>(&'static str, &'x str);

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.0, self.1)
    }
}

fn quota_ok(what: What<'_>, r: &Option<WQuota<'_>>, field: &str) -> Result<(), String> {
    if let Some(q) = r {
        if let Some((k, x)) = q.res.bad {
            return Err(format!(
                "{what}: {field} {k} = {x} is negative or not a number"
            ));
        }
    }
    Ok(())
}

/// A quota as one vector over the quota dimensions, absent keys as `missing`;
/// plain `gpu` comes from the plain key only (typed keys are their own dimensions).
fn quota_vec(q: &WQuota<'_>, qtypes: &[&str], missing: f64) -> Vec<f64> {
    let mut v: Vec<f64> = (0..3).map(|d| q.res.v[d].unwrap_or(missing)).collect();
    v.extend(qtypes.iter().map(|t| {
        q.typed
            .iter()
            .find(|(k, _)| k == t)
            .map_or(missing, |x| x.1)
    }));
    v
}

fn quota_has(q: &WQuota<'_>, qtypes: &[&str], d: usize) -> bool {
    if d < 3 {
        q.res.v[d].is_some()
    } else {
        q.typed.iter().any(|(k, _)| *k == qtypes[d - 3])
    }
}

fn res_ok(what: What<'_>, r: &Option<WRes<'_>>, field: &str) -> Result<(), String> {
    if let Some(r) = r {
        if let Some((k, x)) = r.bad {
            return Err(format!(
                "{what}: {field} {k} = {x} is negative or not a number"
            ));
        }
    }
    Ok(())
}

pub fn class_rank(c: Option<&str>) -> i32 {
    match c {
        Some(s) if s.eq_ignore_ascii_case("guaranteed") => 3,
        Some(s) if s.eq_ignore_ascii_case("burstable") => 2,
        Some(s) if s.eq_ignore_ascii_case("besteffort") => 1,
        _ => 0,
    }
}

/// How `Cluster::build` treats jobs' times (its arguments of the same names).
#[derive(Clone, Copy)]
struct JobOptions {
    now: f64,
    horizon_end: f64,
    predict: bool,
    use_estimates: bool,
}

pub struct JobIn<'a, 'b> {
    pub w: &'b WJob<'a>,
    /// Arrives later (simulation) rather than being in the snapshot.
    pub arrival: bool,
}

impl<'a> Cluster<'a> {
    /// Builds and validates. `jobs` are snapshot jobs then arrivals; `now` is
    /// the snapshot time, `horizon_end` the end assumed for a running job with
    /// no time limit.
    pub fn build(
        snap: &WSnapshot<'a>,
        arrivals: &[WJob<'a>],
        now: f64,
        horizon_end: f64,
        predict: bool,
        use_estimates: bool,
    ) -> Result<Cluster<'a>, String> {
        let (nodes, node_ix) = Self::build_nodes(snap)?;
        let (part_factor, part_nodes) = Self::build_partitions(snap, &node_ix)?;
        let (teams, mut team_ix, cohorts, qtypes) = Self::build_teams(snap)?;
        let (qos, mut qos_ix) = Self::build_qos(snap)?;
        let mut c = Cluster {
            nodes,
            teams,
            qos,
            jobs: Vec::with_capacity(snap.jobs.len() + arrivals.len()),
            cohorts,
            gangs: Vec::new(),
            gang_members: Vec::new(),
            part_factor,
            part_nodes,
            total: [0.0; 3],
            quota_gpu_types: qtypes,
            unit: GPU,
            n_shapes: 0,
            constraint_nodes: Vec::new(),
            constraint_text: Vec::new(),
            limits: Limits::build(&snap.limits)?,
            resvs: Vec::new(),
            node_resv: Vec::new(),
            has_resv: false,
        };
        Self::build_resvs(&mut c, snap, &node_ix)?;
        let opts = JobOptions {
            now,
            horizon_end,
            predict,
            use_estimates,
        };
        Self::build_jobs(
            &mut c,
            snap,
            arrivals,
            &opts,
            &node_ix,
            &mut team_ix,
            &mut qos_ix,
        )?;
        Self::occupy_nodes(&mut c);
        Self::apply_limit_list(&mut c);
        Ok(c)
    }

    /// The snapshot's nodes, with each name's index.
    fn build_nodes(snap: &WSnapshot<'a>) -> Result<(Vec<Node<'a>>, FxMap<&'a str, usize>), String> {
        let mut node_ix: FxMap<&str, usize> = FxMap::default();
        let mut nodes = Vec::with_capacity(snap.nodes.len());
        for n in &snap.nodes {
            let what = What("node", n.name);
            res_ok(what, &n.capacity, "capacity")?;
            res_ok(what, &n.allocated, "allocated")?;
            if node_ix.insert(n.name, nodes.len()).is_some() {
                return Err(format!("{what} is listed twice"));
            }
            let cap = n.capacity.map(|r| r.amounts()).unwrap_or([0.0; 3]);
            let gtype = n.gpu_type.or(n.capacity.and_then(|r| r.typed.map(|t| t.0)));
            let usable = !matches!(
                n.state,
                Some("down") | Some("drain") | Some("drained") | Some("unknown") | Some("draining")
            );
            nodes.push(Node {
                name: n.name,
                capacity: cap,
                foreign: n.allocated.map(|r| r.amounts()).unwrap_or([0.0; 3]),
                free: cap,
                gpu_type: gtype,
                partitions: n.partitions.clone(),
                usable,
                features: n.features.clone(),
                running: Vec::new(),
                last_end: None,
            });
        }
        Ok((nodes, node_ix))
    }

    /// The snapshot's advanced reservations. One that names an unknown node is
    /// refused, as a partition that does is: its nodes are the whole point.
    fn build_resvs(
        c: &mut Cluster<'a>,
        snap: &WSnapshot<'a>,
        node_ix: &FxMap<&'a str, usize>,
    ) -> Result<(), String> {
        c.node_resv = vec![Vec::new(); c.nodes.len()];
        for r in &snap.reservations {
            let what = What("reservation", r.name);
            let end = r.end.unwrap_or(INF);
            if !r.start.is_finite() || end.is_nan() || end < r.start {
                return Err(format!("{what}: its window does not make sense"));
            }
            if c.resvs.iter().any(|x| x.name == r.name) {
                return Err(format!("{what} is listed twice"));
            }
            let k = c.resvs.len() as u32;
            let mut nodes = vec![false; c.nodes.len()];
            for nn in &r.nodes {
                match node_ix.get(nn) {
                    Some(&ni) => {
                        if !nodes[ni] {
                            nodes[ni] = true;
                            c.node_resv[ni].push((r.start, end, k));
                        }
                    }
                    None => return Err(format!("{what}: lists unknown node {nn:?}")),
                }
            }
            c.resvs.push(AdvResv {
                name: r.name,
                start: r.start,
                end,
                nodes,
            });
        }
        c.has_resv = !c.resvs.is_empty();
        Ok(())
    }

    /// Per partition, its priority job factor (over the largest) and whether each node is in it.
    fn build_partitions(
        snap: &WSnapshot<'a>,
        node_ix: &FxMap<&'a str, usize>,
    ) -> Result<(BTreeMap<&'a str, f64>, BTreeMap<&'a str, Vec<bool>>), String> {
        let nodes = &snap.nodes;
        let mut part_factor = BTreeMap::new();
        let mut part_nodes: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
        let maxpf = snap
            .partitions
            .iter()
            .map(|p| p.priority_job_factor)
            .max()
            .unwrap_or(0);
        for p in &snap.partitions {
            let f = if maxpf > 0 {
                p.priority_job_factor as f64 / maxpf as f64
            } else {
                0.0
            };
            part_factor.insert(p.name, f);
            let mut v = vec![false; nodes.len()];
            for nn in &p.nodes {
                match node_ix.get(nn) {
                    Some(&i) => v[i] = true,
                    None => {
                        return Err(format!("partition {:?}: lists unknown node {nn:?}", p.name))
                    }
                }
            }
            part_nodes.insert(p.name, v);
        }
        Ok((part_factor, part_nodes))
    }

    /// The declared teams with each name's index, the cohorts (the first is none) and the
    /// typed GPU keys their quotas name.
    fn build_teams(
        snap: &WSnapshot<'a>,
    ) -> Result<
        (
            Vec<Team<'a>>,
            BTreeMap<&'a str, usize>,
            Vec<&'a str>,
            Vec<&'a str>,
        ),
        String,
    > {
        // Teams, cohorts; a team cycle is an error naming the loop.
        let mut team_ix: BTreeMap<&str, usize> = BTreeMap::new();
        let mut cohorts: Vec<&str> = vec![""];
        let mut teams = Vec::with_capacity(snap.teams.len());
        let mut qtypes: Vec<&str> = Vec::new();
        for t in &snap.teams {
            for q in [&t.guarantee, &t.max, &t.lendable, &t.unseen_usage]
                .into_iter()
                .flatten()
            {
                for (k, _) in &q.typed {
                    if !qtypes.contains(k) {
                        qtypes.push(k);
                    }
                }
            }
        }
        qtypes.sort_unstable();
        let nd = 3 + qtypes.len();
        for t in &snap.teams {
            let what = What("team", t.name);
            for (f, r) in [
                ("guarantee", &t.guarantee),
                ("max", &t.max),
                ("lendable", &t.lendable),
                ("unseen_usage", &t.unseen_usage),
            ] {
                quota_ok(what, r, f)?;
            }
            for (f, r) in [
                ("per_job_limit", &t.per_job_limit),
                ("per_user_limit", &t.per_user_limit),
            ] {
                res_ok(what, r, f)?;
            }
            if !t.weight.is_finite() || t.weight < 0.0 {
                return Err(format!(
                    "{what}: weight {} is negative or not a number",
                    t.weight
                ));
            }
            if let Some(s) = t.shares {
                if !s.is_finite() || s < 0.0 {
                    return Err(format!("{what}: shares {s} is negative or not a number"));
                }
            }
            if team_ix.insert(t.name, teams.len()).is_some() {
                return Err(format!("{what} is listed twice"));
            }
            let cname = t.cohort.unwrap_or("");
            let cohort = match cohorts.iter().position(|c| *c == cname) {
                Some(i) => i,
                None => {
                    cohorts.push(cname);
                    cohorts.len() - 1
                }
            };
            let has_guarantee = t.guarantee.is_some();
            let (mut guarantee, mut max, mut lendable) =
                (vec![INF; nd], vec![INF; nd], vec![0.0; nd]);
            if let Some(mx) = &t.max {
                max = quota_vec(mx, &qtypes, INF);
            }
            if let Some(gr) = &t.guarantee {
                let gv = quota_vec(gr, &qtypes, 0.0);
                for d in 0..nd {
                    let tracked = quota_has(gr, &qtypes, d)
                        || t.max.as_ref().is_some_and(|x| quota_has(x, &qtypes, d));
                    if tracked {
                        guarantee[d] = gv[d];
                        lendable[d] = guarantee[d];
                    }
                }
                if let Some(ln) = &t.lendable {
                    let lv = quota_vec(ln, &qtypes, INF);
                    for d in 0..nd {
                        if guarantee[d].is_finite() {
                            lendable[d] = lv[d].min(guarantee[d]);
                        }
                    }
                }
            }
            teams.push(Team {
                name: t.name,
                parent: None,
                cohort,
                has_guarantee,
                guarantee,
                max,
                lendable,
                preemptible: t.preemptible,
                shares: t.shares.unwrap_or(t.weight),
                raw_usage: t.fairshare.as_ref().and_then(|f| f.raw_usage),
                per_job: t.per_job_limit.map(|r| r.limits(INF)),
                per_user: t.per_user_limit.map(|r| r.limits(INF)),
                max_wall: t.max_wall,
                max_submit: t.max_submit_jobs,
                unseen: t
                    .unseen_usage
                    .as_ref()
                    .map_or_else(|| vec![0.0; nd], |u| quota_vec(u, &qtypes, 0.0)),
                declared: true,
                exhaustive: t.quota_exhaustive,
                named_other: [&t.guarantee, &t.max]
                    .into_iter()
                    .flatten()
                    .flat_map(|q| q.other.iter().copied())
                    .collect(),
                stated: t.preemption.as_ref().map(|p| stated(what, p)).transpose()?,
            });
        }
        for (i, t) in snap.teams.iter().enumerate() {
            if let Some(p) = t.parent {
                match team_ix.get(p) {
                    Some(&pi) => teams[i].parent = Some(pi),
                    None => {
                        return Err(format!(
                            "team {:?}: parent {p:?} is not a known team",
                            t.name
                        ))
                    }
                }
            }
        }
        for start in 0..teams.len() {
            let mut seen = vec![start];
            let mut cur = teams[start].parent;
            while let Some(c) = cur {
                if c == start {
                    let path: Vec<&str> = seen
                        .iter()
                        .map(|&i| teams[i].name)
                        .chain([teams[start].name])
                        .collect();
                    return Err(format!(
                        "team {:?}: parent cycle {}",
                        teams[start].name,
                        path.join(" -> ")
                    ));
                }
                if seen.contains(&c) {
                    break;
                }
                seen.push(c);
                cur = teams[c].parent;
            }
        }
        Ok((teams, team_ix, cohorts, qtypes))
    }

    /// The declared QoS, with each name's index.
    fn build_qos(snap: &WSnapshot<'a>) -> Result<(Vec<Qos<'a>>, BTreeMap<&'a str, usize>), String> {
        let mut qos_ix: BTreeMap<&str, usize> = BTreeMap::new();
        let mut qos = Vec::new();
        let maxq = snap
            .qos
            .iter()
            .map(|q| q.priority)
            .max()
            .unwrap_or(0)
            .max(0);
        for q in &snap.qos {
            let what = What("qos", q.name);
            res_ok(what, &q.max_tres_per_user, "max_tres_per_user")?;
            res_ok(what, &q.max_tres_per_job, "max_tres_per_job")?;
            if qos_ix.insert(q.name, qos.len()).is_some() {
                return Err(format!("{what} is listed twice"));
            }
            qos.push(Qos {
                name: q.name,
                priority: if maxq > 0 {
                    q.priority.max(0) as f64 / maxq as f64
                } else {
                    0.0
                },
                preempts: Vec::new(),
                exempt: q.preempt_mode == Some("off"),
                max_wall: q.max_wall,
                max_tres_user: q.max_tres_per_user.map(|r| r.limits(INF)),
                max_tres_job: q.max_tres_per_job.map(|r| r.limits(INF)),
                max_submit_user: q.max_submit_jobs_per_user,
                max_jobs_user: q.max_jobs_per_user,
                exempt_time: q
                    .preempt_exempt_time
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .unwrap_or(0.0),
                grace: q
                    .grace_time
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .unwrap_or(0.0),
            });
        }
        for (i, q) in snap.qos.iter().enumerate() {
            for p in &q.preempts {
                match qos_ix.get(p) {
                    Some(&pi) => qos[i].preempts.push(pi),
                    None => return Err(format!("qos {:?}: preempts unknown qos {p:?}", q.name)),
                }
            }
        }
        Ok((qos, qos_ix))
    }

    /// The snapshot's running and pending jobs, then the arrivals, into `c.jobs`; a team or QoS
    /// a job names but the snapshot does not declare is added with no limits.
    fn build_jobs(
        c: &mut Cluster<'a>,
        snap: &WSnapshot<'a>,
        arrivals: &[WJob<'a>],
        opts: &JobOptions,
        node_ix: &FxMap<&'a str, usize>,
        team_ix: &mut BTreeMap<&'a str, usize>,
        qos_ix: &mut BTreeMap<&'a str, usize>,
    ) -> Result<(), String> {
        let JobOptions {
            now,
            horizon_end,
            predict,
            use_estimates,
        } = *opts;
        let nd = 3 + c.quota_gpu_types.len();
        let mut shapes: FxMap<
            (
                u64,
                u64,
                u64,
                usize,
                Option<&str>,
                Option<&str>,
                u64,
                Option<u32>,
                Option<u32>,
            ),
            usize,
        > = FxMap::default();
        let mut cons_ix: FxMap<&str, u32> = FxMap::default();
        let mut exclusive_need: FxMap<
            (
                (u64, u64, u64),
                Option<&str>,
                Option<&str>,
                Option<u32>,
                Option<u32>,
            ),
            V3,
        > = FxMap::default();
        let mut prof_cache = FxMap::default();
        let mut counter_ix = FxMap::default();
        let part_qos: BTreeMap<&str, &str> = snap
            .partitions
            .iter()
            .filter_map(|p| p.qos.map(|q| (p.name, q)))
            .collect();
        let mut accounts: Vec<(usize, &str)> = Vec::new();
        let mut ids: FxSet<&str> = FxSet::default();
        ids.reserve(snap.jobs.len() + arrivals.len());
        let inputs = snap
            .jobs
            .iter()
            .map(|w| JobIn { w, arrival: false })
            .chain(arrivals.iter().map(|w| JobIn { w, arrival: true }));
        for ji in inputs {
            let w = ji.w;
            let what = What("job", w.id);
            res_ok(what, &w.request.as_ref().map(|r| r.res), "request")?;
            if !ids.insert(w.id) {
                return Err(format!("{what} is listed twice"));
            }
            let running = !ji.arrival && matches!(w.state, "running");
            let pending = ji.arrival || w.state == "pending";
            if !running && !pending {
                continue; // finished, suspended, cancelled: holds nothing the core schedules
            }
            if w.nodes_requested < 1 || w.nodes_requested > 1_000_000 {
                return Err(format!(
                    "{what}: nodes_requested {} must be between 1 and 1000000",
                    w.nodes_requested
                ));
            }
            for (f, x) in [
                ("submit_time", Some(w.submit_time)),
                ("time_limit", w.time_limit),
                ("duration", w.duration),
                ("start_time", w.start_time),
            ] {
                if let Some(x) = x {
                    if !x.is_finite() || (f != "submit_time" && f != "start_time" && x < 0.0) {
                        return Err(format!("{what}: {f} {x} is negative or not a number"));
                    }
                }
            }
            if ji.arrival && w.duration.is_none() {
                return Err(format!("{what}: an arriving job needs a duration"));
            }
            let team = match team_ix.get(w.team) {
                Some(&t) => t,
                None => {
                    // A job of an account the source lists no quota for: a team with no limits.
                    team_ix.insert(w.team, c.teams.len());
                    c.teams.push(Team {
                        name: w.team,
                        parent: None,
                        cohort: 0,
                        has_guarantee: false,
                        guarantee: vec![INF; nd],
                        max: vec![INF; nd],
                        lendable: vec![0.0; nd],
                        preemptible: true,
                        shares: 1.0,
                        raw_usage: None,
                        per_job: None,
                        per_user: None,
                        max_wall: None,
                        max_submit: None,
                        unseen: vec![0.0; nd],
                        declared: false,
                        exhaustive: false,
                        named_other: Vec::new(),
                        stated: None,
                    });
                    c.teams.len() - 1
                }
            };
            let q = match qos_ix.get(w.qos) {
                Some(&q) => q,
                None => {
                    qos_ix.insert(w.qos, c.qos.len());
                    c.qos.push(Qos {
                        name: w.qos,
                        priority: 0.0,
                        preempts: Vec::new(),
                        exempt: false,
                        max_wall: None,
                        max_tres_user: None,
                        max_tres_job: None,
                        max_submit_user: None,
                        max_jobs_user: None,
                        exempt_time: 0.0,
                        grace: 0.0,
                    });
                    c.qos.len() - 1
                }
            };
            let total = w.request.as_ref().map_or([0.0; 3], |r| r.res.amounts());
            let nn = w.nodes_requested as usize;
            let mut per_node = [
                total[CPU] / nn as f64,
                total[MEM] / nn as f64,
                total[GPU] / nn as f64,
            ];
            let gtype = w.request.as_ref().and_then(|r| r.res.typed.map(|t| t.0));
            // A reservation the snapshot does not list (deleted, or not read) is
            // kept as one with no node and no time: the job can never start.
            let resv = w
                .reservation
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|name| match c.resvs.iter().position(|r| r.name == name) {
                    Some(k) => k as u32,
                    None => {
                        c.resvs.push(AdvResv {
                            name,
                            start: INF,
                            end: INF,
                            nodes: vec![false; c.nodes.len()],
                        });
                        c.has_resv = true;
                        (c.resvs.len() - 1) as u32
                    }
                });
            let cons = match w.constraint.map(str::trim).filter(|s| !s.is_empty()) {
                None => None,
                Some(text) => Some(match cons_ix.get(text) {
                    Some(&k) => k,
                    None => {
                        // A constraint that does not parse admits no node: the job can never fit.
                        let admits: Vec<bool> = match Constraint::parse(text) {
                            Ok(cn) => c.nodes.iter().map(|n| cn.admits(&n.features)).collect(),
                            Err(_) => vec![false; c.nodes.len()],
                        };
                        let k = c.constraint_nodes.len() as u32;
                        c.constraint_nodes.push(admits);
                        c.constraint_text.push(text);
                        cons_ix.insert(text, k);
                        k
                    }
                }),
            };
            if w.exclusive && !running {
                // Whole nodes: the job takes all of the smallest eligible node that
                // holds its request (on a partition of equal nodes, the whole node).
                let b = |x: f64| x.to_bits();
                let key = (
                    (b(per_node[CPU]), b(per_node[MEM]), b(per_node[GPU])),
                    gtype,
                    w.partition,
                    cons,
                    resv,
                );
                per_node = *exclusive_need.entry(key).or_insert_with(|| {
                    let mut best: Option<V3> = None;
                    for (n, node) in c.nodes.iter().enumerate() {
                        if c.static_eligible(n, gtype, w.partition, cons)
                            && resv.is_none_or(|r| c.resvs[r as usize].nodes[n])
                            && fits(&node.capacity, &per_node)
                        {
                            let k = (node.capacity[GPU], node.capacity[CPU], node.capacity[MEM]);
                            if best.is_none_or(|x| k < (x[GPU], x[CPU], x[MEM])) {
                                best = Some(node.capacity);
                            }
                        }
                    }
                    best.unwrap_or(per_node)
                });
            }
            let lprof = if c.limits.active {
                accounts.clear();
                let mut cur = Some(team);
                while let Some(t) = cur {
                    if accounts.iter().any(|a| a.0 == t) {
                        break;
                    }
                    accounts.push((t, c.teams[t].name));
                    cur = c.teams[t].parent;
                }
                let who = Who {
                    qos: w.qos,
                    part: w.partition,
                    part_qos: w.partition.and_then(|p| part_qos.get(p).copied()),
                    accounts: &accounts,
                    user: w.user,
                };
                let key = (
                    w.qos,
                    w.partition,
                    team,
                    if c.limits.user_matters { w.user } else { "" },
                );
                c.limits
                    .profile(key, &who, &mut prof_cache, &mut counter_ix)
            } else {
                NO_PROFILE
            };
            let ltype = gtype
                .and_then(|t| c.limits.typed.iter().position(|k| *k == t))
                .map(|k| k as u16);
            let est = if use_estimates {
                w.runtime_estimate.filter(|x| x.is_finite() && *x >= 0.0)
            } else {
                None
            };
            let gang = w.gang.map(|g| match c.gangs.iter().position(|x| *x == g) {
                Some(i) => i,
                None => {
                    c.gangs.push(g);
                    c.gang_members.push(Vec::new());
                    c.gangs.len() - 1
                }
            });
            let ji_ix = c.jobs.len();
            let mut job = Job {
                id: w.id,
                user: w.user,
                team,
                qos: q,
                partition: w.partition,
                total,
                per_node,
                nodes_wanted: nn,
                gpu_type: gtype,
                quota_dim: w
                    .request
                    .as_ref()
                    .and_then(|r| r.res.typed)
                    .and_then(|(t, _)| c.quota_gpu_types.iter().position(|k| *k == t))
                    .map(|k| 3 + k),
                limit: w.time_limit,
                remaining: w.duration.or(w.time_limit).unwrap_or(INF),
                submit: w.submit_time,
                // A job in a reservation starts no earlier than the reservation.
                eligible: w
                    .eligible_time
                    .unwrap_or(w.submit_time)
                    .max(w.submit_time)
                    .max(resv.map_or(f64::NEG_INFINITY, |r| c.resvs[r as usize].start)),
                class_rank: class_rank(w.qos_class),
                gang,
                state: if ji.arrival {
                    JobState::Future
                } else {
                    JobState::Pending
                },
                start: 0.0,
                first_start: None,
                first_nodes: Vec::new(),
                planned_end: INF,
                nodes: Vec::new(),
                run_seq: 0,
                priority: 0.0,
                factors: [0.0; 5],
                from_snapshot_running: running,
                shape: 0,
                constraint: cons,
                resv,
                exclusive: w.exclusive,
                limit_profile: lprof,
                limit_gpu_key: ltype,
                source_priority: w.priority.filter(|x| x.is_finite()),
                queue_position: w.queue_position.and_then(|p| u32::try_from(p).ok()),
                source_factors: w
                    .factors
                    .as_ref()
                    .map(|f| [f.age, f.fairshare, f.qos, f.job_size, f.partition]),
                estimated: est.is_some(),
                basis: w.runtime_basis,
                first_run: INF,
                held: w.held.filter(|h| !h.trim().is_empty()),
                unnamed: if c.teams[team].exhaustive {
                    w.request.as_ref().and_then(|r| {
                        r.other
                            .iter()
                            .copied()
                            .find(|k| !c.teams[team].named_other.contains(k))
                    })
                } else {
                    None
                },
            };
            if let Some(l) = job.limit {
                job.remaining = job.remaining.min(l);
            }
            if running {
                let start = w.start_time.unwrap_or(now);
                let mut end = match w.time_limit {
                    Some(l) => start + l,
                    None => horizon_end,
                };
                if predict {
                    end = end.max(now);
                    job.remaining = end - now;
                    if let Some(est) = est {
                        // Runs for its estimate; one already past it is expected to end
                        // soon: within 10% of the estimate (at least 5 s), never past its limit.
                        let e = start + est;
                        let e = if e > now {
                            e
                        } else {
                            (now + (0.1 * est).max(5.0)).min(end)
                        };
                        job.remaining = (e - now).max(0.0);
                    }
                } else {
                    job.remaining = match w.duration {
                        Some(d) => (start + d - now).max(0.0),
                        None => end - now,
                    };
                }
                if let Some(r) = resv {
                    // Killed when its reservation ends (slurm.conf ResvOverRun, default 0).
                    let stop = c.resvs[r as usize].end.max(now);
                    end = end.min(stop);
                    job.remaining = job.remaining.min(stop - now);
                }
                job.state = JobState::Running;
                job.start = start;
                job.first_start = Some(start);
                job.planned_end = end;
                for nn in &w.nodes {
                    match node_ix.get(nn) {
                        Some(&ni) => job.nodes.push(ni),
                        None => return Err(format!("{what}: runs on unknown node {nn:?}")),
                    }
                }
                if !job.nodes.is_empty() {
                    let k = job.nodes.len() as f64;
                    job.per_node = [total[CPU] / k, total[MEM] / k, total[GPU] / k];
                    if w.exclusive {
                        // Holds its nodes whole (the smallest of them, if they differ).
                        let mut whole = [INF; 3];
                        for &n in &job.nodes {
                            for d in 0..3 {
                                whole[d] = whole[d].min(c.nodes[n].capacity[d]);
                            }
                        }
                        for d in 0..3 {
                            job.per_node[d] = job.per_node[d].max(whole[d]);
                        }
                    }
                }
            } else if predict && !ji.arrival {
                job.remaining = w.time_limit.unwrap_or(INF);
                if let Some(est) = est {
                    job.remaining = job.remaining.min(est);
                }
            }
            if let Some(g) = gang {
                // Running members too: a running gang is preempted whole.
                c.gang_members[g].push(ji_ix);
            }
            let b = |x: f64| x.to_bits();
            let key = (
                b(job.per_node[CPU]),
                b(job.per_node[MEM]),
                b(job.per_node[GPU]),
                job.nodes_wanted,
                job.gpu_type,
                job.partition,
                b(job.limit.unwrap_or(INF)),
                job.constraint,
                job.resv,
            );
            let next = shapes.len();
            job.shape = *shapes.entry(key).or_insert(next);
            c.jobs.push(job);
        }
        // A gang of one job is that job: it starts, reserves and preempts as a job does
        // (a Kueue Workload is one job carrying its own gang name, and a gang never
        // preempted, so no Workload ever reclaimed its quota; tests/referee/kueue).
        for members in &c.gang_members {
            if let [only] = members[..] {
                c.jobs[only].gang = None;
            }
        }
        c.n_shapes = shapes.len();
        Ok(())
    }

    /// Node occupancy and the cluster's total capacity and counting unit.
    fn occupy_nodes(c: &mut Cluster<'a>) {
        // Node occupancy: listed jobs, plus whatever allocation they do not explain.
        for (j, job) in c.jobs.iter().enumerate() {
            if job.state == JobState::Running {
                for &n in &job.nodes {
                    c.nodes[n].running.push(j);
                    for d in 0..3 {
                        c.nodes[n].free[d] -= job.per_node[d];
                    }
                }
            }
        }
        for n in c.nodes.iter_mut() {
            for d in 0..3 {
                let listed = n.capacity[d] - n.free[d];
                n.foreign[d] = (n.foreign[d] - listed).max(0.0);
                n.free[d] -= n.foreign[d];
            }
            if !n.usable {
                n.free = [0.0; 3];
            }
            if n.usable {
                for d in 0..3 {
                    c.total[d] += n.capacity[d];
                }
            }
        }
        c.unit = if c.total[GPU] > 0.0 { GPU } else { CPU };
    }

    /// Scoped limits: the limit list (`Limits::build`, made with the cluster) overrides team maxima.
    fn apply_limit_list(c: &mut Cluster<'a>) {
        if c.limits.active {
            // The limit list is the authority: a team's max without a guarantee is
            // a group limit the list carries (with the QoS override rules), not a quota.
            for t in c.teams.iter_mut() {
                if !t.has_guarantee {
                    t.max.iter_mut().for_each(|x| *x = INF);
                }
            }
        }
    }

    /// Whether node `n` could ever run a job of this GPU type, partition and constraint.
    pub fn static_eligible(
        &self,
        n: usize,
        gtype: Option<&str>,
        part: Option<&str>,
        cons: Option<u32>,
    ) -> bool {
        let node = &self.nodes[n];
        if !node.usable {
            return false;
        }
        if let Some(t) = gtype {
            if node.gpu_type != Some(t) {
                return false;
            }
        }
        if let Some(p) = part {
            let listed = self.part_nodes.get(p).is_some_and(|v| v[n]);
            if !listed && !node.partitions.contains(&p) {
                return false;
            }
        }
        if let Some(k) = cons {
            if !self.constraint_nodes[k as usize][n] {
                return false;
            }
        }
        true
    }

    /// Whether node `n` belongs to partition `part` (every node, for a job without one).
    pub fn in_partition(&self, n: usize, part: Option<&str>) -> bool {
        part.is_none_or(|p| {
            self.part_nodes.get(p).is_some_and(|v| v[n]) || self.nodes[n].partitions.contains(&p)
        })
    }

    pub fn node_eligible(&self, j: usize, n: usize) -> bool {
        let job = &self.jobs[j];
        self.static_eligible(n, job.gpu_type, job.partition, job.constraint)
            && job.resv.is_none_or(|r| self.resvs[r as usize].nodes[n])
    }

    /// Whether job `j` may hold node `n` over [from, to) as far as advanced
    /// reservations go: None if it may, else the time until which it may not
    /// (INF: never). A node is closed to a job over the window of every
    /// reservation on it but the job's own (Slurm's job_test_resv: a job's
    /// nodes exclude those of reservations its run would overlap); a job in a
    /// reservation may not start once that has ended.
    pub fn resv_block(&self, j: usize, n: usize, from: f64, to: f64) -> Option<f64> {
        let own = self.jobs[j].resv;
        if let Some(r) = own {
            if from >= self.resvs[r as usize].end {
                return Some(INF);
            }
        }
        let mut until: Option<f64> = None;
        for &(s, e, r) in &self.node_resv[n] {
            if Some(r) != own && from < e && to > s {
                until = Some(until.map_or(e, |u| u.max(e)));
            }
        }
        until
    }

    /// `resv_block` as a yes or no, free when the snapshot has no reservation.
    #[inline]
    pub fn resv_open(&self, j: usize, n: usize, from: f64, to: f64) -> bool {
        !self.has_resv || self.resv_block(j, n, from, to).is_none()
    }
}

pub fn fits(free: &V3, need: &V3) -> bool {
    free[CPU] >= need[CPU] && free[MEM] >= need[MEM] && free[GPU] >= need[GPU]
}

pub fn dim_name(d: usize) -> &'static str {
    match d {
        CPU => "CPUs",
        MEM => "MiB of memory",
        _ => "GPUs",
    }
}

/// Natural order of job ids: "job-2" before "job-10"; a trailing number is
/// compared by value, then the prefix, then the whole text.
/// The queue's order: a place the source states first (a queue that reports
/// positions has ordered its jobs itself; equal places across queues are one
/// admission round, as a scheduler taking each queue's head per cycle does),
/// then priority, submit time and id.
pub fn queue_cmp(a: &Job, b: &Job) -> std::cmp::Ordering {
    a.queue_position
        .unwrap_or(u32::MAX)
        .cmp(&b.queue_position.unwrap_or(u32::MAX))
        .then(b.priority.total_cmp(&a.priority))
        .then(a.submit.total_cmp(&b.submit))
        .then_with(|| id_cmp(a.id, b.id))
}

pub fn id_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn split(s: &str) -> (&str, Option<u64>) {
        let cut = s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        (&s[..cut], s[cut..].parse::<u64>().ok())
    }
    let (pa, na) = split(a);
    let (pb, nb) = split(b);
    pa.cmp(pb).then(na.cmp(&nb)).then(a.cmp(b))
}
