//! Times `api::predict` on a msgpack snapshot file, outside Python:
//! `cargo run --release --example predict_bench -- SNAPSHOT POLICY [REPEAT]`.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: predict_bench SNAPSHOT.msgpack POLICY.msgpack [REPEAT]");
        std::process::exit(2);
    }
    let snap = std::fs::read(&args[1]).expect("snapshot file");
    let pol = std::fs::read(&args[2]).expect("policy file");
    let repeat: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let policy = scheduler_core::policy::Policy::from_msgpack(&pol).expect("policy");
    let mut best = f64::INFINITY;
    let mut size = 0;
    for _ in 0..repeat {
        let t0 = Instant::now();
        let out = scheduler_core::api::predict(&snap, &policy, 86400.0).expect("predict");
        best = best.min(t0.elapsed().as_secs_f64() * 1000.0);
        size = out.len();
        if let Ok(path) = std::env::var("PREDICT_OUT") {
            std::fs::write(path, &out).unwrap();
        }
    }
    println!("predict best of {repeat}: {best:.1} ms ({size} bytes out)");
}
