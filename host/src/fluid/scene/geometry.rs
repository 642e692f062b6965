//! The domain in lattice units: fluid cells per axis and the boundary of each face, and what
//! they give: the lattice, the cell bytes, the face parameters and the coordinates.
//!
//! Coordinates: cell centres sit at integer lattice coordinates. A non-periodic axis of `n` fluid
//! cells has `n + 2` cells, one boundary layer at each end (cells 0 and `n + 1`); its wall planes
//! lie halfway between a boundary cell and the first fluid cell, at `0.5` and `n + 0.5`, and the
//! physical origin sits on the first: `lattice = phys / dx + 0.5`. A periodic axis has exactly
//! `n` cells and `lattice = phys / dx - 0.5` (the domain `[0, n dx)` holds the centres of cells
//! `0..n`).
//!
//! A cell on two or more non-periodic faces (an edge or a corner) belongs to the face whose
//! boundary comes first in [`Boundary::precedence`]: inlet, outlet, moving wall, no-slip wall,
//! free-slip wall; between faces of the same kind, the lower face index (`-x, +x, -y, +y, -z,
//! +z`).

use super::super::{FluidError, Setup};
use murmur_common::lbm::boundary::{cell_byte, FACE_NAMES, FLUID};
use murmur_common::lbm::{
    CellKind, CollisionModel, Face, Initial, Lattice, Layout, LbmParams, Rates, StorageKind,
};

/// The boundary of one face, lattice units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Boundary {
    /// Wraps to the opposite face (both faces of an axis or neither).
    Periodic,
    /// No-slip wall at rest (bounce-back).
    Wall,
    /// Free-slip wall (specular reflection).
    FreeSlip,
    /// Wall moving in its own plane at a velocity.
    Moving([f32; 3]),
    /// Velocity inlet: the peak velocity, and the axes (bits) along which its profile is a
    /// parabola between the wall planes (none: uniform).
    Inlet { velocity: [f32; 3], parabolic: u32 },
    /// Pressure outlet at a density.
    Outlet(f32),
}

impl Boundary {
    /// The cell kind of the face's boundary layer (`None` for periodic faces).
    pub fn kind(&self) -> Option<CellKind> {
        match self {
            Boundary::Periodic => None,
            Boundary::Wall => Some(CellKind::Wall),
            Boundary::FreeSlip => Some(CellKind::FreeSlip),
            Boundary::Moving(_) => Some(CellKind::MovingWall),
            Boundary::Inlet { .. } => Some(CellKind::Inlet),
            Boundary::Outlet(_) => Some(CellKind::Outlet),
        }
    }

    /// Which face owns an edge or corner cell: the lower value. Inlets and outlets own their
    /// whole face, so every fluid cell next to an inlet receives all nine of its inward links
    /// from inlet cells and the inflow is exactly the inlet velocity times the fluid cross
    /// section (a wall corner would take a sixth of that away from every cell along the edge);
    /// a moving wall owns its edges against resting walls (the lid of Ghia's cavity moves up
    /// to the corners); free-slip walls own none, since at an edge their reflection falls back
    /// to bounce-back anyway.
    pub fn precedence(&self) -> u8 {
        match self {
            Boundary::Inlet { .. } => 0,
            Boundary::Outlet(_) => 1,
            Boundary::Moving(_) => 2,
            Boundary::Wall => 3,
            Boundary::FreeSlip => 4,
            Boundary::Periodic => 5,
        }
    }

    /// A short name for messages: `periodic`, `a no-slip wall`, ...
    pub fn describe(&self) -> &'static str {
        match self {
            Boundary::Periodic => "periodic",
            Boundary::Wall => "a no-slip wall",
            Boundary::FreeSlip => "a free-slip wall",
            Boundary::Moving(_) => "a moving wall",
            Boundary::Inlet { .. } => "an inlet",
            Boundary::Outlet(_) => "an outlet",
        }
    }

    /// The face parameters (lattice units) of this boundary on `geometry`.
    fn face(&self, geometry: &Geometry) -> Face {
        match *self {
            Boundary::Moving(v) => Face::moving(v),
            Boundary::Inlet {
                velocity,
                parabolic,
            } => {
                let mut face = Face::moving(velocity);
                for axis in 0..3 {
                    if parabolic & (1 << axis) != 0 {
                        let (lo, hi) = geometry.walls(axis);
                        face = face.with_parabola(axis, lo as f32, hi as f32);
                    }
                }
                face
            }
            Boundary::Outlet(density) => Face::outlet(density),
            Boundary::Periodic | Boundary::Wall | Boundary::FreeSlip => Face::REST,
        }
    }
}

