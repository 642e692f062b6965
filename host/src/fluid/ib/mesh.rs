//! Triangle meshes from files (OBJ, STL) and the properties of closed meshes: whether a mesh
//! encloses a volume, and its volume, centre of mass and inertia.
//!
//! Readers: `tobj` for Wavefront OBJ (positions only; polygons fanned into triangles, which
//! keeps their orientation, so a closed polygon mesh stays closed) and `stl_io` for STL, ASCII
//! or binary. Both are small, maintained and dependency-free (`tobj` without its default
//! `ahash`). Around them this module adds what they leave to the caller: the OS reason when a
//! file cannot be opened, the ASCII/binary decision by the file size (a binary STL may begin
//! with the word `solid`, which `stl_io` would take for ASCII), finite coordinates, and one
//! vertex per position: STL stores every triangle's corners separately and OBJ may repeat
//! positions (per group, or per normal), so vertices are welded by exact position, without
//! which no edge would be shared and no mesh could be closed. Triangles that weld to fewer
//! than three distinct vertices (zero area) are dropped.
//!
//! Mass properties by the divergence theorem: the closed surface is a sum of signed
//! tetrahedra, one per triangle, against a reference point (Tonon, "Explicit exact formulas for
//! the 3-D tetrahedron inertia tensor in terms of its vertex coordinates", J. Math. Stat. 1(1),
//! 2005; Eberly, "Polyhedral mass properties (revisited)", Geometric Tools, 2002, for the same
//! integrals per face). For a tetrahedron with corners `0, a, b, c` and `s = a + b + c`:
//! `V = a . (b x c) / 6`, `int x dV = V s / 4` and
//! `int x x^T dV = V / 20 (a a^T + b b^T + c c^T + s s^T)`; the inertia tensor about the
//! centroid is `tr(C) 1 - C` for the centred second moment `C`.

use super::shapes::{cross, sub, MeshProblem, ShapeError, TriangleMesh};
use super::solid::MassProperties;
use std::collections::HashMap;
use std::io::Cursor;
use std::path::Path;

/// Longest parser message kept in an error (a bad line can be long).
const MAX_REASON: usize = 160;

/// Reads an OBJ or STL file (by extension, any case) into a mesh in the file's own units, with
/// vertices welded by position (module docs). Errors are one line and name the file.
pub fn load_mesh(path: &Path) -> Result<TriangleMesh, ShapeError> {
    let fail = |problem| ShapeError::MeshFile {
        path: path.display().to_string(),
        problem,
    };
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let read = || std::fs::read(path).map_err(|e| fail(MeshProblem::Read(e.to_string())));
    let triangles = match extension.as_str() {
        "obj" => read_obj(&read()?),
        "stl" => read_stl(read()?),
        _ => return Err(fail(MeshProblem::Extension(extension))),
    }
    .map_err(fail)?;
    weld(triangles).map_err(fail)
}

fn parse_error(format: &'static str, reason: impl std::fmt::Display) -> MeshProblem {
    let mut reason = reason.to_string().replace(['\n', '\r'], " ");
    if reason.len() > MAX_REASON {
        let mut cut = MAX_REASON;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push_str("...");
    }
    MeshProblem::Parse { format, reason }
}

/// The triangles of an OBJ file's faces (every object and group; points and lines ignored).
fn read_obj(bytes: &[u8]) -> Result<Vec<[[f64; 3]; 3]>, MeshProblem> {
    // tobj reads lines of text; say where the text stops being UTF-8 rather than "read error".
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Err(parse_error(
                "OBJ",
                format!("not UTF-8 text at byte {}", e.valid_up_to()),
            ))
        }
    };
    let text = positions_only(text);
    let bytes = text.as_bytes();
    let options = tobj::LoadOptions {
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
        ..Default::default()
    };
    // Materials are not needed: every `mtllib` is answered "not found" without opening it.
    let (models, _) = tobj::load_obj_buf(&mut Cursor::new(bytes), &options, |_| {
        Err(tobj::LoadError::OpenFileFailed)
    })
    .map_err(|e| match e {
        tobj::LoadError::FaceVertexOutOfBounds => {
            let defined = bytes
                .split(|&b| b == b'\n')
                .map(|line| line.trim_ascii_start())
                .filter(|line| line.len() > 1 && line[0] == b'v' && line[1].is_ascii_whitespace())
                .count();
            MeshProblem::IndexOutOfRange(defined)
        }
        e => parse_error("OBJ", e),
    })?;
    let mut triangles = Vec::new();
    for model in &models {
        let (positions, indices) = (&model.mesh.positions, &model.mesh.indices);
        let corner = |i: u32| -> Result<[f64; 3], MeshProblem> {
            let at = 3 * i as usize;
            positions
                .get(at..at + 3)
                .map(|p| [p[0], p[1], p[2]])
                .ok_or(MeshProblem::IndexOutOfRange(positions.len() / 3))
        };
        for t in indices.chunks_exact(3) {
            triangles.push([corner(t[0])?, corner(t[1])?, corner(t[2])?]);
        }
    }
    Ok(triangles)
}

