//! Times `api::simulate` on a msgpack input file, outside Python:
//! `cargo run --release --example simulate_bench -- INPUT POLICY [REPEAT [OUT]]`;
//! OUT receives the answer's msgpack, to check that a change of the core leaves it
//! byte for byte the same.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: simulate_bench INPUT.msgpack POLICY.msgpack [REPEAT [OUT]]");
        std::process::exit(2);
    }
    let input = std::fs::read(&args[1]).expect("input file");
    let pol = std::fs::read(&args[2]).expect("policy file");
    let repeat: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let policy = scheduler_core::policy::Policy::from_msgpack(&pol).expect("policy");
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    for _ in 0..repeat {
        let t0 = Instant::now();
        out = scheduler_core::api::simulate(&input, &policy).expect("simulate");
        best = best.min(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let size = out.len();
    if let Some(path) = args.get(4) {
        std::fs::write(path, &out).expect("output file");
    }
    println!("simulate best of {repeat}: {best:.1} ms ({size} bytes out)");
}
