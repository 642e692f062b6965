//! The fluid checkpoint's header fields and small arrays: the small state
//! ([`SmallState`]) and the force series' summary state in and out of the container, and the
//! readers' density and velocity computed from a piece of populations.

use super::SaveContext;
use crate::checkpoint::{CheckpointReader, CheckpointWriter, Header, Kind};
use crate::fluid::forces::state::{SeriesState, SolidRows};
use crate::fluid::forces::ForceSample;
use crate::fluid::state::{ImmersedState, OutletVelocity, SmallState};
use crate::fluid::FluidError;
use murmur_common::lbm::ib::solid::SolidState;
use murmur_common::lbm::moments::density_momentum;
use murmur_common::lbm::{
    CollisionModel, Fp16C, Fp16S, Fp32, Lattice, Rates, Storage, StorageKind, Streaming, Units, Q,
};
use toml::Value;

/// Floats per solid state on disk: centre (3), rotation row-major (9), velocity (3), angular
/// velocity (3).
const SOLID_FLOATS: u64 = 18;
/// Values per pending force record: step, solid, force (3), torque (3).
const PENDING_VALUES: u64 = 8;
/// Values per kept force row: solid, sequence number, step, cd, cl.
const ROW_VALUES: u64 = 5;

fn int(v: u64) -> Value {
    Value::Integer(v as i64)
}

/// The header of a checkpoint of `small` in the run `cx` describes.
pub(super) fn header(small: &SmallState, cx: &SaveContext, backend: &str, layout: &str) -> Header {
    let l = small.lattice;
    let r = small.rates;
    let mut rates = toml::Table::new();
    for (k, v) in [
        ("shear", r.shear),
        ("bulk", r.bulk),
        ("high", r.high),
        ("lambda", r.lambda),
    ] {
        rates.insert(k.into(), Value::Float(f64::from(v)));
    }
    let mut h = Header::new(Kind::Fluid, small.step, small.step as f64 * cx.units.dt)
        .with_field("scene_name", cx.identity.name.as_str())
        .with_field("scene_hash", cx.identity.hash.as_str())
        .with_field("model", small.model.name())
        .with_field("storage", small.storage.name())
        .with_field("streaming", small.streaming.name())
        .with_field(
            "lattice",
            Value::Array(vec![int(l.nx.into()), int(l.ny.into()), int(l.nz.into())]),
        )
        .with_field("inlet_scale", f64::from(small.inlet_scale))
        .with_field("rates", Value::Table(rates))
        .with_field("dx_m", cx.units.dx)
        .with_field("dt_s", cx.units.dt)
        .with_field("rho0_kg_m3", cx.units.rho0)
        .with_field("written_by", backend)
        .with_field("layout", layout);
    if let Some(s) = cx.extra.last_output {
        h = h.with_field("last_output", int(s));
    }
    if let Some(s) = &cx.extra.series {
        if let Some((a, b)) = s.span {
            h = h.with_field("force_span", Value::Array(vec![int(a), int(b)]));
        }
        let solids = s
            .solids
            .iter()
            .map(|r| {
                let mut t = toml::Table::new();
                t.insert("stride".into(), int(r.stride));
                t.insert("seen".into(), int(r.seen));
                if let Some(l) = r.last_step {
                    t.insert("last_step".into(), int(l));
                }
                Value::Table(t)
            })
            .collect();
        h = h.with_field("force_solids", Value::Array(solids));
    }
    // The scene text last: the longest field.
    h.with_field("scene", cx.identity.text.as_str())
}