/// A box of fluid cells and the boundary of each of its faces (`-x, +x, -y, +y, -z, +z`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    /// Fluid cells along each axis (boundary layers not counted).
    pub fluid: [u32; 3],
    pub faces: [Boundary; 6],
}

impl Geometry {
    /// A duct along x of `fluid` cells: a velocity inlet (0.05 along x; `parabolic`: the
    /// axes across which its profile is parabolic, as bits) at `x_min`, an outlet at `x_max`,
    /// free-slip sides across y and no-slip walls across z.
    pub fn duct(fluid: [u32; 3], parabolic: u32) -> Geometry {
        Geometry {
            fluid,
            faces: [
                Boundary::Inlet {
                    velocity: [0.05, 0.0, 0.0],
                    parabolic,
                },
                Boundary::Outlet(1.0),
                Boundary::FreeSlip,
                Boundary::FreeSlip,
                Boundary::Wall,
                Boundary::Wall,
            ],
        }
    }

    /// [`Geometry::duct`] along z: a uniform inlet at z = 0, the outlet at z = max, free-slip
    /// walls at x and no-slip walls at y.
    pub fn duct_z(fluid: [u32; 3]) -> Geometry {
        Geometry {
            fluid,
            faces: [
                Boundary::FreeSlip,
                Boundary::FreeSlip,
                Boundary::Wall,
                Boundary::Wall,
                Boundary::Inlet {
                    velocity: [0.0, 0.0, 0.05],
                    parabolic: 0,
                },
                Boundary::Outlet(1.0),
            ],
        }
    }

    /// Whether each axis is periodic (its faces are; [`Geometry::check`] makes both agree).
    pub fn periodic(&self) -> [bool; 3] {
        [0, 1, 2].map(|a| self.faces[2 * a] == Boundary::Periodic)
    }

    /// Refuses a periodic face whose opposite face is not periodic, and empty axes.
    pub fn check(&self) -> Result<(), FluidError> {
        for axis in 0..3 {
            let (lo, hi) = (self.faces[2 * axis], self.faces[2 * axis + 1]);
            if (lo == Boundary::Periodic) != (hi == Boundary::Periodic) {
                return Err(FluidError::Invalid(format!(
                    "faces {} and {}: periodic must be on both faces of an axis or on neither \
                     ({} is {}, {} is {})",
                    FACE_NAMES[2 * axis],
                    FACE_NAMES[2 * axis + 1],
                    FACE_NAMES[2 * axis],
                    lo.describe(),
                    FACE_NAMES[2 * axis + 1],
                    hi.describe()
                )));
            }
            if self.fluid[axis] == 0 {
                return Err(FluidError::Invalid(format!(
                    "the domain has no fluid cell along {}",
                    ["x", "y", "z"][axis]
                )));
            }
        }
        Ok(())
    }

    /// Cells along each axis: the fluid cells plus a boundary layer at each non-periodic end.
    pub fn dims(&self) -> Result<[u32; 3], FluidError> {
        self.check()?;
        let periodic = self.periodic();
        let mut dims = [0; 3];
        for a in 0..3 {
            let extra = if periodic[a] { 0 } else { 2 };
            dims[a] = self.fluid[a].checked_add(extra).ok_or_else(|| {
                FluidError::Invalid(format!(
                    "{} fluid cells along {} are too many",
                    self.fluid[a],
                    ["x", "y", "z"][a]
                ))
            })?;
        }
        Ok(dims)
    }

    /// Lattice coordinate of the physical origin along `axis` (`lattice = phys / dx + offset`).
    pub fn offset(&self, axis: usize) -> f64 {
        if self.periodic()[axis] {
            -0.5
        } else {
            0.5
        }
    }

    /// The domain's bounds along `axis`, lattice coordinates: the wall planes `0.5, n + 0.5` of
    /// a non-periodic axis, `-0.5, n - 0.5` (one period) of a periodic one.
    pub fn walls(&self, axis: usize) -> (f64, f64) {
        let o = self.offset(axis);
        (o, o + self.fluid[axis] as f64)
    }

