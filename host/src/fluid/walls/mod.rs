//! Fixed solids with interpolated bounce-back (`boundary = "interpolated-bounce-back"` in a
//! scene's solid): every fluid node inside or on the solid's exact surface ([`cut`]) becomes a
//! cut solid node, and every link from a fluid node to one of them a [`CutLink`] with the
//! wall's distance along it. The math and the stage are `murmur_common::lbm::links`; both
//! backends fill the links before each step and record each solid's force by momentum
//! exchange, after the immersed solids' rows.

pub mod cut;
pub mod mesh;

use self::cut::{Implicit, Placed, Surface};
use crate::fluid::forces::ForceSample;
use crate::fluid::ib::{Primitive, Solid};
use murmur_common::lbm::abi::FORCE_RECORD;
use murmur_common::lbm::boundary::{CUT_SOLID, FLUID, KIND_MASK};
use murmur_common::lbm::d3q27::{velocity, REST};
use murmur_common::lbm::ib::solid::MAX_SOLIDS;
use murmur_common::lbm::ib::stages::record_value;
use murmur_common::lbm::links::CutLink;
use murmur_common::lbm::{Lattice, Q};
use std::collections::HashMap;

/// The fixed solids of a setup with interpolated bounce-back and their cut links.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Walls {
    /// The solids, in the order of their force rows (after the immersed solids' rows).
    pub solids: Vec<Solid>,
    /// Every cut link, by solid, then fluid node, then direction.
    pub links: Vec<CutLink>,
    /// Links with `q < 1/2` whose second node is not fluid: plain bounce-back.
    pub bounced: usize,
    /// Links of a mesh no triangle crossed (round-off at an edge): halfway.
    pub missed: usize,
}

impl Walls {
    /// Whether there is no such solid.
    pub fn is_empty(&self) -> bool {
        self.solids.is_empty()
    }

    /// One line per solid for the scene's opening lines: its cut links.
    pub fn info(&self) -> Vec<String> {
        self.solids
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let links = self.links.iter().filter(|l| l.solid() == k as u32).count();
                format!(
                    "solid {}: interpolated bounce-back, {links} cut links",
                    s.name
                )
            })
            .collect()
    }

    /// What a user should know: links that fell back to plain bounce-back or halfway.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.bounced > 0 {
            w.push(format!(
                "interpolated bounce-back: {} of {} cut links lack a second fluid node (a gap \
                 under two cells) and bounce back plainly",
                self.bounced,
                self.links.len()
            ));
        }
        if self.missed > 0 {
            w.push(format!(
                "interpolated bounce-back: {} cut links of a mesh met no triangle (round-off at \
                 an edge) and take the halfway wall",
                self.missed
            ));
        }
        w
    }

    /// Words of one step's force record: [`FORCE_RECORD`] per solid.
    pub fn record_len(&self) -> usize {
        FORCE_RECORD * self.solids.len()
    }

    /// The force rows of step `step` from its fixed-point record (lattice units: the force on
    /// each solid and its torque about the centre), the solids numbered after `first`
    /// (the immersed solids' count).
    pub fn rows(&self, first: usize, step: u64, record: &[u64]) -> Vec<ForceSample> {
        (0..self.solids.len())
            .map(|k| {
                let r = &record[k * FORCE_RECORD..(k + 1) * FORCE_RECORD];
                ForceSample {
                    step,
                    solid: first + k,
                    force: [0, 1, 2].map(|a| record_value(r[a])),
                    torque: [0, 1, 2].map(|a| record_value(r[3 + a])),
                }
            })
            .collect()
    }

    /// Voxelises `solids` into `flags` (the setup's cell bytes on `lattice`, `periodic` its
    /// periodic axes): their fluid nodes inside or on the surface become cut solid nodes (a
    /// node inside two solids belongs to the first), then lists every cut link. Errors name no
    /// solid (the caller adds which).
    pub fn build(
        solids: Vec<Solid>,
        lattice: Lattice,
        periodic: [bool; 3],
        flags: &mut [u8],
    ) -> Result<Walls, (usize, String)> {
        if solids.len() > MAX_SOLIDS {
            return Err((0, format!("at most {MAX_SOLIDS} solids")));
        }
        let dims = [lattice.nx, lattice.ny, lattice.nz].map(|d| d as i64);
        let mut owner: HashMap<u32, u8> = HashMap::new();
        let mut surfaces = Vec::new();
        let mut boxes = Vec::new();
        for (k, solid) in solids.iter().enumerate() {
            let surface = Surface::of(solid).ok_or_else(|| {
                (
                    k,
                    "interpolated bounce-back needs the solid's exact surface (a primitive or a \
                     mesh file)"
                        .to_string(),
                )
            })?;
            check_closed(solid, &surface, dims, periodic).map_err(|e| (k, e))?;
            let (lo, hi) = node_box(&surface, dims, periodic).map_err(|e| (k, e))?;
            if lo.iter().zip(&hi).any(|(l, h)| l > h) {
                boxes.push((lo, hi));
                surfaces.push(surface);
                continue;
            }
            let inside = surface.inside_box(lo, hi);
            let mut i = 0;
            for z in lo[2]..=hi[2] {
                for y in lo[1]..=hi[1] {
                    for x in lo[0]..=hi[0] {
                        if inside[i] {
                            let cell = lattice.index(x as u32, y as u32, z as u32);
                            if flags[cell] & KIND_MASK == FLUID {
                                flags[cell] = CUT_SOLID;
                                owner.insert(cell as u32, k as u8);
                            }
                        }
                        i += 1;
                    }
                }
            }
            boxes.push((lo, hi));
            surfaces.push(surface);
        }
        let mut walls = Walls {
            solids,
            ..Walls::default()
        };
        for (k, (surface, (lo, hi))) in surfaces.iter().zip(&boxes).enumerate() {
            walls.add_links(k, surface, *lo, *hi, lattice, flags, &owner);
        }
        Ok(walls)
    }

    /// The links of solid `k` from the fluid nodes around its nodes `lo..=hi`.
    #[allow(clippy::too_many_arguments)]
    fn add_links(
        &mut self,
        k: usize,
        surface: &Surface,
        lo: [i64; 3],
        hi: [i64; 3],
        lattice: Lattice,
        flags: &[u8],
        owner: &HashMap<u32, u8>,
    ) {
        let dims = [lattice.nx, lattice.ny, lattice.nz].map(|d| d as i64);
        let center = self.solids[k].center;
        // The box one node wider, inside the lattice (periodic neighbours wrap below).
        let lo = [0, 1, 2].map(|a| (lo[a] - 1).max(0));
        let hi = [0, 1, 2].map(|a| (hi[a] + 1).min(dims[a] - 1));
        let wrap = |v: i64, a: usize| v.rem_euclid(dims[a]);
        let index = |p: [i64; 3]| {
            lattice.index(
                wrap(p[0], 0) as u32,
                wrap(p[1], 1) as u32,
                wrap(p[2], 2) as u32,
            )
        };
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for x in lo[0]..=hi[0] {
                    let cell = lattice.index(x as u32, y as u32, z as u32);
                    if flags[cell] & KIND_MASK != FLUID {
                        continue;
                    }
                    for q in 0..Q {
                        if q == REST {
                            continue;
                        }
                        let c = velocity(q).map(|v| v as i64);
                        let s = [x - c[0], y - c[1], z - c[2]];
                        let s_cell = index(s);
                        if owner.get(&(s_cell as u32)) != Some(&(k as u8)) {
                            continue;
                        }
                        let a = [x as f64, y as f64, z as f64];
                        let b = s.map(|v| v as f64);
                        let t = match surface.crossing(a, b) {
                            Some(t) => t,
                            None => {
                                self.missed += 1;
                                0.5
                            }
                        };
                        let second =
                            flags[index([x + c[0], y + c[1], z + c[2]])] & KIND_MASK == FLUID;
                        if t < 0.5 && !second {
                            self.bounced += 1;
                        }
                        let wall = [0, 1, 2].map(|i| a[i] - t * c[i] as f64);
                        let arm = [0, 1, 2].map(|i| (wall[i] - center[i]) as f32);
                        self.links.push(CutLink::new(
                            cell as u32,
                            q,
                            t as f32,
                            second,
                            k as u32,
                            arm,
                        ));
                    }
                }
            }
        }
    }
}