/// The OBJ text with what a solid does not need left out: texture coordinates and normals
/// (`vt`, `vn` lines, and the `/vt/vn` parts of face corners). Besides saving tobj the work, this
/// keeps it off its texture and normal index arithmetic, which is unchecked (a huge index
/// overflows in a debug build). Line numbers are kept.
fn positions_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("vt" | "vn") => {}
            Some(first @ ("f" | "l" | "p")) => {
                out.push_str(first);
                for corner in words {
                    out.push(' ');
                    out.push_str(corner.split('/').next().unwrap_or(""));
                }
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The triangles of an STL file, ASCII or binary.
///
/// A binary STL is an 80-byte header, a little-endian `u32` triangle count and 50 bytes per
/// triangle, so a file of exactly `84 + 50 n` bytes is binary whatever its header says; other
/// files beginning with `solid` are ASCII. `stl_io` decides by the word `solid` alone, so a
/// binary header is blanked before it is handed over, and an ASCII block's first line is
/// normalised to `solid mesh` (`stl_io` wants a name after `solid`, which the format leaves
/// optional).
fn read_stl(mut bytes: Vec<u8>) -> Result<Vec<[[f64; 3]; 3]>, MeshProblem> {
    let declared = (bytes.len() >= 84)
        .then(|| u32::from_le_bytes([bytes[80], bytes[81], bytes[82], bytes[83]]) as u64);
    let binary_size = declared.map(|n| 84 + 50 * n);
    let ascii =
        bytes.trim_ascii_start().starts_with(b"solid") && binary_size != Some(bytes.len() as u64);
    let format = if ascii { "ASCII STL" } else { "binary STL" };
    if ascii {
        // Each `solid ... endsolid` block (exporters write one per body) on its own, as
        // `stl_io` stops at the first `endsolid`.
        let text = bytes.trim_ascii_start();
        let mut starts: Vec<usize> = Vec::new();
        let mut at = 0;
        for line in text.split(|&b| b == b'\n') {
            if line.trim_ascii_start().starts_with(b"solid") {
                starts.push(at);
            }
            at += line.len() + 1;
        }
        starts.push(text.len());
        let mut triangles = Vec::new();
        for w in starts.windows(2) {
            let block = &text[w[0]..w[1]];
            let body = block
                .iter()
                .position(|&b| b == b'\n')
                .map_or(&[][..], |end| &block[end + 1..]);
            triangles.extend(stl_triangles(
                [b"solid mesh\n".as_slice(), body].concat(),
                format,
            )?);
        }
        return Ok(triangles);
    }
    match binary_size {
        None => {
            return Err(parse_error(
                format,
                format!("{} bytes, shorter than the 84-byte header", bytes.len()),
            ))
        }
        Some(size) if size > bytes.len() as u64 => {
            return Err(parse_error(
                format,
                format!(
                    "the header promises {} triangles ({size} bytes) but the file has {} bytes",
                    declared.unwrap_or(0),
                    bytes.len()
                ),
            ))
        }
        Some(_) => bytes[..80].fill(0),
    }
    stl_triangles(bytes, format)
}

/// The triangles `stl_io` reads from `bytes` (prepared by [`read_stl`]).
fn stl_triangles(bytes: Vec<u8>, format: &'static str) -> Result<Vec<[[f64; 3]; 3]>, MeshProblem> {
    let mut cursor = Cursor::new(bytes);
    let reader = stl_io::create_stl_reader(&mut cursor).map_err(|e| parse_error(format, e))?;
    reader
        .map(|t| {
            let t = t.map_err(|e| parse_error(format, e))?;
            Ok(t.vertices.map(|v| v.0.map(f64::from)))
        })
        .collect()
}

/// One vertex per distinct position (`-0.0` and `0.0` are one), triangles of fewer than three
/// distinct vertices dropped.
fn weld(triangles: Vec<[[f64; 3]; 3]>) -> Result<TriangleMesh, MeshProblem> {
    let mut mesh = TriangleMesh::default();
    let mut index: HashMap<[u64; 3], u32> = HashMap::with_capacity(triangles.len() / 2 + 3);
    for corners in triangles {
        let mut t = [0u32; 3];
        for (slot, p) in t.iter_mut().zip(corners) {
            if p.iter().any(|x| !x.is_finite()) {
                return Err(MeshProblem::NonFinite(p));
            }
            // Adding +0.0 turns -0.0 into +0.0 and leaves every other value as it is.
            let key = p.map(|x| (x + 0.0).to_bits());
            *slot = *index.entry(key).or_insert_with(|| {
                mesh.vertices.push(p);
                mesh.vertices.len() as u32 - 1
            });
        }
        if t[0] != t[1] && t[1] != t[2] && t[0] != t[2] {
            mesh.triangles.push(t);
        }
    }
    if mesh.triangles.is_empty() {
        return Err(MeshProblem::NoTriangles);
    }
    Ok(mesh)
}

impl TriangleMesh {
    /// Whether every edge is shared by exactly two triangles that traverse it in opposite
    /// directions (a closed, consistently oriented surface). False for an empty mesh and for
    /// any triangle with an index out of range or a repeated corner.
    pub fn is_closed(&self) -> bool {
        let n = self.vertices.len();
        let mut edges: Vec<u64> = Vec::with_capacity(3 * self.triangles.len());
        for t in &self.triangles {
            if t.iter().any(|&i| i as usize >= n) || t[0] == t[1] || t[1] == t[2] || t[0] == t[2] {
                return false;
            }
            for k in 0..3 {
                edges.push((t[k] as u64) << 32 | t[(k + 1) % 3] as u64);
            }
        }
        edges.sort_unstable();
        // Each directed edge once (a second use in the same direction is an orientation flip or
        // a third sheet), and its reverse present.
        !edges.is_empty()
            && edges.windows(2).all(|w| w[0] != w[1])
            && edges
                .iter()
                .all(|&e| edges.binary_search(&e.rotate_right(32)).is_ok())
    }

    /// Volume enclosed by the triangles (cells^3): positive when they face outward
    /// (counter-clockwise seen from outside), negative when they all face inward. Meaningful for
    /// closed meshes only.
    pub fn signed_volume(&self) -> f64 {
        let r = self.vertex_mean();
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| sub(self.vertices[i as usize], r));
                dot(a, cross(b, c))
            })
            .sum::<f64>()
            / 6.0
    }

    /// Centre of mass (uniform density 1) and volume and inertia about it (body frame = mesh
    /// frame; cells^3 and cells^5), for a closed mesh ([`TriangleMesh::is_closed`]); `None` for
    /// an open one or one enclosing no volume (below `1e-12` of its bounding box's). A mesh
    /// whose triangles all face inward encloses the same solid: its negative volume is turned
    /// positive with the moments (see [`TriangleMesh::signed_volume`] to tell).
    pub fn mass_properties(&self) -> Option<([f64; 3], MassProperties)> {
        if !self.is_closed() || self.vertices.iter().flatten().any(|x| !x.is_finite()) {
            return None;
        }
        // Moments about the mean vertex: no cancellation for a mesh far from the origin.
        let r = self.vertex_mean();
        let (mut six_v, mut first, mut second) = (0.0, [0.0; 3], [[0.0; 3]; 3]);
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| sub(self.vertices[i as usize], r));
            let det = dot(a, cross(b, c));
            let s = [a[0] + b[0] + c[0], a[1] + b[1] + c[1], a[2] + b[2] + c[2]];
            six_v += det;
            for i in 0..3 {
                first[i] += det * s[i];
                for j in 0..3 {
                    second[i][j] += det * (a[i] * a[j] + b[i] * b[j] + c[i] * c[j] + s[i] * s[j]);
                }
            }
        }
        let (lo, hi) = self.bounds();
        let diagonal = dot(sub(hi, lo), sub(hi, lo)).sqrt();
        let volume = six_v / 6.0;
        // Also refuses NaN: the comparison is false for it.
        let encloses = volume.abs() > 1e-12 * diagonal.powi(3) && volume.is_finite();
        if !encloses {
            return None;
        }
        // int x dV = sum det s / 24, int x x^T dV = sum det (...) / 120, both flipped with the
        // volume's sign for an inward-facing mesh.
        let sign = volume.signum();
        let volume = volume.abs();
        let centre = first.map(|m| sign * m / 24.0 / volume);
        let mut inertia = [[0.0; 3]; 3];
        let mut c = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                c[i][j] = sign * second[i][j] / 120.0 - volume * centre[i] * centre[j];
            }
        }
        let trace = c[0][0] + c[1][1] + c[2][2];
        for i in 0..3 {
            for j in 0..3 {
                inertia[i][j] = if i == j { trace } else { 0.0 } - c[i][j];
            }
        }
        Some((
            [0, 1, 2].map(|k| r[k] + centre[k]),
            MassProperties { volume, inertia },
        ))
    }

    /// Mean of the vertices (the origin for none).
    fn vertex_mean(&self) -> [f64; 3] {
        let n = self.vertices.len().max(1) as f64;
        [0, 1, 2].map(|k| self.vertices.iter().map(|v| v[k]).sum::<f64>() / n)
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[cfg(test)]
mod tests;
