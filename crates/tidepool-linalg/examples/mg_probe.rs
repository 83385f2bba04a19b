use std::time::Instant;
use tidepool_linalg::*;

fn poisson(n: usize, liquid: impl Fn([usize; 3]) -> bool, air: impl Fn([usize; 3]) -> bool) -> Stencil7 {
    let mut a = Stencil7::zeros([n; 3]);
    let coord = |c: usize| [c % n, (c / n) % n, c / (n * n)];
    let mut floating = true;
    for c in 0..n * n * n {
        if !liquid(coord(c)) { continue; }
        for ax in 0..3 { for up in [true, false] { if let Some(g) = a.neighbour(c, ax, up) {
            if liquid(coord(g)) { a.diag[c] += 1.0; if up { a.plus[ax][c] = -1.0; } }
            else if air(coord(g)) { a.diag[c] += 2.0; floating = false; }
        } } }
    }
    if floating { a.floating = vec![(0..n * n * n).filter(|&c| a.diag[c] > 0.0).map(|c| c as u32).collect()]; }
    a
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("lcp") { lcp_probe(); return; }
    if std::env::args().nth(1).as_deref() == Some("lcpin") { rayon::ThreadPoolBuilder::new().build().unwrap().install(lcp_probe); return; }
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(128);
    let which = std::env::args().nth(2).unwrap_or("box".into());
    let a = match which.as_str() {
        "drop" => { let inside = move |[i, j, k]: [usize; 3]| { let d = [i, j, k].map(|v| v as f64 + 0.5 - 0.5 * n as f64); (d[0]*d[0]+d[1]*d[1]+d[2]*d[2]).sqrt() < 0.4 * n as f64 }; poisson(n, inside, move |c| !inside(c)) }
        "pool" => poisson(n, |c| c[1] < n / 2, |c| c[1] >= n / 2),
        _ => poisson(n, |_| true, |_| false),
    };
    let mut s = 7u64;
    let mut b: Vec<f64> = a.diag.iter().map(|&d| { s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); if d > 0.0 { (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5 } else { 0.0 } }).collect();
    a.project_nullspace(&mut b);
    for _ in 0..2 {
        let t = Instant::now();
        let mg = Multigrid::new(&a);
        let setup = t.elapsed().as_secs_f64();
        let mut x = vec![0.0; b.len()];
        let t = Instant::now();
        let info = pcg(&a, &mg, &b, &mut x, PcgParams { tolerance: 1e-6, max_iterations: 1000 });
        let solve = t.elapsed().as_secs_f64();
        println!("{which} {n}: setup {setup:.3} s, solve {solve:.3} s, {} it ({:.1} ms/it), rel {:.2e}", info.iterations, 1e3 * solve / info.iterations as f64, info.relative_residual);
    }
}

#[allow(dead_code)]
pub fn lcp_probe() {
    let n = 30;
    let a = poisson(n, |c| c[1] < n / 2, |c| c[1] >= n / 2);
    let (m, packing) = a.packed();
    let mut s = 3u64;
    let c: Vec<f64> = (0..m.n).map(|_| { s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (s >> 11) as f64 / (1u64 << 53) as f64 - 0.45 }).collect();
    let lower = vec![0.0; m.n];
    let mut v = Vec::new();
    let (norm, _) = largest_eigenvalue(&m, &mut v, 1e-3, 200);
    let params = MprgpParams { tolerance: 1e-6, max_iterations: 10000, gamma: 1.0, step_length: 1.8 / norm };
    for _ in 0..3 {
        let mut x = vec![0.0; m.n];
        let t = Instant::now();
        let info = mprgp(&m, &mut FreeSetMic0::new(&m), &c, &lower, &mut x, params);
        let e = t.elapsed().as_secs_f64();
        println!("{} unknowns: {:.2} ms, {:?}, {:.3} ms/it", packing.rows.len(), e * 1e3, info, e * 1e3 / info.iterations as f64);
        let mut x = vec![0.0; m.n];
        let t = Instant::now();
        let mut y = vec![0.0; m.n];
        for _ in 0..100 { m.apply(&x, &mut y); std::mem::swap(&mut x, &mut y); }
        println!("apply {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
        let mut mic = FreeSetMic0::new(&m);
        let t = Instant::now();
        for _ in 0..100 { mic.apply(&c, &mut y); }
        println!("mic apply {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
        let free: Vec<bool> = (0..m.n).map(|i| i % 7 != 0).collect();
        let t = Instant::now();
        for _ in 0..100 { mic.set_free(&free); }
        println!("mic set_free {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
    }
}
