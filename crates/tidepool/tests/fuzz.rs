//! A mutation fuzzer over every scene in `scenes/`: lines deleted and duplicated, numbers
//! made extreme, values given the wrong type, files truncated. Each mutant is checked as
//! `tidepool check` does (parsed, validated, its world built) and, if accepted, advanced one
//! substep, in its own thread under a time limit: it must be refused with a message or run,
//! never panic, abort or hang. An input that fails here is kept in `tests/bad_input/`.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};
use tidepool::scene;
use tidepool::world::World;

/// Mutants per scene file (`TIDEPOOL_FUZZ_MUTANTS` asks for more, for a longer campaign;
/// `TIDEPOOL_FUZZ_SEED` for others).
const MUTANTS: usize = 6;
/// The longest one case may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Values a number is replaced with.
const EXTREMES: [&str; 12] = ["0", "-1", "1e308", "-1e308", "1e-308", "nan", "inf", "-inf", "4294967295", "18446744073709551615", "1e9", "0.5"];
/// Values of the wrong type.
const WRONG_TYPES: [&str; 5] = ["\"text\"", "[]", "{}", "true", "[1, \"a\", {}]"];

/// xorshift64*: a fixed sequence, so that a failure reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// Byte ranges of the numbers in `text` (not parts of names).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let in_number = |b: u8| b.is_ascii_digit() || b"._eE+-".contains(&b);
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = (bytes[i].is_ascii_digit() || bytes[i] == b'-') && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b'.'));
        if starts {
            let end = (i + 1..bytes.len()).find(|&j| !in_number(bytes[j])).unwrap_or(bytes.len());
            if bytes[i..end].iter().any(u8::is_ascii_digit) {
                found.push((i, end));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    found
}

/// One mutant of `text`, and what was done.
fn mutate(text: &str, rng: &mut Rng) -> (String, String) {
    let lines: Vec<&str> = text.lines().collect();
    let join = |lines: &[&str]| lines.join("\n") + "\n";
    match rng.below(5) {
        0 => {
            let n = rng.below(lines.len());
            let mut kept = lines.clone();
            kept.remove(n);
            (format!("line {} deleted", n + 1), join(&kept))
        }
        1 => {
            let n = rng.below(lines.len());
            let mut more = lines.clone();
            more.insert(n, lines[n]);
            (format!("line {} duplicated", n + 1), join(&more))
        }
        kind @ (2 | 3) => {
            let spots = numbers(text);
            if spots.is_empty() {
                return ("unchanged".into(), text.to_string());
            }
            let (start, end) = spots[rng.below(spots.len())];
            let value = if kind == 2 { EXTREMES[rng.below(EXTREMES.len())] } else { WRONG_TYPES[rng.below(WRONG_TYPES.len())] };
            (format!("`{}` at byte {start} made `{value}`", &text[start..end]), format!("{}{value}{}", &text[..start], &text[end..]))
        }
        _ => {
            let mut at = rng.below(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            (format!("truncated at byte {at}"), text[..at].to_string())
        }
    }
}

/// Checks a mutant, and runs one substep of it if it is accepted: `Ok` whatever the outcome
/// of a run that ends cleanly (refused, stopped as unstable, or stepped).
fn check_and_step(text: String) -> Result<(), String> {
    let scene = match scene::parse_any(&text, "mutant.toml", "mutant", None, &common::scenes_dir()) {
        Ok(scene) => scene,
        Err(e) => return if e.to_string().trim().is_empty() { Err("an empty error message".into()) } else { Ok(()) },
    };
    let mut world = match World::of(&scene) {
        Ok(world) => world,
        Err(_) => return Ok(()),
    };
    let dt = world.fixed_dt().unwrap_or_else(|| world.cfl_dt().min(1.0 / world.settings.fps));
    let _ = tidepool::pipeline::step(&mut world, dt);
    Ok(())
}

#[test]
fn mutated_scenes_are_refused_or_run_and_never_crash_or_hang() {
    let mut scenes: Vec<_> =
        std::fs::read_dir(common::scenes_dir()).expect("scenes/").map(|e| e.expect("entry").path()).filter(|p| p.extension().is_some_and(|e| e == "toml")).collect();
    scenes.sort();
    let env = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (mutants, seed) = (env("TIDEPOOL_FUZZ_MUTANTS", MUTANTS as u64) as usize, env("TIDEPOOL_FUZZ_SEED", 0x9e37_79b9_7f4a_7c15));
    let start = Instant::now();
    let mut failures = Vec::new();
    let mut cases = 0;
    for (s, path) in scenes.iter().enumerate() {
        let text = common::example_text(path);
        let mut rng = Rng(seed ^ (s as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
        for _ in 0..mutants {
            let (what, mutant) = mutate(&text, &mut rng);
            cases += 1;
            let (send, receive) = mpsc::channel();
            std::thread::spawn(move || {
                let outcome = std::panic::catch_unwind(|| check_and_step(mutant)).unwrap_or_else(|_| Err("panicked".into()));
                let _ = send.send(outcome);
            });
            match receive.recv_timeout(LIMIT) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{} ({what}): {e}", path.display())),
                Err(_) => failures.push(format!("{} ({what}): still running after {LIMIT:?}", path.display())),
            }
        }
    }
    eprintln!("{cases} mutants in {:.1} s", start.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} of {cases} mutants failed:\n{}", failures.len(), failures.join("\n"));
}
