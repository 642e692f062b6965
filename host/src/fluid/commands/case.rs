//! `murmur fluid case`: one immersed-boundary validation case beside its reference values.

use super::opener;
use crate::fluid::cli::{CaseArgs, CaseName};
use crate::fluid::validate::Opener;
use anyhow::Result;

/// `murmur fluid case`.
pub fn case(a: &CaseArgs) -> Result<()> {
    let tuned = a.immersed.retraction.is_some() || a.immersed.passes.is_some();
    if tuned && matches!(a.case, CaseName::Channel180 | CaseName::Galilean) {
        anyhow::bail!("--retraction and --passes are for the DFG cases and couette");
    }
    if a.case == CaseName::Channel180 {
        return super::channel::channel_case(a);
    }
    use crate::fluid::ib::validate::{dfg, Couette, Dfg, DfgRun, Galilean};
    let tuning = a.immersed.tuning(a.boundary)?;
    if let Some(t) = a.tau {
        if !(t.is_finite() && t > 0.5 && t <= 2.0) {
            anyhow::bail!("--tau must be above 0.5 and at most 2, got {t}");
        }
    }
    if a.tau.is_some() && a.case != CaseName::Couette {
        anyhow::bail!("--tau is for the couette case (the DFG cases take theirs from --u-lb and --cells-per-d)");
    }
    let mut open = opener(a.backend, Some(a.storage));
    let dfg_case = match a.case {
        CaseName::Dfg2d1 => Some(Dfg::TwoD1),
        CaseName::Dfg2d2 => Some(Dfg::TwoD2),
        CaseName::Dfg3d1z => Some(Dfg::ThreeD1Z),
        _ => None,
    };
    if let Some(case) = dfg_case {
        let run = DfgRun {
            case,
            cells_per_d: a.cells_per_d,
            u_lb: a.u_lb,
            seconds: a
                .seconds
                .unwrap_or(if case == Dfg::TwoD2 { 12.0 } else { 30.0 }),
            model: a.model,
            offset: [0.0; 2],
            boundary: a.boundary,
            tuning,
        };
        let r = dfg(run, &mut open as &mut Opener)?;
        println!(
            "{}: D = {} cells, u_lb {}, {}, {}, {} steps in {:.1} s: C_D {:.4} (max {:.4}), C_L \
             {:.4} (max {:.4}), St {}, dp {:.4} Pa",
            case.name(),
            a.cells_per_d,
            a.u_lb,
            a.model.name(),
            match a.boundary {
                crate::fluid::scene::file::SolidBoundary::Immersed =>
                    format!("immersed ({})", tuning.describe()),
                b => b.name().to_string(),
            },
            r.steps,
            r.wall_s,
            r.cd,
            r.max_cd,
            r.cl,
            r.max_cl,
            r.strouhal.map_or("-".into(), |s| format!("{s:.4}")),
            r.dp
        );
        println!(
            "reference (Schaefer & Turek 1996): {}",
            match case {
                Dfg::TwoD1 => "C_D 5.57-5.59, C_L 0.0104-0.0110, dp 0.1172-0.1176 Pa",
                Dfg::TwoD2 => "C_D,max 3.22-3.24, C_L,max 0.99-1.01, St 0.295-0.305",
                Dfg::ThreeD1Z => "C_D 6.05-6.25, C_L 0.008-0.010",
            }
        );
        return Ok(());
    }
    match a.case {
        CaseName::Galilean => {
            let g = Galilean {
                cells_per_d: a.cells_per_d,
                u_lb: a.u_lb,
                width: 20.0,
                travel: a.travel,
                window: 10.0,
                model: a.model,
            };
            let r = g.run(&mut open as &mut Opener)?;
            println!(
                "Galilean check: D = {} cells, u_lb {}, {}, {} steps per frame in {:.1} s: moving \
                 C_D {:.4}, fixed C_D {:.4}, difference {:.2} %",
                a.cells_per_d,
                a.u_lb,
                a.model.name(),
                r.steps,
                r.wall_s,
                r.moving_cd,
                r.fixed_cd,
                100.0 * (r.moving_cd / r.fixed_cd - 1.0)
            );
        }
        _ => {
            let c = Couette::at_tau(a.tau.unwrap_or(1.0));
            let c = Couette {
                retraction: tuning.retraction_at(murmur_common::lbm::Units::tau(c.nu)),
                passes: tuning.passes(),
                ..c
            };
            let setup = c.setup(a.model)?;
            let t0 = std::time::Instant::now();
            let mut b = open(&setup)?;
            let (l2, radial) = c.run(b.as_mut())?;
            println!(
                "Couette: radii {} and {} cells, tau {}, k {}, retraction {}, {} steps in {:.1} s: \
                 L2 error {:.4}, max radial velocity {:.2e} of the surface speed",
                c.r1,
                c.r2,
                murmur_common::lbm::Units::tau(c.nu),
                c.passes,
                c.retraction,
                c.steps,
                t0.elapsed().as_secs_f64(),
                l2,
                radial
            );
        }
    }
    Ok(())
}
