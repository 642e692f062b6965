//! `murmur fluid validate`: every validation case on each storage, its table and its verdict.

use super::{models, opener};
use crate::fluid::cli::{StorageArgs, ValidateArgs};
use crate::fluid::validate::{self, Opener, Sizes};
use crate::fluid::{scene, BoundaryLaunch};
use anyhow::{bail, Result};
use murmur_common::lbm::{CollisionModel, StorageKind};

/// Whether a missed target is the named exemption: the Poiseuille case at FP16S, whose small
/// body force adds increments near one unit in the last place of the stored populations.
fn exempt(case: &str, storage: StorageKind) -> bool {
    storage == StorageKind::Fp16s && case.starts_with("poiseuille")
}

/// More validation cases from a layer above the fluid (the coupled flock's): `(heading,
/// cases)`, where `cases(open, quick, progress)` runs them on the backend `open` gives.
pub type MoreCases = (
    &'static str,
    fn(
        &mut Opener,
        bool,
        &mut dyn FnMut(&validate::CaseResult),
    ) -> Result<Vec<validate::CaseResult>, crate::fluid::FluidError>,
);

/// `murmur fluid validate`: the fluid's cases, then `more` (unless `--no-flocks`).
pub fn validate(a: &ValidateArgs, more: &[MoreCases]) -> Result<()> {
    let sizes = if a.quick { Sizes::QUICK } else { Sizes::FULL };
    let mut failed = 0;
    let mut total = 0;
    let mut exempted = Vec::new();
    for &storage in &a.storage {
        let st = StorageArgs {
            storage,
            layout: Some(a.layout),
            block: None,
            streaming: None,
            boundary_launch: BoundaryLaunch::default(),
            graph: false,
        };
        let mut open = opener(a.backend, Some(st));
        let what = open(&scene::taylor_green(8, 1, 0.0, 0.1, CollisionModel::Bgk)?)?.describe();
        println!(
            "validating on {what} ({} grids), storage {}, layout {}",
            if a.quick { "quick" } else { "full" },
            storage.name(),
            a.layout.describe()
        );
        let mut results =
            validate::run_all(&mut open as &mut Opener, &models(&a.models), sizes, |r| {
                eprintln!(
                    "  {} / {}: error {} (target {}) in {:.1} s",
                    r.case,
                    r.model.name(),
                    validate::shown(r.error),
                    r.target,
                    r.seconds
                )
            })?;
        if !a.no_ib {
            eprintln!("immersed-boundary cases (ACM-MRT):");
            results.extend(crate::fluid::ib::validate::run_all(
                &mut open as &mut Opener,
                a.quick,
                |r| {
                    eprintln!(
                        "  {}: error {} (target {}) in {:.1} s",
                        r.case,
                        validate::shown(r.error),
                        r.target,
                        r.seconds
                    )
                },
            )?);
        }
        if !a.no_flocks {
            for (heading, cases) in more {
                eprintln!("{heading}:");
                results.extend(cases(&mut open as &mut Opener, a.quick, &mut |r| {
                    eprintln!(
                        "  {}: error {} (target {}) in {:.1} s",
                        r.case,
                        validate::shown(r.error),
                        r.target,
                        r.seconds
                    )
                })?);
            }
        }
        print!("{}", validate::table(&results));
        for r in results.iter().filter(|r| !r.passed()) {
            if exempt(&r.case, storage) {
                exempted.push(format!(
                    "{} / {} at {}: error {} (target {})",
                    r.case,
                    r.model.name(),
                    storage.name(),
                    r.error,
                    r.target
                ));
            } else {
                failed += 1;
            }
        }
        total += results.len();
    }
    for e in &exempted {
        println!("exempt (named in the docs): {e}");
    }
    if failed > 0 {
        bail!("{failed} of {total} validation cases missed their targets");
    }
    println!(
        "all {} cases passed{}",
        total - exempted.len(),
        if exempted.is_empty() {
            String::new()
        } else {
            format!(" ({} exempt)", exempted.len())
        }
    );
    Ok(())
}
