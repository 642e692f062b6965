//! Output files: the fields as VTK XML image data (`.vti`, raw binary appended data) and NumPy
//! `.npz`, with the derived vorticity and Q-criterion ([`super::derived`]); the immersed-boundary
//! samples as VTK XML poly data (`.vtp`). Values are converted to SI units through the scene's
//! `Units`. Every write is atomic (`crate::atomic_file`): a file appears complete or not at all.
//! All VTK files open in ParaView (`ImageData` and `PolyData` readers, UInt64 block headers).

use super::derived::{Derived, LATTICE_PERIODIC};
use super::{Fields, FluidError};
use crate::atomic_file::write_atomic;
use murmur_common::lbm::boundary::KIND_MASK;
use murmur_common::lbm::Units;
use ndarray::{Array1, Array3, Array4};
use ndarray_npy::NpzWriter;
use std::io::Write;
use std::path::Path;

/// A VTK extent `"x0 x1 y0 y1 z0 z1"` (inclusive point indices) of `dims` points at `origin`.
fn extent(origin: [u32; 3], dims: [u32; 3]) -> String {
    format!(
        "{} {} {} {} {} {}",
        origin[0],
        origin[0] + dims[0] - 1,
        origin[1],
        origin[1] + dims[1] - 1,
        origin[2],
        origin[2] + dims[2] - 1
    )
}

/// Writes ParaView's parallel image data `path` (`.pvti`) over the lattice `whole`: the arrays
/// [`Snapshot::write_vti`] writes, stitched from `pieces`, each `(first point, last point,
/// file name beside path)`.
pub fn write_pvti(
    path: &Path,
    whole: murmur_common::lbm::Lattice,
    pieces: &[([u32; 3], [u32; 3], String)],
    units: &Units,
) -> Result<(), FluidError> {
    let mut s = String::new();
    s += "<?xml version=\"1.0\"?>\n";
    s += "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" \
          header_type=\"UInt64\">\n";
    s += &format!(
        "  <PImageData WholeExtent=\"{}\" GhostLevel=\"0\" Origin=\"0 0 0\" \
         Spacing=\"{d} {d} {d}\">\n",
        extent([0; 3], [whole.nx, whole.ny, whole.nz]),
        d = units.dx
    );
    s += "    <PPointData Scalars=\"density\" Vectors=\"velocity\">\n";
    for (ty, name, comps) in [
        ("Float32", "density", 1),
        ("Float32", "pressure", 1),
        ("Float32", "velocity", 3),
        ("Float32", "vorticity", 3),
        ("Float32", "q_criterion", 1),
        ("UInt8", "cell_type", 1),
    ] {
        s += &format!(
            "      <PDataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{comps}\"/>\n"
        );
    }
    s += "    </PPointData>\n";
    for (lo, hi, file) in pieces {
        let dims = [hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, hi[2] - lo[2] + 1];
        s += &format!(
            "    <Piece Extent=\"{}\" Source=\"{file}\"/>\n",
            extent(*lo, dims)
        );
    }
    s += "  </PImageData>\n</VTKFile>\n";
    write_atomic(path, |w| w.write_all(s.as_bytes())).map_err(|e| write_error(path, e))
}

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

pub(super) fn write_error(path: &Path, e: impl std::fmt::Display) -> FluidError {
    FluidError::Invalid(format!("cannot write {}: {e}", path.display()))
}

