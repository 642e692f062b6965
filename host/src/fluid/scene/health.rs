//! The health check's bounds of a setup: the scene's limits, and the boxes of cells whose
//! density it leaves out, beside each edge where a velocity boundary (a moving wall, an inlet)
//! meets a no-slip wall (`murmur_common::lbm::health`).
//!
//! Such an edge is a Stokes corner: the velocity jumps from the boundary's to zero, the pressure
//! is singular there, and the lattice density of the cells beside it grows with the resolution
//! (about `u_lb^2 N / Re`), whatever the model. The boxes come from the cell bytes' faces, so
//! the scenes, the validation builders and a slab's pieces all get theirs the same way.

use super::{Health, Scene};
use crate::fluid::Setup;
use murmur_common::lbm::boundary::face_of;
use murmur_common::lbm::health::{Bounds, CellBox};
use murmur_common::lbm::{CellKind, Lattice};

/// Fluid cells from the edge (along each of the two faces' normals) that the density test
/// leaves out: the corner cell and its next neighbour.
pub const EXEMPT_WIDTH: u32 = 2;

/// The boundary kind of each face (`-x, +x, -y, +y, -z, +z`) from the cell bytes of its plane
/// (`None`: periodic, or a face that owns no cell).
pub fn face_kinds(lattice: Lattice, flags: &[u8]) -> [Option<CellKind>; 6] {
    let n = [lattice.nx, lattice.ny, lattice.nz];
    std::array::from_fn(|face| {
        let (axis, at) = (face / 2, if face % 2 == 0 { 0 } else { n[face / 2] - 1 });
        let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
        (0..n[u]).find_map(|i| {
            (0..n[v]).find_map(|j| {
                let mut c = [0; 3];
                (c[axis], c[u], c[v]) = (at, i, j);
                let byte = flags[lattice.index(c[0], c[1], c[2])];
                let kind = CellKind::from_u8(byte);
                (kind != CellKind::Fluid && face_of(byte) as usize == face).then_some(kind)
            })
        })
    })
}

/// The boxes beside every edge where a moving wall or an inlet meets a no-slip wall: along each
/// of the two faces' normals the boundary layer and `width` fluid cells, along the edge the whole
/// lattice.
pub fn corner_boxes(lattice: Lattice, flags: &[u8], width: u32) -> Vec<CellBox> {
    let n = [lattice.nx, lattice.ny, lattice.nz];
    let kinds = face_kinds(lattice, flags);
    let moving = |k: Option<CellKind>| matches!(k, Some(CellKind::MovingWall | CellKind::Inlet));
    let mut boxes = Vec::new();
    for a in 0..6 {
        for b in 0..6 {
            if a / 2 == b / 2 || !moving(kinds[a]) || kinds[b] != Some(CellKind::Wall) {
                continue;
            }
            let mut lo = [0; 3];
            let mut hi = n;
            for face in [a, b] {
                let axis = face / 2;
                let depth = (width + 1).min(n[axis]);
                if face % 2 == 0 {
                    hi[axis] = depth;
                } else {
                    lo[axis] = n[axis] - depth;
                }
            }
            boxes.push(CellBox { lo, hi });
        }
    }
    boxes
}

/// The bounds of `setup` under `limits`: the limits and the corner boxes ([`EXEMPT_WIDTH`]).
pub fn bounds(setup: &Setup, limits: Health) -> Bounds {
    let mut b = Bounds::new(limits.max_density_deviation as f32, limits.max_mach as f32);
    for c in corner_boxes(setup.lattice(), &setup.flags, EXEMPT_WIDTH) {
        // A box domain has twelve edges: every box fits.
        let added = b.add_exempt(c);
        debug_assert!(added);
    }
    b
}

impl Health {
    /// The default limits (`[health]` left out): `|rho - 1| <= 0.1`, `Ma <= 0.5`.
    pub const DEFAULT: Health = Health {
        max_density_deviation: 0.1,
        max_mach: 0.5,
    };
}

impl Scene {
    /// The health check's bounds of this scene ([`bounds`]).
    pub fn bounds(&self) -> Bounds {
        bounds(&self.setup, self.health)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::scene::{cavity, Boundary, Geometry};
    use murmur_common::lbm::{CollisionModel, Rates};

    #[test]
    fn the_cavity_exempts_its_two_lid_corners() {
        let s = cavity(16, 1, 0.1, 0.01, CollisionModel::Bgk).unwrap();
        let kinds = face_kinds(s.lattice(), &s.flags);
        assert_eq!(kinds[3], Some(CellKind::MovingWall));
        assert_eq!(kinds[0], Some(CellKind::Wall));
        assert_eq!(kinds[4], None);
        let b = bounds(&s, Health::DEFAULT);
        // The lid (+y) against the walls at -x and +x: x 0..3 or 15..18, y 15..18, every z.
        assert_eq!(
            b.exempt_boxes(),
            [
                CellBox {
                    lo: [0, 15, 0],
                    hi: [3, 18, 1]
                },
                CellBox {
                    lo: [15, 15, 0],
                    hi: [18, 18, 1]
                },
            ]
        );
        assert!(b.exempts([16, 16, 0]) && b.exempts([15, 15, 0]));
        assert!(!b.exempts([14, 16, 0]) && !b.exempts([16, 14, 0]) && !b.exempts([8, 16, 0]));
    }

    #[test]
    fn free_slip_walls_and_outlets_exempt_nothing() {
        let rates = Rates::from_viscosity(0.02);
        let duct = Geometry::duct([12, 6, 5], 0)
            .setup(rates, CollisionModel::Bgk)
            .unwrap();
        // The inlet (-x) meets the no-slip walls across z: two edges.
        let boxes = corner_boxes(duct.lattice(), &duct.flags, 2);
        assert_eq!(boxes.len(), 2);
        assert_eq!(
            boxes[0],
            CellBox {
                lo: [0, 0, 0],
                hi: [3, 8, 3]
            }
        );
        let mut g = Geometry::duct([12, 6, 5], 0);
        g.faces[4] = Boundary::FreeSlip;
        g.faces[5] = Boundary::FreeSlip;
        let tunnel = g.setup(rates, CollisionModel::Bgk).unwrap();
        assert!(corner_boxes(tunnel.lattice(), &tunnel.flags, 2).is_empty());
        // A closed box with a lid on every side but one: each lid edge against the one wall.
        let lidded = Geometry {
            fluid: [6, 6, 6],
            faces: [
                Boundary::Moving([0.0, 0.05, 0.0]),
                Boundary::Moving([0.0, 0.05, 0.0]),
                Boundary::Moving([0.05, 0.0, 0.0]),
                Boundary::Moving([0.05, 0.0, 0.0]),
                Boundary::Moving([0.05, 0.0, 0.0]),
                Boundary::Wall,
            ],
        }
        .setup(rates, CollisionModel::Bgk)
        .unwrap();
        assert_eq!(corner_boxes(lidded.lattice(), &lidded.flags, 2).len(), 4);
    }
}
