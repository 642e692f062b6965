//! `murmur fluid bench`: MLUPs/s per model, storage, streaming, layout and size on a periodic box.

use super::{models, opener};
use crate::fluid::bench::{bench_one, capacity_table, table, BenchResult};
use crate::fluid::cli::{BenchArgs, StorageArgs};
use crate::fluid::validate::Opener;
use crate::fluid::{scene, BoundaryLaunch};
use anyhow::{bail, Result};
use murmur_common::lbm::CollisionModel;

/// `murmur fluid bench`.
pub fn bench(a: &BenchArgs) -> Result<()> {
    if a.steps == 0 || a.sizes.iter().any(|&n| !(8..=2048).contains(&n)) {
        bail!("--steps must be > 0 and every size within 8..=2048");
    }
    let mut probe = opener(a.backend, None);
    let probe = probe(&scene::taylor_green(8, 1, 0.0, 0.1, CollisionModel::Bgk)?)?;
    let what = probe.describe();
    let memory = probe.device_memory();
    drop(probe);
    println!("fluid bench on {what}, periodic box");
    let mut results: Vec<BenchResult> = Vec::new();
    for (&storage, &streaming) in a
        .storage
        .iter()
        .flat_map(|s| a.streaming.iter().map(move |t| (s, t)))
    {
        for &layout in &a.layout {
            let stored = StorageArgs {
                storage,
                layout: Some(layout),
                block: Some(a.block),
                streaming: Some(streaming),
                boundary_launch: BoundaryLaunch::default(),
                graph: a.graph,
            };
            let mut open = opener(a.backend, Some(stored));
            for &n in &a.sizes {
                for (m, &les) in models(&a.models)
                    .into_iter()
                    .flat_map(|m| a.les.iter().map(move |l| (m, l)))
                {
                    let r = bench_one(&mut open as &mut Opener, m, les, n, a.steps)?;
                    eprintln!(
                        "  {} ({}) {} {} {} {n}^3: {:.0} MLUPs/s",
                        m.name(),
                        les.name(),
                        storage.name(),
                        streaming.name(),
                        layout.describe(),
                        r.mlups
                    );
                    results.push(r);
                }
            }
        }
    }
    print!("{}", table(&results));
    if results.iter().any(|r| !r.gpu_timed) {
        println!("(times are wall clock over the timed steps; the GPU uses CUDA events)");
    }
    print!("{}", capacity_table(&a.storage, &a.streaming, memory));
    Ok(())
}