/// The decoded populations of each cell of `bytes` (canonical order, `storage` encoding).
fn cells(storage: StorageKind, bytes: &[u8]) -> impl Iterator<Item = [f32; Q]> + '_ {
    let b = storage.bytes();
    bytes.chunks_exact(Q * b).map(move |c| {
        let mut f = [0.0f32; Q];
        for (q, v) in f.iter_mut().enumerate() {
            let e = &c[q * b..(q + 1) * b];
            *v = match storage {
                StorageKind::Fp32 => Fp32::decode(q, f32::from_le_bytes([e[0], e[1], e[2], e[3]])),
                StorageKind::Fp16s => Fp16S::decode(q, u16::from_le_bytes([e[0], e[1]])),
                StorageKind::Fp16c => Fp16C::decode(q, u16::from_le_bytes([e[0], e[1]])),
            };
        }
        f
    })
}

/// The density (kg/m^3, little-endian FP32) of each cell of a piece.
pub(super) fn densities(storage: StorageKind, bytes: &[u8], units: &Units) -> Vec<u8> {
    per_cell(storage, bytes, 4, |f, out| {
        let (rho, _) = density_momentum(f);
        out.copy_from_slice(&(units.density_to_si(f64::from(rho)) as f32).to_le_bytes());
    })
}

/// `f` of each cell's decoded populations into its `width` bytes of the result, on every core.
fn per_cell(
    storage: StorageKind,
    bytes: &[u8],
    width: usize,
    f: impl Fn(&[f32; Q], &mut [u8]) + Sync,
) -> Vec<u8> {
    use rayon::prelude::*;
    const CELLS: usize = 4096;
    let cell = Q * storage.bytes();
    let n = bytes.len() / cell;
    let mut out = vec![0u8; n * width];
    out.par_chunks_mut(CELLS * width)
        .zip(bytes.par_chunks(CELLS * cell))
        .for_each(|(o, b)| {
            for (pops, o) in cells(storage, b).zip(o.chunks_exact_mut(width)) {
                f(&pops, o);
            }
        });
    out
}

/// The velocity (m/s, three little-endian FP32 per cell) of each cell of a piece: the momentum
/// of the stored populations over their density.
pub(super) fn velocities(storage: StorageKind, bytes: &[u8], units: &Units) -> Vec<u8> {
    per_cell(storage, bytes, 12, |f, out| {
        let (rho, j) = density_momentum(f);
        for (c, o) in j.iter().zip(out.chunks_exact_mut(4)) {
            let u = if rho != 0.0 { c / rho } else { 0.0 };
            o.copy_from_slice(&(units.velocity_to_si(f64::from(u)) as f32).to_le_bytes());
        }
    })
}

/// Writes the small state's arrays (the fields went into the header).
pub(super) fn write_small(w: &mut CheckpointWriter, s: &SmallState) -> Result<(), FluidError> {
    if !s.outlet_u.is_empty() {
        let k = s.outlet_u.len() as u64;
        let cells: Vec<u32> = s.outlet_u.iter().map(|o| o.cell).collect();
        let u: Vec<f32> = s.outlet_u.iter().flat_map(|o| o.u).collect();
        w.write_slice("outlet_cells", &[k], &cells)?;
        w.write_slice("outlet_u", &[k, 3], &u)?;
    }
    if !s.velocity.is_empty() {
        let n = (s.velocity.len() / 3) as u64;
        w.write_slice("wale_velocity", &[3, n], &s.velocity)?;
    }
    if !s.band.is_empty() {
        let k = s.band.len() as u64;
        let cells: Vec<u32> = s.band.iter().map(|b| b.cell).collect();
        let force: Vec<f32> = s.band.iter().flat_map(|b| b.force).collect();
        w.write_slice("band_cells", &[k], &cells)?;
        w.write_slice("band_force", &[k, 3], &force)?;
    }
    if let Some(ib) = &s.immersed {
        let solids: Vec<f32> = ib
            .solids
            .iter()
            .flat_map(|st| {
                let mut v = st.center.to_vec();
                v.extend(st.rotation.iter().flatten());
                v.extend(st.velocity);
                v.extend(st.omega);
                v
            })
            .collect();
        w.write_slice(
            "solid_state",
            &[ib.solids.len() as u64, SOLID_FLOATS],
            &solids,
        )?;
        let n = ib.sample_force.len() as u64 / 3;
        w.write_slice("sample_force", &[n, 3], &ib.sample_force)?;
        let pending: Vec<f64> = ib
            .pending
            .iter()
            .flat_map(|p| {
                let mut v = vec![p.step as f64, p.solid as f64];
                v.extend(p.force);
                v.extend(p.torque);
                v
            })
            .collect();
        w.write_slice(
            "pending_forces",
            &[ib.pending.len() as u64, PENDING_VALUES],
            &pending,
        )?;
    }
    Ok(())
}