/// The cell types written to the files: the kind bits of each cell byte (`flags & 0x07`; 0 fluid,
/// 1 wall, 2 moving wall, 3 inlet, 4 outlet, 5 free-slip). The other bits (near-boundary flag,
/// face index) are the solver's business.
fn cell_types(flags: &[u8]) -> Vec<u8> {
    flags.iter().map(|f| f & KIND_MASK).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The `<AppendedData>` section of a VTK XML file: raw little-endian blocks, each preceded by
/// its byte count as a UInt64 (`header_type="UInt64"`); a `DataArray`'s `offset` is the
/// position of its block's header counted from the byte after the `_` marker.
#[derive(Default)]
struct Appended {
    blocks: Vec<Vec<u8>>,
    next_offset: u64,
}

impl Appended {
    /// Adds a block and returns the `<DataArray>` line describing it.
    fn array(&mut self, ty: &str, name: &str, comps: u32, data: Vec<u8>, indent: &str) -> String {
        let line = format!(
            "{indent}<DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{comps}\" \
             format=\"appended\" offset=\"{}\"/>\n",
            self.next_offset
        );
        self.next_offset += 8 + data.len() as u64;
        self.blocks.push(data);
        line
    }

    /// Writes the XML `header`, the blocks and the closing tags.
    fn write(&self, w: &mut impl Write, header: &str) -> std::io::Result<()> {
        w.write_all(header.as_bytes())?;
        w.write_all(b"  <AppendedData encoding=\"raw\">\n   _")?;
        for data in &self.blocks {
            w.write_all(&(data.len() as u64).to_le_bytes())?;
            w.write_all(data)?;
        }
        w.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
    }
}

/// The opening of a VTK XML file of `kind` with the time as field data (ParaView's time).
fn vtk_header(kind: &str, open_kind: &str, time_s: f64) -> String {
    let mut h = String::new();
    h += "<?xml version=\"1.0\"?>\n";
    h += &format!(
        "<VTKFile type=\"{kind}\" version=\"1.0\" byte_order=\"LittleEndian\" \
         header_type=\"UInt64\">\n"
    );
    h += &format!("  {open_kind}\n");
    h += "    <FieldData>\n      <DataArray type=\"Float64\" Name=\"TimeValue\" \
          NumberOfTuples=\"1\" format=\"ascii\">";
    h += &format!("{time_s:e}</DataArray>\n    </FieldData>\n");
    h
}

/// One state to write: the fields, their cell bytes, units and time, with the vorticity and
/// Q-criterion computed once for every file written from it (a `.vti` and a `.npz` of the same
/// step share them).
pub struct Snapshot<'a> {
    pub fields: &'a Fields,
    pub flags: &'a [u8],
    pub units: Units,
    pub time_s: f64,
    /// Vorticity (1/s) and Q-criterion (1/s^2).
    pub derived: Derived,
}

impl<'a> Snapshot<'a> {
    /// Checks that `fields` and `flags` describe the same lattice and computes the derived
    /// fields; `periodic` as for [`Derived::compute`] ([`LATTICE_PERIODIC`]: as the solver).
    pub fn new(
        fields: &'a Fields,
        flags: &'a [u8],
        units: &Units,
        time_s: f64,
        periodic: [bool; 3],
    ) -> Result<Self, FluidError> {
        let derived = Derived::compute(fields, flags, periodic, units)?;
        Ok(Snapshot {
            fields,
            flags,
            units: *units,
            time_s,
            derived,
        })
    }