/// The nodes `lo..=hi` a surface can hold: its bounds, in the lattice (a tube's endless axis:
/// every node). A solid must stay a node clear of periodic faces, whose nodes would wrap.
fn node_box(
    surface: &Surface,
    dims: [i64; 3],
    periodic: [bool; 3],
) -> Result<([i64; 3], [i64; 3]), String> {
    let b = surface.bounds();
    let mut lo = [0i64; 3];
    let mut hi = [0i64; 3];
    for a in 0..3 {
        match b[a] {
            None => hi[a] = dims[a] - 1,
            Some((l, h)) => {
                if periodic[a] && (l < 1.0 || h > (dims[a] - 2) as f64) {
                    return Err(format!(
                        "it reaches across the periodic faces along {}: interpolated \
                         bounce-back needs it a cell clear of them",
                        ["x", "y", "z"][a]
                    ));
                }
                lo[a] = (l.ceil() as i64).max(0);
                hi[a] = (h.floor() as i64).min(dims[a] - 1);
            }
        }
    }
    Ok((lo, hi))
}

/// Refuses open surfaces: an uncapped cylinder unless it spans the lattice along its axis (an
/// axis of the lattice), where only its middle is ever seen.
fn check_closed(
    solid: &Solid,
    surface: &Surface,
    dims: [i64; 3],
    periodic: [bool; 3],
) -> Result<(), String> {
    let Some(Primitive::Cylinder {
        length,
        caps: false,
        ..
    }) = solid.shape
    else {
        if solid.shape.is_none() && solid.mass.is_none() {
            return Err(
                "interpolated bounce-back needs a closed surface; this mesh is open".into(),
            );
        }
        return Ok(());
    };
    let Surface::Implicit(Placed {
        shape: Implicit::Tube { .. },
        rotation,
        center,
    }) = surface
    else {
        return Ok(());
    };
    let axis = (0..3).find(|&i| rotation[i][2].abs() > 1.0 - 1e-9);
    let spans = axis.is_some_and(|a| {
        // Every fluid node along the axis (a wall layer at each end of a wall-bounded axis)
        // lies within the half length, give or take the half cell the walls sit at.
        let (first, last) = if periodic[a] {
            (0.0, (dims[a] - 1) as f64)
        } else {
            (1.0, (dims[a] - 2) as f64)
        };
        let half = 0.5 * length + 0.5 + 1e-9;
        (first - center[a]).abs() <= half && (last - center[a]).abs() <= half
    });
    if spans {
        Ok(())
    } else {
        Err(
            "an uncapped cylinder with interpolated bounce-back must span the domain along its \
             axis (an axis of the lattice); give it caps otherwise"
                .into(),
        )
    }
}
