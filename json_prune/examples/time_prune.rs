//! `cargo run --release --example time_prune -- FILE KEY...`: time pruning FILE's
//! "jobs" down to the KEYs (REPEAT times, default 6). The keys the collector keeps are
//! printed by `python -c "from collectors.slurm.json_decode import _KEEP; print(*_KEEP[38])"`.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a JSON file, then the keys to keep");
    let keys: Vec<String> = args.collect();
    let keep: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let data = std::fs::read(path).expect("readable");
    let n: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    for _ in 0..n {
        let t = std::time::Instant::now();
        let out = json_prune::prune(&data, b"jobs", &keep).expect("JSON");
        println!(
            "{:.3} s, {} -> {} bytes",
            t.elapsed().as_secs_f64(),
            data.len(),
            out.len()
        );
    }
}