    /// Writes `path` as `.vti` or `.npz` by its extension.
    pub fn write(&self, path: &Path) -> Result<(), FluidError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("vti") => self.write_vti(path),
            Some("npz") => self.write_npz(path),
            _ => Err(FluidError::Invalid(format!(
                "{}: output files must end in .vti or .npz",
                path.display()
            ))),
        }
    }

    /// Writes `.vti` (VTK ImageData, appended raw little-endian data, UInt64 block headers),
    /// spacing `dx` metres, origin 0 (cell `(i, j, k)` at `(i, j, k) dx`), field data
    /// `TimeValue` (s), point data: `density` (kg/m^3), `pressure` (Pa, deviation from the
    /// reference), `velocity` (m/s), `vorticity` (1/s), `q_criterion` (1/s^2), `cell_type`
    /// (UInt8, `flags & 0x07`: 0 fluid, 1 wall, 2 moving wall, 3 inlet, 4 outlet, 5 free-slip).
    pub fn write_vti(&self, path: &Path) -> Result<(), FluidError> {
        self.write_vti_piece(path, [0; 3], self.fields.lattice)
    }

    /// [`Snapshot::write_vti`] for a piece of a larger lattice `whole` (a rank's slab): the
    /// snapshot's cells sit at `origin` of `whole` (the piece's `Extent` inside the file's
    /// `WholeExtent`), as ParaView's parallel image data (`.pvti`, [`write_pvti`]) expects.
    pub fn write_vti_piece(
        &self,
        path: &Path,
        origin: [u32; 3],
        whole: murmur_common::lbm::Lattice,
    ) -> Result<(), FluidError> {
        let si = to_si(self.fields, &self.units);
        let l = self.fields.lattice;
        let mut data = Appended::default();
        let indent = "        ";
        let mut arrays = String::new();
        arrays += &data.array("Float32", "density", 1, f32_bytes(&si.density), indent);
        arrays += &data.array("Float32", "pressure", 1, f32_bytes(&si.pressure), indent);
        arrays += &data.array("Float32", "velocity", 3, f32_bytes(&si.velocity), indent);
        let vorticity = f32_bytes(&self.derived.vorticity);
        arrays += &data.array("Float32", "vorticity", 3, vorticity, indent);
        let q = f32_bytes(&self.derived.q_criterion);
        arrays += &data.array("Float32", "q_criterion", 1, q, indent);
        arrays += &data.array("UInt8", "cell_type", 1, cell_types(self.flags), indent);

        let piece = extent(origin, [l.nx, l.ny, l.nz]);
        let whole = extent([0; 3], [whole.nx, whole.ny, whole.nz]);
        let open = format!(
            "<ImageData WholeExtent=\"{whole}\" Origin=\"0 0 0\" Spacing=\"{d} {d} {d}\">",
            d = self.units.dx
        );
        let mut header = vtk_header("ImageData", &open, self.time_s);
        header += &format!("    <Piece Extent=\"{piece}\">\n");
        header += "      <PointData Scalars=\"density\" Vectors=\"velocity\">\n";
        header += &arrays;
        header += "      </PointData>\n    </Piece>\n  </ImageData>\n";
        write_atomic(path, |w| data.write(w, &header)).map_err(|e| write_error(path, e))
    }

    /// Writes `.npz`: `density` (nz, ny, nx) kg/m^3, `pressure` (nz, ny, nx) Pa, `velocity`
    /// (nz, ny, nx, 3) m/s, `vorticity` (nz, ny, nx, 3) 1/s, `q_criterion` (nz, ny, nx) 1/s^2,
    /// `cell_type` (nz, ny, nx) u8 (`flags & 0x07`), `spacing` [dx] m, `time` [t] s.
    pub fn write_npz(&self, path: &Path) -> Result<(), FluidError> {
        let si = to_si(self.fields, &self.units);
        let l = self.fields.lattice;
        let shape = (l.nz as usize, l.ny as usize, l.nx as usize);
        let shape3 = (shape.0, shape.1, shape.2, 3);
        let bad = |e: ndarray::ShapeError| write_error(path, e);
        let density = Array3::from_shape_vec(shape, si.density).map_err(bad)?;
        let pressure = Array3::from_shape_vec(shape, si.pressure).map_err(bad)?;
        let velocity = Array4::from_shape_vec(shape3, si.velocity).map_err(bad)?;
        let vorticity =
            Array4::from_shape_vec(shape3, self.derived.vorticity.clone()).map_err(bad)?;
        let q_criterion =
            Array3::from_shape_vec(shape, self.derived.q_criterion.clone()).map_err(bad)?;
        let cell_type = Array3::from_shape_vec(shape, cell_types(self.flags)).map_err(bad)?;
        write_atomic(path, |w| {
            let mut npz = NpzWriter::new(w);
            let e = |e: ndarray_npy::WriteNpzError| std::io::Error::other(e.to_string());
            npz.add_array("density", &density).map_err(e)?;
            npz.add_array("pressure", &pressure).map_err(e)?;
            npz.add_array("velocity", &velocity).map_err(e)?;
            npz.add_array("vorticity", &vorticity).map_err(e)?;
            npz.add_array("q_criterion", &q_criterion).map_err(e)?;
            npz.add_array("cell_type", &cell_type).map_err(e)?;
            npz.add_array("spacing", &Array1::from_vec(vec![self.units.dx]))
                .map_err(e)?;
            npz.add_array("time", &Array1::from_vec(vec![self.time_s]))
                .map_err(e)?;
            npz.finish().map_err(e)?;
            Ok(())
        })
        .map_err(|e| write_error(path, e))
    }
}