    /// The cell byte of every cell of `lattice` (whose dims are [`Geometry::dims`]): boundary
    /// layers take their face's kind (edges and corners by [`Boundary::precedence`]), the rest
    /// is fluid.
    pub fn flags(&self, lattice: &Lattice) -> Vec<u8> {
        let n = [lattice.nx, lattice.ny, lattice.nz];
        let periodic = self.periodic();
        (0..lattice.cells())
            .map(|cell| {
                let (x, y, z) = lattice.coords(cell);
                let c = [x, y, z];
                let mut owner: Option<(u8, usize)> = None;
                for a in 0..3 {
                    if periodic[a] {
                        continue;
                    }
                    let face = if c[a] == 0 {
                        2 * a
                    } else if c[a] == n[a] - 1 {
                        2 * a + 1
                    } else {
                        continue;
                    };
                    let key = (self.faces[face].precedence(), face);
                    if owner.is_none_or(|o| key < o) {
                        owner = Some(key);
                    }
                }
                match owner.and_then(|(_, face)| Some((self.faces[face].kind()?, face))) {
                    Some((kind, face)) => cell_byte(kind, face as u8),
                    None => FLUID,
                }
            })
            .collect()
    }

    /// The step parameters of `lattice` with `rates` and this geometry's faces (no force).
    pub fn params(&self, lattice: Lattice, rates: Rates) -> LbmParams {
        let mut p = LbmParams::new(lattice, rates);
        for (face, b) in p.faces.iter_mut().zip(&self.faces) {
            *face = b.face(self);
        }
        p
    }

    /// A setup at rest with these faces, `rates` and `model`, no solids.
    pub fn setup(&self, rates: Rates, model: CollisionModel) -> Result<Setup, FluidError> {
        let [nx, ny, nz] = self.dims()?;
        let lattice = super::lattice_checked(nx, ny, nz)?;
        let mut setup = Setup {
            model,
            params: self.params(lattice, rates),
            flags: self.flags(&lattice),
            initial: Initial::REST,
            storage: StorageKind::Fp32,
            layout: Layout::SOA,
            block: crate::fluid::Block::Flat,
            streaming: None,
            boundary_launch: Default::default(),
            graph: false,
            layer_kernel: false,
            immersed: Default::default(),
            walls: Default::default(),
        };
        setup.immersed.periodic = self.periodic();
        Ok(setup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_and_corners_follow_the_precedence() {
        let g = Geometry {
            fluid: [4, 3, 2],
            faces: [
                Boundary::Inlet {
                    velocity: [0.05, 0.0, 0.0],
                    parabolic: 0b010,
                },
                Boundary::Outlet(1.0),
                Boundary::FreeSlip,
                Boundary::Moving([0.1, 0.0, 0.0]),
                Boundary::Wall,
                Boundary::Wall,
            ],
        };
        let [nx, ny, nz] = g.dims().unwrap();
        assert_eq!([nx, ny, nz], [6, 5, 4]);
        let l = Lattice::new(nx, ny, nz);
        let flags = g.flags(&l);
        let at = |x, y, z| {
            let b = flags[l.index(x, y, z)];
            (
                CellKind::from_u8(b),
                murmur_common::lbm::boundary::face_of(b),
            )
        };
        assert_eq!(at(0, 0, 0), (CellKind::Inlet, 0));
        assert_eq!(at(5, 4, 3), (CellKind::Outlet, 1));
        assert_eq!(at(2, 4, 0), (CellKind::MovingWall, 3));
        assert_eq!(at(2, 0, 0), (CellKind::Wall, 4));
        assert_eq!(at(2, 0, 1), (CellKind::FreeSlip, 2));
        assert_eq!(at(2, 2, 3), (CellKind::Wall, 5));
        assert_eq!(flags[l.index(1, 1, 1)], FLUID);
        let p = g.params(l, Rates::from_viscosity(0.1));
        assert_eq!(p.faces[0].parabolic, 0b010);
        assert_eq!(p.faces[0].center[1], 2.0);
        assert_eq!(p.faces[0].inv_half_width[1], 2.0 / 3.0);
        assert_eq!(p.faces[3].velocity, [0.1, 0.0, 0.0]);
        assert_eq!(g.walls(0), (0.5, 4.5));
    }

    #[test]
    fn periodic_must_pair() {
        let mut g = Geometry {
            fluid: [4, 4, 4],
            faces: [Boundary::Periodic; 6],
        };
        assert_eq!(g.dims().unwrap(), [4, 4, 4]);
        assert_eq!(g.walls(1), (-0.5, 3.5));
        g.faces[3] = Boundary::Wall;
        let e = g.dims().unwrap_err().to_string();
        assert!(
            e.contains("-y and +y") && e.contains("+y is a no-slip wall"),
            "{e}"
        );
    }
}
