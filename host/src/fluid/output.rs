//! Field output: VTK XML image data (`.vti`, raw binary appended data; opens in ParaView) and
//! NumPy `.npz`. Values are converted to SI units through the scene's `Units`. Writes are atomic.

use super::{Fields, FluidError};
use crate::atomic_file::write_atomic;
use murmur_common::lbm::boundary::KIND_MASK;
use murmur_common::lbm::Units;
use ndarray::{Array1, Array3, Array4};
use ndarray_npy::NpzWriter;
use std::io::Write;
use std::path::Path;

/// SI arrays of one snapshot, x fastest.
struct Si {
    density: Vec<f32>,
    pressure: Vec<f32>,
    velocity: Vec<f32>,
}

fn to_si(fields: &Fields, units: &Units) -> Si {
    let n = fields.n();
    let mut s = Si {
        density: Vec::with_capacity(n),
        pressure: Vec::with_capacity(n),
        velocity: Vec::with_capacity(3 * n),
    };
    for c in 0..n {
        let rho = fields.rho(c) as f64;
        s.density.push(units.density_to_si(rho) as f32);
        s.pressure.push(units.pressure_to_si(rho) as f32);
        for u in fields.u(c) {
            s.velocity.push(units.velocity_to_si(u as f64) as f32);
        }
    }
    s
}

/// The `CellKind` of every cell byte (without its face and marker bits).
fn kinds(flags: &[u8]) -> Vec<u8> {
    flags.iter().map(|&b| b & KIND_MASK).collect()
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> FluidError {
    FluidError::Invalid(format!("cannot write {}: {e}", path.display()))
}

/// Writes `.vti` (VTK ImageData, appended raw little-endian data, UInt64 block headers): point
/// data `density` (kg/m^3), `pressure` (Pa, deviation from the reference), `velocity` (m/s),
/// `cell_type` (the `CellKind`: 0 fluid, 1 wall, 2 moving wall, 3 inlet, 4 outlet, 5 free-slip
/// wall); spacing `dx` metres.
pub fn write_vti(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    let si = to_si(fields, units);
    let l = fields.lattice;
    let as_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let blocks: [(&str, &str, u32, Vec<u8>); 4] = [
        ("density", "Float32", 1, as_bytes(&si.density)),
        ("pressure", "Float32", 1, as_bytes(&si.pressure)),
        ("velocity", "Float32", 3, as_bytes(&si.velocity)),
        ("cell_type", "UInt8", 1, kinds(flags)),
    ];
    let extent = format!("0 {} 0 {} 0 {}", l.nx - 1, l.ny - 1, l.nz - 1);
    let mut header = String::new();
    header += "<?xml version=\"1.0\"?>\n";
    header += "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" \
               header_type=\"UInt64\">\n";
    header += &format!(
        "  <ImageData WholeExtent=\"{extent}\" Origin=\"0 0 0\" Spacing=\"{d} {d} {d}\">\n",
        d = units.dx
    );
    header += "    <FieldData>\n      <DataArray type=\"Float64\" Name=\"TimeValue\" \
               NumberOfTuples=\"1\" format=\"ascii\">";
    header += &format!("{time_s}</DataArray>\n    </FieldData>\n");
    header += &format!("    <Piece Extent=\"{extent}\">\n");
    header += "      <PointData Scalars=\"density\" Vectors=\"velocity\">\n";
    let mut offset = 0u64;
    for (name, ty, comps, data) in &blocks {
        header += &format!(
            "        <DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{comps}\" \
             format=\"appended\" offset=\"{offset}\"/>\n"
        );
        offset += 8 + data.len() as u64;
    }
    header += "      </PointData>\n    </Piece>\n  </ImageData>\n";
    header += "  <AppendedData encoding=\"raw\">\n   _";
    write_atomic(path, |w| {
        w.write_all(header.as_bytes())?;
        for (_, _, _, data) in &blocks {
            w.write_all(&(data.len() as u64).to_le_bytes())?;
            w.write_all(data)?;
        }
        w.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
    })
    .map_err(|e| write_error(path, e))
}

/// Writes `.npz`: `density` (nz, ny, nx) kg/m^3, `pressure` (nz, ny, nx) Pa, `velocity`
/// (nz, ny, nx, 3) m/s, `cell_type` (nz, ny, nx) u8, `spacing` [dx] m, `time` [t] s.
pub fn write_npz(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    let si = to_si(fields, units);
    let l = fields.lattice;
    let shape = (l.nz as usize, l.ny as usize, l.nx as usize);
    let bad = |e: ndarray::ShapeError| write_error(path, e);
    let density = Array3::from_shape_vec(shape, si.density).map_err(bad)?;
    let pressure = Array3::from_shape_vec(shape, si.pressure).map_err(bad)?;
    let velocity =
        Array4::from_shape_vec((shape.0, shape.1, shape.2, 3), si.velocity).map_err(bad)?;
    let cell_type = Array3::from_shape_vec(shape, kinds(flags)).map_err(bad)?;
    write_atomic(path, |w| {
        let mut npz = NpzWriter::new(w);
        let e = |e: ndarray_npy::WriteNpzError| std::io::Error::other(e.to_string());
        npz.add_array("density", &density).map_err(e)?;
        npz.add_array("pressure", &pressure).map_err(e)?;
        npz.add_array("velocity", &velocity).map_err(e)?;
        npz.add_array("cell_type", &cell_type).map_err(e)?;
        npz.add_array("spacing", &Array1::from_vec(vec![units.dx]))
            .map_err(e)?;
        npz.add_array("time", &Array1::from_vec(vec![time_s]))
            .map_err(e)?;
        npz.finish().map_err(e)?;
        Ok(())
    })
    .map_err(|e| write_error(path, e))
}

/// Writes `path` as `.vti` or `.npz` by its extension.
pub fn write(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("vti") => write_vti(path, fields, flags, units, time_s),
        Some("npz") => write_npz(path, fields, flags, units, time_s),
        _ => Err(FluidError::Invalid(format!(
            "{}: output files must end in .vti or .npz",
            path.display()
        ))),
    }
}