/// Writes `.vti` of `lattice` with the point arrays `(name, components, values)` (Float32),
/// spacing `dx` metres, origin 0, the time as field data.
pub fn write_vti_arrays(
    path: &Path,
    lattice: murmur_common::lbm::Lattice,
    dx: f64,
    time_s: f64,
    arrays: &[(&str, u32, &[f32])],
) -> Result<(), FluidError> {
    let mut data = Appended::default();
    let indent = "        ";
    let mut lines = String::new();
    for (name, comps, v) in arrays {
        lines += &data.array("Float32", name, *comps, f32_bytes(v), indent);
    }
    let whole = extent([0; 3], [lattice.nx, lattice.ny, lattice.nz]);
    let open =
        format!("<ImageData WholeExtent=\"{whole}\" Origin=\"0 0 0\" Spacing=\"{dx} {dx} {dx}\">");
    let mut header = vtk_header("ImageData", &open, time_s);
    header += &format!("    <Piece Extent=\"{whole}\">\n      <PointData>\n");
    header += &lines;
    header += "      </PointData>\n    </Piece>\n  </ImageData>\n";
    write_atomic(path, |w| data.write(w, &header)).map_err(|e| write_error(path, e))
}

/// Writes `.vti` (see [`Snapshot::write_vti`]); derivatives wrap every axis as the solver does.
pub fn write_vti(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    Snapshot::new(fields, flags, units, time_s, LATTICE_PERIODIC)?.write_vti(path)
}

/// Writes `.npz` (see [`Snapshot::write_npz`]); derivatives wrap every axis as the solver does.
pub fn write_npz(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    Snapshot::new(fields, flags, units, time_s, LATTICE_PERIODIC)?.write_npz(path)
}

/// Writes `path` as `.vti` or `.npz` by its extension. To write both formats of one state,
/// build one [`Snapshot`] and call its `write` twice (the derived fields are computed once).
pub fn write(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    // The extension is checked before the derived fields are computed.
    match path.extension().and_then(|e| e.to_str()) {
        Some("vti" | "npz") => {
            Snapshot::new(fields, flags, units, time_s, LATTICE_PERIODIC)?.write(path)
        }
        _ => Err(FluidError::Invalid(format!(
            "{}: output files must end in .vti or .npz",
            path.display()
        ))),
    }
}

/// The immersed-boundary samples of one step, lattice units, one entry per sample in every
/// slice (all solids together), as the coupling stage holds them.
#[derive(Clone, Copy, Debug)]
pub struct SampleSlices<'a> {
    /// Positions, cells (lattice coordinates: cell `(i, j, k)` centred on `(i, j, k)`).
    pub position: &'a [[f32; 3]],
    /// The solid's velocity at the sample, `u_b = v + omega x r` (`dx/dt`).
    pub velocity: &'a [[f32; 3]],
    /// The force density the solid exerts on the fluid at the sample, `F_s` (`rho dx / dt^2`,
    /// summed over the direct-forcing passes): what the coupling spreads to the lattice.
    pub force_density: &'a [[f32; 3]],
    /// The surface area the sample stands for, `dA_s` (cells^2; its volume is `dV_s = dA_s dx`).
    pub area: &'a [f32],
    /// Index of the sample's solid (in the setup's order).
    pub solid: &'a [u32],
}

impl SampleSlices<'_> {
    /// Number of samples, after checking that every slice has one entry per sample.
    pub fn count(&self) -> Result<usize, FluidError> {
        let n = self.position.len();
        let lens = [
            ("velocity", self.velocity.len()),
            ("force_density", self.force_density.len()),
            ("area", self.area.len()),
            ("solid", self.solid.len()),
        ];
        for (name, len) in lens {
            if len != n {
                return Err(FluidError::Invalid(format!(
                    "immersed-boundary samples: {n} positions but {len} {name} values"
                )));
            }
        }
        Ok(n)
    }
}