/// Writes the force series' kept rows.
pub(super) fn write_series(w: &mut CheckpointWriter, s: &SeriesState) -> Result<(), FluidError> {
    let rows: Vec<f64> = s
        .solids
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.rows
                .iter()
                .flat_map(move |&(seq, step, cd, cl)| [i as f64, seq as f64, step as f64, cd, cl])
        })
        .collect();
    w.write_slice(
        "force_rows",
        &[rows.len() as u64 / ROW_VALUES, ROW_VALUES],
        &rows,
    )?;
    Ok(())
}

fn bad(r: &CheckpointReader, what: &str) -> FluidError {
    FluidError::Invalid(format!(
        "checkpoint {} is corrupt: {what}",
        r.path().display()
    ))
}

fn field<'a>(r: &'a CheckpointReader, key: &str) -> Result<&'a Value, FluidError> {
    r.header()
        .fields
        .get(key)
        .ok_or_else(|| bad(r, &format!("no header field {key}")))
}

fn parse<T: Copy>(
    r: &CheckpointReader,
    key: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, FluidError> {
    let v = field(r, key)?.as_str().unwrap_or_default().to_string();
    all.iter()
        .copied()
        .find(|&t| name(t) == v)
        .ok_or_else(|| bad(r, &format!("{key} {v:?} is not one murmur knows")))
}

fn float(r: &CheckpointReader, v: Option<&Value>, what: &str) -> Result<f64, FluidError> {
    v.and_then(|v| v.as_float())
        .ok_or_else(|| bad(r, &format!("{what} is not a number")))
}

/// The array `name`, if the checkpoint has it.
fn optional<T: crate::checkpoint::Element>(
    r: &mut CheckpointReader,
    name: &str,
) -> Result<Option<Vec<T>>, FluidError> {
    match r.header().array(name) {
        Some(_) => Ok(Some(r.read_vec(name)?)),
        None => Ok(None),
    }
}

/// The small state from the header and arrays.
pub(super) fn read_small(r: &mut CheckpointReader) -> Result<SmallState, FluidError> {
    let model = parse(r, "model", &CollisionModel::ALL, CollisionModel::name)?;
    let storage = parse(r, "storage", &StorageKind::ALL, StorageKind::name)?;
    let streaming = parse(
        r,
        "streaming",
        &[Streaming::Pull, Streaming::InPlace],
        Streaming::name,
    )?;
    let dims: Vec<u32> = field(r, "lattice")?
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_integer())
                .map(|v| v as u32)
                .collect()
        })
        .unwrap_or_default();
    let [nx, ny, nz] = dims[..] else {
        return Err(bad(r, "lattice is not three whole numbers"));
    };
    let rates = field(r, "rates")?.as_table().cloned().unwrap_or_default();
    let rate = |k: &str| float(r, rates.get(k), &format!("rates.{k}")).map(|v| v as f32);
    let rates = Rates {
        shear: rate("shear")?,
        bulk: rate("bulk")?,
        high: rate("high")?,
        lambda: rate("lambda")?,
    };
    let inlet_scale = float(r, r.header().fields.get("inlet_scale"), "inlet_scale")? as f32;
    let cells: Vec<u32> = optional(r, "outlet_cells")?.unwrap_or_default();
    let u: Vec<f32> = optional(r, "outlet_u")?.unwrap_or_default();
    if u.len() != 3 * cells.len() {
        return Err(bad(
            r,
            "outlet_u does not hold three values per outlet cell",
        ));
    }
    let outlet_u = cells
        .iter()
        .zip(u.chunks_exact(3))
        .map(|(&cell, u)| OutletVelocity {
            cell,
            u: [u[0], u[1], u[2]],
        })
        .collect();
    let immersed = match optional::<f32>(r, "solid_state")? {
        None => None,
        Some(solids) => {
            let sample_force: Vec<f32> = r.read_vec("sample_force")?;
            let pending: Vec<f64> = r.read_vec("pending_forces")?;
            Some(ImmersedState {
                solids: solids
                    .chunks_exact(SOLID_FLOATS as usize)
                    .map(|v| SolidState {
                        center: [v[0], v[1], v[2]],
                        _pad0: 0,
                        rotation: [[v[3], v[4], v[5]], [v[6], v[7], v[8]], [v[9], v[10], v[11]]],
                        velocity: [v[12], v[13], v[14]],
                        _pad1: 0,
                        omega: [v[15], v[16], v[17]],
                        _pad2: 0,
                    })
                    .collect(),
                sample_force,
                pending: pending
                    .chunks_exact(PENDING_VALUES as usize)
                    .map(|v| ForceSample {
                        step: v[0] as u64,
                        solid: v[1] as usize,
                        force: [v[2], v[3], v[4]],
                        torque: [v[5], v[6], v[7]],
                    })
                    .collect(),
            })
        }
    };
    // Checkpoints before the band's force was kept hold none (their fields near solids,
    // until the next step, lack the last step's half force).
    let band = match optional::<u32>(r, "band_cells")? {
        None => Vec::new(),
        Some(cells) => {
            let force: Vec<f32> = r.read_vec("band_force")?;
            if force.len() != 3 * cells.len() {
                return Err(bad(
                    r,
                    "band_force does not hold three values per band cell",
                ));
            }
            cells
                .iter()
                .zip(force.chunks_exact(3))
                .map(|(&cell, f)| crate::fluid::ib::plan::BandForce {
                    cell,
                    force: [f[0], f[1], f[2]],
                })
                .collect()
        }
    };
    Ok(SmallState {
        lattice: Lattice::new(nx, ny, nz),
        model,
        storage,
        streaming,
        step: r.header().step,
        inlet_scale,
        rates,
        outlet_u,
        immersed,
        band,
        velocity: optional(r, "wale_velocity")?.unwrap_or_default(),
    })
}

