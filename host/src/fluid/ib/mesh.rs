//! Triangle meshes from files (OBJ, STL) and the properties of closed meshes: whether a mesh
//! encloses a volume, and its volume, centre of mass and inertia.

use super::shapes::{ShapeError, TriangleMesh};
use super::solid::MassProperties;
use std::path::Path;

/// Reads an OBJ or STL file (by extension) into a mesh in the file's own units.
pub fn load_mesh(path: &Path) -> Result<TriangleMesh, ShapeError> {
    Err(ShapeError::BadMesh(format!(
        "{}: reading meshes from files is not implemented yet",
        path.display()
    )))
}

impl TriangleMesh {
    /// Whether every edge is shared by exactly two triangles that traverse it in opposite
    /// directions (a closed, consistently oriented surface).
    pub fn is_closed(&self) -> bool {
        false
    }

    /// Centre of mass (uniform density) and volume and inertia about it, for a closed mesh;
    /// `None` for an open one.
    pub fn mass_properties(&self) -> Option<([f64; 3], MassProperties)> {
        None
    }
}