/// Writes the immersed-boundary samples of one step as `.vtp` (VTK PolyData, appended raw
/// little-endian data, UInt64 block headers): one vertex cell per sample (`Verts`, so the
/// points render as points), field data `TimeValue` (s), points in metres, point data
/// `velocity` (m/s, the solid's velocity at the sample), `force` (N, the force the fluid exerts
/// on the solid at the sample: `-F_s dV_s` converted), `solid` (UInt32, the solid's index),
/// `area` (m^2, `dA_s`). Atomic.
pub fn write_vtp(
    path: &Path,
    samples: &SampleSlices,
    units: &Units,
    time_s: f64,
) -> Result<(), FluidError> {
    samples.count()?;
    let vec_si = |v: &[[f32; 3]], f: &dyn Fn(f64) -> f64| -> Vec<f32> {
        v.iter()
            .flat_map(|p| p.map(|c| f(c as f64) as f32))
            .collect()
    };
    let points = vec_si(samples.position, &|x| units.length_to_si(x));
    let velocity = vec_si(samples.velocity, &|u| units.velocity_to_si(u));
    // The reaction: the fluid pushes on the solid with -F_s dV_s, dV_s = dA_s (one cell thick);
    // `+ 0.0` turns the -0 of a zero force into 0.
    let force: Vec<f32> = samples
        .force_density
        .iter()
        .zip(samples.area)
        .flat_map(|(f, &a)| f.map(|c| units.force_to_si(-(c as f64) * a as f64) as f32 + 0.0))
        .collect();
    let area: Vec<f32> = samples
        .area
        .iter()
        .map(|&a| units.area_to_si(a as f64) as f32)
        .collect();
    let solid: Vec<u8> = samples.solid.iter().flat_map(|s| s.to_le_bytes()).collect();
    let arrays = [
        PointArray::f32("velocity", 3, &velocity),
        PointArray::f32("force", 3, &force),
        PointArray {
            kind: "UInt32",
            name: "solid",
            components: 1,
            bytes: solid,
        },
        PointArray::f32("area", 1, &area),
    ];
    write_points(path, &points, &arrays, ("area", "force"), time_s)
}

/// One array of values per point of a `.vtp` point cloud: its VTK type, name, components and
/// little-endian bytes.
pub struct PointArray {
    pub kind: &'static str,
    pub name: &'static str,
    pub components: u32,
    pub bytes: Vec<u8>,
}

impl PointArray {
    /// A `Float32` array.
    pub fn f32(name: &'static str, components: u32, v: &[f32]) -> PointArray {
        PointArray {
            kind: "Float32",
            name,
            components,
            bytes: f32_bytes(v),
        }
    }
}