/// The force series' summary state, if the checkpoint has one.
pub(super) fn read_series(r: &mut CheckpointReader) -> Result<Option<SeriesState>, FluidError> {
    let Some(solids) = r.header().fields.get("force_solids").cloned() else {
        return Ok(None);
    };
    let int_of = |t: &toml::Table, k: &str| t.get(k).and_then(|v| v.as_integer()).map(|v| v as u64);
    let mut out: Vec<SolidRows> = Vec::new();
    for s in solids.as_array().into_iter().flatten() {
        let t = s.as_table().cloned().unwrap_or_default();
        out.push(SolidRows {
            rows: Vec::new(),
            stride: int_of(&t, "stride").unwrap_or(1),
            seen: int_of(&t, "seen").unwrap_or(0),
            last_step: int_of(&t, "last_step"),
        });
    }
    let rows: Vec<f64> = r.read_vec("force_rows")?;
    for v in rows.chunks_exact(ROW_VALUES as usize) {
        let solid = out
            .get_mut(v[0] as usize)
            .ok_or_else(|| bad(r, "force_rows names a solid the header does not list"))?;
        solid.rows.push((v[1] as u64, v[2] as u64, v[3], v[4]));
    }
    let span = r
        .header()
        .fields
        .get("force_span")
        .and_then(|v| v.as_array())
        .and_then(|a| {
            Some((
                a.first()?.as_integer()? as u64,
                a.get(1)?.as_integer()? as u64,
            ))
        });
    Ok(Some(SeriesState { span, solids: out }))
}
