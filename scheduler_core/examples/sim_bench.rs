//! Times `api::simulate` (the entry point behind Python's `scheduler_core.simulate`)
//! on msgpack files written once from Python, and prints checksums of the result so
//! that a speed-up can be shown not to change the schedule (issue #17):
//!
//! `cargo run --release --example sim_bench -- INPUT.msgpack POLICY.msgpack [REPEAT]`
//!
//! INPUT is `{"jobs": [SimJob…], "cluster": Snapshot}` as `scheduler_core.simulate`
//! encodes it; POLICY is `encode_policy(Policy)`. `starts` hashes every job's
//! (id, first start); `output` hashes the whole encoded SimResult (events with nodes,
//! usage, metrics).

use serde::de::IgnoredAny;
use std::time::Instant;

/// FNV-1a, 64 bit: stable across runs and builds, unlike a seeded hasher.
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

type JobRow = (String, String, f64, Option<f64>, Option<f64>, String);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: sim_bench INPUT.msgpack POLICY.msgpack [REPEAT]");
        std::process::exit(2);
    }
    let input = std::fs::read(&args[1]).expect("input file");
    let pol = std::fs::read(&args[2]).expect("policy file");
    let repeat: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let policy = scheduler_core::policy::Policy::from_msgpack(&pol).expect("policy");
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        out = scheduler_core::api::simulate(&input, &policy).expect("simulate");
        best = best.min(t0.elapsed().as_secs_f64());
    }
    let (_, _, _, _, _, jobs): (
        IgnoredAny,
        IgnoredAny,
        IgnoredAny,
        IgnoredAny,
        IgnoredAny,
        Vec<JobRow>,
    ) = rmp_serde::from_slice(&out).expect("a SimResult");
    let mut starts = 0xcbf2_9ce4_8422_2325u64;
    let mut started = 0;
    let mut wait = 0.0;
    for (id, _, submit, start, _, _) in &jobs {
        fnv(&mut starts, id.as_bytes());
        match start {
            Some(s) => {
                fnv(&mut starts, &s.to_bits().to_le_bytes());
                started += 1;
                wait += s - submit;
            }
            None => fnv(&mut starts, b"-"),
        }
    }
    let mut whole = 0xcbf2_9ce4_8422_2325u64;
    fnv(&mut whole, &out);
    println!(
        "{}: {:.3} s (best of {}), {} jobs, {} started, mean wait {:.0} s, starts {:016x}, output {:016x}",
        args[1].rsplit('/').next().unwrap_or(&args[1]),
        best,
        repeat.max(1),
        jobs.len(),
        started,
        if started > 0 { wait / started as f64 } else { 0.0 },
        starts,
        whole
    );
}