/// Writes a point cloud as VTK PolyData (`.vtp`, one vertex per point, appended raw binary):
/// `points` (x, y, z per point, SI), the `arrays` per point, `active` the scalars and vectors
/// ParaView shows first, at time `time_s`. Atomic.
pub fn write_points(
    path: &Path,
    points: &[f32],
    arrays: &[PointArray],
    active: (&str, &str),
    time_s: f64,
) -> Result<(), FluidError> {
    let n = points.len() / 3;
    // One vertex per point: connectivity 0..n, offsets = the end of each cell's list (1..=n).
    let connectivity: Vec<u8> = (0..n as i64).flat_map(|i| i.to_le_bytes()).collect();
    let offsets: Vec<u8> = (1..=n as i64).flat_map(|i| i.to_le_bytes()).collect();

    let mut data = Appended::default();
    let ind = "        ";
    let mut header = vtk_header("PolyData", "<PolyData>", time_s);
    header += &format!(
        "    <Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"{n}\" NumberOfLines=\"0\" \
         NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n"
    );
    header += &format!(
        "      <PointData Scalars=\"{}\" Vectors=\"{}\">\n",
        active.0, active.1
    );
    for a in arrays {
        header += &data.array(a.kind, a.name, a.components, a.bytes.clone(), ind);
    }
    header += "      </PointData>\n      <Points>\n";
    header += &data.array("Float32", "Points", 3, f32_bytes(points), ind);
    header += "      </Points>\n      <Verts>\n";
    header += &data.array("Int64", "connectivity", 1, connectivity, ind);
    header += &data.array("Int64", "offsets", 1, offsets, ind);
    header += "      </Verts>\n    </Piece>\n  </PolyData>\n";
    write_atomic(path, |w| data.write(w, &header)).map_err(|e| write_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use murmur_common::lbm::Lattice;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("murmur-output-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The `(name, offset)` of every appended `DataArray`, the start of the binary section
    /// and the bytes, for checking a file's structure.
    fn parse_appended(bytes: &[u8]) -> (Vec<(String, String, u64)>, usize) {
        let marker = b"<AppendedData encoding=\"raw\">";
        let at = bytes
            .windows(marker.len())
            .position(|w| w == marker)
            .unwrap();
        let start = at + bytes[at..].iter().position(|&b| b == b'_').unwrap() + 1;
        let text = String::from_utf8_lossy(&bytes[..at]).into_owned();
        let attr = |line: &str, key: &str| -> String {
            let k = format!("{key}=\"");
            let i = line.find(&k).unwrap() + k.len();
            line[i..i + line[i..].find('"').unwrap()].to_string()
        };
        let arrays = text
            .lines()
            .filter(|l| l.contains("format=\"appended\""))
            .map(|l| {
                (
                    attr(l, "Name"),
                    attr(l, "type"),
                    attr(l, "offset").parse().unwrap(),
                )
            })
            .collect();
        (arrays, start)
    }

    /// The block of an array: its UInt64 byte count and its bytes.
    fn block(bytes: &[u8], start: usize, offset: u64) -> &[u8] {
        let at = start + offset as usize;
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        &bytes[at + 8..at + 8 + len]
    }

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn vti_blocks_are_contiguous_and_hold_the_derived_fields() {
        // Solid-body rotation, omega = 0.01 / step, dt = 0.5 s: vorticity 0.04 1/s.
        let l = Lattice::new(6, 5, 2);
        let mut f = Fields::rest(l);
        for c in 0..l.cells() {
            let (x, y, _) = l.coords(c);
            f.set(
                c,
                1.0,
                [-0.01 * (y as f32 - 2.0), 0.01 * (x as f32 - 3.0), 0.0],
            );
        }
        let mut flags = vec![0u8; l.cells()];
        flags[0] = 1 | 0x80 | 0x18; // a wall with a face index and the top bit
        flags[1] = 5; // free-slip
        let units = Units {
            dx: 0.1,
            dt: 0.5,
            rho0: 1000.0,
        };
        let dir = scratch("vti");
        let p = dir.join("a.vti");
        let snap = Snapshot::new(&f, &flags, &units, 2.5, [false; 3]).unwrap();
        snap.write(&p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let (arrays, start) = parse_appended(&bytes);
        let names: Vec<&str> = arrays.iter().map(|a| a.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "density",
                "pressure",
                "velocity",
                "vorticity",
                "q_criterion",
                "cell_type"
            ]
        );
        // Each block starts where the previous one ends; the last ends at the closing tags.
        let n = l.cells();
        let sizes = [4 * n, 4 * n, 12 * n, 12 * n, 4 * n, n];
        let mut expect = 0u64;
        for ((_, _, off), size) in arrays.iter().zip(sizes) {
            assert_eq!(*off, expect);
            assert_eq!(block(&bytes, start, *off).len(), size);
            expect += 8 + size as u64;
        }
        assert_eq!(
            &bytes[start + expect as usize..],
            b"\n  </AppendedData>\n</VTKFile>\n"
        );
        let vort = f32s(block(&bytes, start, arrays[3].2));
        let q = f32s(block(&bytes, start, arrays[4].2));
        let c = l.index(3, 2, 1);
        assert!((vort[3 * c + 2] - 0.04).abs() < 1e-6, "{}", vort[3 * c + 2]);
        assert!((q[c] - 4e-4).abs() < 1e-8, "{}", q[c]);
        let kinds = block(&bytes, start, arrays[5].2);
        assert_eq!(&kinds[..3], &[1, 5, 0]);
        let text = String::from_utf8_lossy(&bytes[..start]);
        assert!(text.contains("Spacing=\"0.1 0.1 0.1\""));
        assert!(text.contains(">2.5e0</DataArray>"));

        // The npz carries the same derived arrays.
        let p = dir.join("a.npz");
        snap.write(&p).unwrap();
        let mut r = ndarray_npy::NpzReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        let v: Array4<f32> = r.by_name("vorticity").unwrap();
        assert_eq!(v.shape(), &[2, 5, 6, 3]);
        assert!((v[[1, 2, 3, 2]] - 0.04).abs() < 1e-6);
        let q: Array3<f32> = r.by_name("q_criterion").unwrap();
        assert!((q[[1, 2, 3]] - 4e-4).abs() < 1e-8);
        let k: Array3<u8> = r.by_name("cell_type").unwrap();
        assert_eq!(k[[0, 0, 0]], 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mismatched_flags_are_an_error_not_a_panic() {
        let f = Fields::rest(Lattice::new(3, 3, 1));
        let dir = scratch("bad");
        let e = write(&dir.join("a.vti"), &f, &[0u8; 4], &Units::LATTICE, 0.0).unwrap_err();
        assert!(e.to_string().contains("9 cell bytes"), "{e}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn vtp_holds_points_vertices_and_si_sample_data() {
        let units = Units {
            dx: 0.01,
            dt: 0.001,
            rho0: 1000.0,
        };
        let position = [[1.0, 2.0, 3.0], [10.0, 0.5, 4.0], [7.0, 7.0, 7.0]];
        let velocity = [[0.1, 0.0, 0.0], [0.0, -0.05, 0.0], [0.0; 3]];
        let force_density = [[0.002, 0.0, 0.0], [0.0, 0.0, -0.004], [0.0; 3]];
        let area = [0.5f32, 0.25, 1.0];
        let solid = [0u32, 0, 1];
        let s = SampleSlices {
            position: &position,
            velocity: &velocity,
            force_density: &force_density,
            area: &area,
            solid: &solid,
        };
        let dir = scratch("vtp");
        let p = dir.join("samples.vtp");
        write_vtp(&p, &s, &units, 0.75).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("<VTKFile type=\"PolyData\""));
        assert!(text.contains("header_type=\"UInt64\""));
        assert!(text.contains("NumberOfPoints=\"3\" NumberOfVerts=\"3\""));
        let (arrays, start) = parse_appended(&bytes);
        let get = |name: &str| {
            let a = arrays.iter().find(|a| a.0 == name).unwrap();
            (a.1.clone(), block(&bytes, start, a.2))
        };
        let mut expect = 0u64;
        for (_, _, off) in &arrays {
            assert_eq!(*off, expect);
            expect += 8 + block(&bytes, start, *off).len() as u64;
        }
        let close = |a: f32, b: f64| (a as f64 - b).abs() <= 1e-6 * b.abs().max(1e-6);
        let (ty, pts) = get("Points");
        assert_eq!(ty, "Float32");
        let pts = f32s(pts);
        assert!(close(pts[3], 0.1) && close(pts[4], 0.005) && close(pts[8], 0.07));
        // 0.1 dx/dt = 0.1 * 0.01 / 0.001 = 1 m/s.
        let v = f32s(get("velocity").1);
        assert!(close(v[0], 1.0) && close(v[4], -0.5));
        // Force unit 10 N: -0.002 * 0.5 * 10 = -0.01 N; -(-0.004) * 0.25 * 10 = 0.01 N.
        let fo = f32s(get("force").1);
        assert!(close(fo[0], -0.01) && close(fo[5], 0.01) && fo[6..].iter().all(|&x| x == 0.0));
        let a = f32s(get("area").1);
        assert!(close(a[0], 0.5e-4) && close(a[2], 1e-4));
        let (ty, sol) = get("solid");
        assert_eq!(ty, "UInt32");
        assert_eq!(sol, [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        let ints = |b: &[u8]| -> Vec<i64> {
            b.chunks(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        assert_eq!(ints(get("connectivity").1), [0, 1, 2]);
        assert_eq!(ints(get("offsets").1), [1, 2, 3]);

        // Slices of different lengths are refused before anything is written.
        let short = SampleSlices {
            area: &area[..2],
            ..s
        };
        let e = write_vtp(&dir.join("b.vtp"), &short, &units, 0.0).unwrap_err();
        assert!(e.to_string().contains("3 positions but 2 area"), "{e}");
        assert!(!dir.join("b.vtp").exists());
        // No samples at all is still a valid file.
        let none = SampleSlices {
            position: &[],
            velocity: &[],
            force_density: &[],
            area: &[],
            solid: &[],
        };
        write_vtp(&dir.join("c.vtp"), &none, &units, 0.0).unwrap();
        let e = write_vtp(&dir.join("missing/c.vtp"), &none, &units, 0.0).unwrap_err();
        assert!(e.to_string().starts_with("cannot write ") && !e.to_string().contains('\n'));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
