//! The host's immersed boundary: the solids and their surface samples (Lagrangian markers), the
//! plan both backends run ([`plan`]), how the forces reach the band ([`spread`]), the bench of
//! the spreading methods ([`bench`]) and the validation cases ([`validate`]). The math is
//! `murmur_common::lbm::ib`, written once for the CPU reference and the kernels.
//!
//! A solid is a primitive tessellated in its own frame ([`shapes`]) placed by a [`Pose`], or a
//! triangle mesh read from an OBJ or STL file ([`load_mesh`]); a closed mesh also gives the
//! solid's volume, centroid and inertia ([`TriangleMesh::mass_properties`]). [`poisson_disk`]
//! covers the surface with samples at least a given distance apart (lattice cells; 0.5 for
//! validation scenes; 0.26 to 0.08 for 10 to 100 samples per boundary cell:
//! [`spacing_for_samples_per_cell`]), each carrying an equal share of the area.
//!
//! Sources: dart throwing (Cook, "Stochastic sampling in computer graphics", ACM TOG 5(1), 1986)
//! with the uniform background grid of Bridson ("Fast Poisson disk sampling in arbitrary
//! dimensions", SIGGRAPH 2007 sketches), in tiles processed by colour (Wei, "Parallel Poisson
//! disk sampling", ACM TOG 27(3), 2008); mass properties by signed tetrahedra (Tonon, J. Math.
//! Stat. 1(1), 2005).

pub mod bench;
pub mod mesh;
pub mod plan;
pub mod sampling;
pub mod shapes;
pub mod solid;
pub mod spread;
pub mod validate;

use murmur_common::lbm::ib::stencil::Domain;

pub use mesh::load_mesh;
pub use sampling::{
    poisson_disk, spacing_for_samples_per_cell, Samples, SamplingError, PACKING_DENSITY,
};
pub use shapes::{MeshProblem, Pose, Primitive, ShapeError, TriangleMesh};
pub use solid::{MassProperties, Motion, Solid};

/// The immersed boundary of a setup: its solids and the coupling's fixed choices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Immersed {
    /// The solids (none: no immersed-boundary stages run).
    pub solids: Vec<Solid>,
    /// Axes that wrap for the stencils: the scene's periodic faces.
    pub periodic: [bool; 3],
    /// Multi-direct-forcing passes per step; 0: the fixed default ([`plan::PASSES`]). A
    /// scene's `[immersed] passes` and the Couette study set it.
    pub passes: u32,
    /// How the samples' forces reach the band.
    pub spread: spread::IbSpread,
    /// On one rank of several: the lattice is a slab `(axis, origin, extent)` of the whole
    /// ([`murmur_common::lbm::ib::stencil::Domain::slab`]); set by the slab plan.
    pub slab: Option<(u32, i32, u32)>,
}

impl Immersed {
    /// Whether there is anything to couple.
    pub fn is_empty(&self) -> bool {
        self.solids.iter().all(|s| s.is_empty())
    }

    /// Total samples over all solids.
    pub fn samples(&self) -> usize {
        self.solids.iter().map(|s| s.len()).sum()
    }

    /// The stencils' domain on `lattice` (this rank's slab where [`Immersed::slab`] says so).
    pub fn domain(&self, lattice: murmur_common::lbm::Lattice) -> Domain {
        let d = Domain::new(lattice, self.periodic);
        match self.slab {
            None => d,
            Some((axis, origin, extent)) => d.slab(axis, origin, extent),
        }
    }
}
