//! A scene's flocks in `fluid run`: the `[[flocks]]` tables read from the scene file (unknown
//! keys refused naming their path and line), checked and converted against the built scene
//! (its units, box, faces and solids), and the rider that steps them after every fluid step and
//! writes `NAME_STEP_<flock>.npz` (the flock's snapshot: `pos`, `vel`, `id` in SI units) and
//! `.vtp` (points with velocity, for ParaView) beside the fields.

use super::cuda::BoidArrays;
use super::distance::SolidDistances;
use super::gpu_ride::GpuRide;
use super::riding::{Riding, RidingFlock};
use super::spec::{ColourBy, FlockSpec, Frame, Way, HOST_BYTES_PER_BOID};
use super::CpuBoids;
use crate::fluid::ib::solid::Solid;
use crate::fluid::output::{write_points, PointArray};
use crate::fluid::resume::{ArrayValues, NamedArray};
use crate::fluid::riders::{Drawn, Rider};
use crate::fluid::scene::Scene;
use crate::fluid::sink::Out;
use crate::fluid::{FluidBackend, FluidError};
use murmur_common::coupling::sdf;
use murmur_common::coupling::BoidBox;
use murmur_common::Vec3;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The part of a scene file this layer reads.
#[derive(Deserialize)]
struct Flocks {
    #[serde(default)]
    flocks: Vec<FlockSpec>,
}

/// The flocks of the scene text `text`; an error is one line naming the key path and line
/// (`unknown field `speed` ... at flocks[0] (line 40)`).
pub fn read_flocks(text: &str) -> Result<Vec<FlockSpec>, String> {
    let describe = crate::fluid::scene::file::describe;
    let de = toml::Deserializer::parse(text).map_err(|e| describe(text, &e, None))?;
    serde_path_to_error::deserialize::<_, Flocks>(de)
        .map(|f| f.flocks)
        .map_err(|e| {
            let path = e.path().to_string();
            describe(text, e.inner(), Some(path))
        })
}

/// Where the flocks of `scene` live: its units, the fluid box's extent (m) and the lattice
/// coordinate of the physical origin (0.5 past the wall layer, -0.5 on a periodic axis).
pub fn frame(scene: &Scene) -> Frame {
    let l = scene.setup.lattice();
    let periodic = scene.setup.immersed.periodic;
    let n = [l.nx, l.ny, l.nz];
    let fluid = |a: usize| n[a] as f64 - if periodic[a] { 0.0 } else { 2.0 };
    Frame {
        units: scene.units,
        extent: [0, 1, 2].map(|a| scene.units.length_to_si(fluid(a))),
        origin: [0, 1, 2].map(|a| if periodic[a] { -0.5 } else { 0.5 }),
    }
}

/// The boids' box of `scene`: the fluid box in lattice coordinates (its wall planes, one
/// period of a periodic axis), wrapping across the periodic axes.
pub fn bounds(scene: &Scene) -> BoidBox {
    let f = frame(scene);
    let hi = f.cells(f.extent).to_array();
    use crate::fluid::scene::FaceConfig as F;
    let faces = &scene.file.faces;
    let pairs = [
        (&faces.x_min, &faces.x_max),
        (&faces.y_min, &faces.y_max),
        (&faces.z_min, &faces.z_max),
    ];
    let through = |(lo, hi): (&F, &F)| {
        matches!(
            (lo, hi),
            (F::Inlet { .. }, F::Outlet { .. }) | (F::Outlet { .. }, F::Inlet { .. })
        )
    };
    let bits = |on: &dyn Fn(usize) -> bool| (0..3).filter(|&a| on(a)).map(|a| 1u32 << a).sum();
    BoidBox {
        lo: f.origin.map(|o| o as f32),
        hi,
        periodic: bits(&|a| scene.setup.immersed.periodic[a]),
        through: bits(&|a| through(pairs[a])),
    }
}

/// A scene's flocks riding its run (module docs).
pub struct SceneFlocks {
    ride: Riding,
    /// Where the flocks step: decided at the first step (on the fluid's GPU when it has one).
    gpu: Place,
    /// Per flock: its colour, what colours its boids and the speed at the map's top (lattice).
    looks: Vec<(u32, ColourBy, f32)>,
    names: Vec<String>,
    counts: Vec<u64>,
    solids: Vec<Solid>,
    /// The solids' signed distances the flocks steer by.
    distances: SolidDistances,
    setup: crate::fluid::Setup,
    frame: Frame,
    /// Time in the flocks' substeps and the fluid steps ridden.
    busy: Duration,
    steps: u64,
    header: Vec<String>,
}

impl SceneFlocks {
    /// The flocks of `specs` in `scene`, riding from the state `backend` holds now.
    pub fn open(
        specs: &[FlockSpec],
        scene: &Scene,
        backend: &mut dyn FluidBackend,
    ) -> Result<SceneFlocks, FluidError> {
        let frame = frame(scene);
        let bounds = bounds(scene);
        let solids: Vec<_> = scene.setup.force_solids().cloned().collect();
        let t0 = backend.step_count() as f64;
        // The meshes' grids reach as far as the farthest-seeing flock (within the domain).
        let most = frame.extent.iter().copied().fold(0.0, f64::max);
        let reach = specs
            .iter()
            .map(|s| s.avoid)
            .filter(|a| a.is_finite())
            .fold(0.0, f64::max)
            .min(most);
        let distances = SolidDistances::of(&solids, scene.units.length_to_lattice(reach));
        let start_list = distances.obstacles(&solids, t0);
        let start = distances.list(&start_list);
        let invalid = |e: String| FluidError::Invalid(e);
        // The boids' host memory against what is available, all flocks together.
        let available = crate::preflight::available_memory()
            .map_err(|e| invalid(e.to_string()))?
            .unwrap_or(u64::MAX);
        let mut left = available >> 20;
        let mut names: Vec<String> = Vec::new();
        let mut header = Vec::new();
        let mut flocks = Vec::new();
        let mut counts = Vec::new();
        let mut looks = Vec::new();
        let u_lb = scene
            .units
            .velocity_to_lattice(scene.file.physical.velocity) as f32;
        for (i, spec) in specs.iter().enumerate() {
            let l = spec
                .lattice(i, &frame, &start, left)
                .map_err(|e| invalid(e.to_string()))?;
            left -= (spec.count * HOST_BYTES_PER_BOID).div_ceil(1 << 20);
            let name = spec.name.clone().unwrap_or(match i {
                0 => "boids".to_string(),
                _ => format!("boids{i}"),
            });
            if names.contains(&name) {
                return Err(invalid(format!(
                    "flock {i}: the name {name:?} is taken by an earlier flock"
                )));
            }
            let pos = spec.positions(&frame);
            let count = pos.len();
            let boids = CpuBoids::new(
                pos,
                vec![Vec3::ZERO; count],
                l.rates,
                1.0 / spec.substeps as f64,
                l.tau_p,
                bounds,
            )
            .and_then(|b| b.avoiding(l.avoidance))
            .and_then(|b| match l.way {
                Way::TwoWay => b.two_way(l.mass as f32),
                Way::OneWay => Ok(b),
            })
            .map_err(|e| invalid(format!("flock {i}: {e}")))?
            .seeing(distances.samples.clone());
            let mut boids = boids;
            // A spawn region may graze a solid.
            for x in boids.pos.iter_mut() {
                *x = sdf::keep_out(&start, *x, &l.avoidance);
            }
            header.push(format!(
                "flock {name}: {count} boids, {} substep(s) per step, tau_p {:.3} steps, {}, \
                 {:.1} MiB on the host",
                spec.substeps,
                l.tau_p,
                match l.way {
                    Way::OneWay => "one-way",
                    Way::TwoWay => "two-way",
                },
                (spec.count * HOST_BYTES_PER_BOID) as f64 / (1u64 << 20) as f64
            ));
            names.push(name);
            counts.push(spec.count);
            let top = match spec.colour_by {
                ColourBy::Relative => l.rates.max_speed,
                _ => 2.0 * u_lb,
            };
            looks.push((spec.packed_colour(), spec.colour_by, top));
            flocks.push(RidingFlock {
                boids,
                substeps: spec.substeps,
            });
        }
        for (s, sdf) in solids.iter().zip(&distances.shapes) {
            if let Some(g) = sdf.filter(|d| d.kind == sdf::GRID).map(|d| d.grid) {
                header.push(format!(
                    "flocks: the signed distance of mesh solid {} sampled on {}x{}x{} nodes {:.3} \
                     cells apart ({:.1} MiB)",
                    s.name,
                    g.dims[0],
                    g.dims[1],
                    g.dims[2],
                    g.h,
                    g.len() as f64 * 4.0 / (1 << 20) as f64
                ));
            }
        }
        let mut ride = Riding::of(&scene.setup, backend, flocks)?;
        // A boid starts moving with the air where it is (at rest relative to it).
        ride.start_with_the_air();
        if let Some(s) = ride.slab() {
            header.push(format!(
                "flocks: on {} rank{}, each holding the boids in its slab along {} (the CPU \
                 reference of the ride: the fields around each slab to the host)",
                s.ranks(),
                if s.ranks() == 1 { "" } else { "s" },
                ["x", "y", "z"][s.axis()]
            ));
        }
        Ok(SceneFlocks {
            ride,
            gpu: Place::Undecided,
            looks,
            names,
            counts,
            solids,
            distances,
            setup: scene.setup.clone(),
            frame,
            busy: Duration::ZERO,
            steps: 0,
            header,
        })
    }

    /// Flock `k`'s boids in the order it keeps them (from the GPU when they ride there).
    /// On one rank of several: every rank's boids in id order (collective).
    pub fn state(&self, k: usize) -> Result<BoidArrays, FluidError> {
        match &self.gpu {
            Place::Gpu(g) => g.state(k),
            _ => {
                let b = &self.ride.flocks[k].boids;
                match self.ride.slab() {
                    None => Ok(b.arrays()),
                    Some(s) => s.gather(b.arrays(), b.mass() > 0.0),
                }
            }
        }
    }

    /// Whether the flocks ride on the fluid's GPU (decided at the first step).
    pub fn on_gpu(&self) -> bool {
        matches!(self.gpu, Place::Gpu(_))
    }
}

/// A boid's disc in the views, cells.
pub const BOID_RADIUS: f32 = 0.3;

/// Where a scene's flocks step.
enum Place {
    /// Not yet stepped: the CPU ride holds them.
    Undecided,
    Cpu,
    Gpu(Box<GpuRide>),
}

/// The checkpoint member of flock `name`'s array `what` (`pos`, `vel`, `rel`: lattice units;
/// `id`).
fn member(name: &str, what: &str) -> String {
    format!("flock_{name}_{what}")
}

impl Rider for SceneFlocks {
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        let t0 = Instant::now();
        // The fluid has just stepped from `now - 1` to `now`.
        let start = backend.step_count() as f64 - 1.0;
        let (solids, distances) = (&self.solids, &self.distances);
        if let (Place::Undecided, Some(_)) = (&self.gpu, self.ride.slab()) {
            // On several ranks the flocks ride on the CPU (the fields around each slab).
            self.gpu = Place::Cpu;
        }
        if let Place::Undecided = self.gpu {
            let setup = &self.setup;
            self.gpu = match GpuRide::open(setup, backend, &self.ride.flocks, self.ride.before())? {
                Some(g) => Place::Gpu(Box::new(g)),
                None => Place::Cpu,
            };
        }
        match &mut self.gpu {
            Place::Gpu(g) => {
                g.ride(backend, &|s| distances.obstacles(solids, start + s))?;
                g.synchronize()?;
            }
            _ => self
                .ride
                .ride(backend, &|s| distances.obstacles(solids, start + s))?,
        }
        self.busy += t0.elapsed();
        self.steps += 1;
        Ok(())
    }

    fn write(
        &mut self,
        out: &Out,
        name: &str,
        step: u64,
        _: &mut dyn FluidBackend,
    ) -> Result<Vec<PathBuf>, FluidError> {
        let units = self.frame.units;
        let time = step as f64 * units.dt;
        let mut written = Vec::new();
        for k in 0..self.names.len() {
            // `NAME_STEP_FLOCK` in the output folder, `STEM_FLOCK` beside an output file.
            let flock = match out {
                Out::Dir(_) => format!("{step:07}_{}", self.names[k]),
                _ => self.names[k].clone(),
            };
            let Some(npz) = out.beside(name, &format!("{flock}.npz")) else {
                continue;
            };
            let b = self.state(k)?;
            // On several ranks rank 0 writes the gathered flock.
            if self.ride.slab().is_some_and(|s| s.rank() != 0) {
                continue;
            }
            // Metres from the domain's origin, as the scene's positions and the .vtp.
            let origin = Vec3::from_array(self.frame.origin.map(|o| o as f32));
            let from_origin: Vec<Vec3> = b.pos.iter().map(|&p| p - origin).collect();
            let state = super::state_si(&from_origin, &b.vel, &b.id, &units);
            crate::flock::snapshot::save(&npz, &state)
                .map_err(|e| FluidError::Invalid(e.to_string()))?;
            written.push(npz);
            if let (Out::Dir(_), Some(vtp)) = (out, out.beside(name, &format!("{flock}.vtp"))) {
                write_boids_vtp(&vtp, &b, &self.frame, time)?;
                written.push(vtp);
            }
        }
        Ok(written)
    }

    fn header(&self) -> Vec<String> {
        self.header.clone()
    }

    fn drawn(&self) -> Result<Drawn, FluidError> {
        use murmur_common::render::fluid::{colour_map_rgba, MAP_SEQUENTIAL};
        let mut d = Drawn {
            radius: BOID_RADIUS,
            ..Drawn::default()
        };
        for (k, &(colour, by, top)) in self.looks.iter().enumerate() {
            let b = &self.state(k)?;
            d.pos.extend(b.pos.iter().map(|p| p.to_array()));
            let speed = |v: &Vec3| murmur_common::math::length(*v) / top;
            match by {
                ColourBy::Colour => d.colour.extend(std::iter::repeat_n(colour, b.pos.len())),
                ColourBy::Speed => d.colour.extend(
                    b.vel
                        .iter()
                        .map(|v| colour_map_rgba(MAP_SEQUENTIAL, speed(v))),
                ),
                ColourBy::Relative => d.colour.extend(
                    b.rel
                        .iter()
                        .map(|v| colour_map_rgba(MAP_SEQUENTIAL, speed(v))),
                ),
            }
        }
        Ok(d)
    }

    /// On one rank of several: every rank's boids in rank order (collective).
    fn arrays(&mut self, _: &mut dyn FluidBackend) -> Result<Vec<NamedArray>, FluidError> {
        let mut out = Vec::new();
        for (k, name) in self.names.iter().enumerate() {
            let b = &match (&self.gpu, self.ride.slab()) {
                (Place::Gpu(_), _) | (_, None) => self.state(k)?,
                (_, Some(s)) => {
                    let own = &self.ride.flocks[k].boids;
                    s.gather_in_rank_order(own.arrays(), own.mass() > 0.0)?
                }
            };
            let n = b.pos.len() as u64;
            let flat = |v: &[Vec3]| v.iter().flat_map(|p| p.to_array()).collect::<Vec<f32>>();
            for (what, v) in [("pos", &b.pos), ("vel", &b.vel), ("rel", &b.rel)] {
                out.push(NamedArray {
                    name: member(name, what),
                    shape: vec![n, 3],
                    values: ArrayValues::F32(flat(v)),
                });
            }
            out.push(NamedArray {
                name: member(name, "id"),
                shape: vec![n],
                values: ArrayValues::U32(b.id.clone()),
            });
            // A two-way flock's impulses the fluid's next step applies.
            if !b.push.is_empty() {
                out.push(NamedArray {
                    name: member(name, "push"),
                    shape: vec![n, 3],
                    values: ArrayValues::U64(b.push.clone()),
                });
            }
        }
        Ok(out)
    }

    fn restore(&mut self, path: &Path, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        if !matches!(self.gpu, Place::Undecided) {
            return Err(FluidError::Invalid(
                "the flocks restore before their first step".into(),
            ));
        }
        let mut r = crate::checkpoint::CheckpointReader::open(path)?;
        for k in 0..self.names.len() {
            let name = &self.names[k];
            let mut read3 = |what: &str| -> Result<Vec<Vec3>, FluidError> {
                let v = r.read_vec::<f32>(&member(name, what)).map_err(|e| {
                    FluidError::Invalid(format!(
                        "the checkpoint {} holds no flock {name:?} ({e}): it was written \
                         without the scene's flocks",
                        path.display()
                    ))
                })?;
                Ok(v.chunks_exact(3)
                    .map(|c| Vec3::new(c[0], c[1], c[2]))
                    .collect())
            };
            let (pos, vel, rel) = (read3("pos")?, read3("vel")?, read3("rel")?);
            let id = r.read_vec::<u32>(&member(name, "id"))?;
            if id.len() as u64 != self.counts[k] {
                return Err(FluidError::Invalid(format!(
                    "the checkpoint {} holds {} boids of flock {name:?}, the scene {}",
                    path.display(),
                    id.len(),
                    self.counts[k]
                )));
            }
            let boids = &mut self.ride.flocks[k].boids;
            boids
                .restore(pos, vel, rel, id)
                .map_err(|e| FluidError::Invalid(format!("flock {name:?}: {e}")))?;
            if boids.mass() > 0.0 {
                let push = r.read_vec::<u64>(&member(name, "push"))?;
                let push = push.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
                boids
                    .restore_pushes(push)
                    .map_err(|e| FluidError::Invalid(format!("flock {name:?}: {e}")))?;
            }
        }
        // On several ranks each keeps the boids in its slab (in the order kept).
        self.ride.keep_own();
        // The impulses pending at the checkpoint go to the fluid's next step.
        self.ride.push(backend)
    }

    fn summary(&self) -> Vec<String> {
        let boids: u64 = self.counts.iter().sum();
        let ms = self.busy.as_secs_f64() * 1e3 / self.steps.max(1) as f64;
        vec![format!(
            "flocks: {boids} boids in {} flock(s), {ms:.3} ms per fluid step {}",
            self.names.len(),
            match self.gpu {
                Place::Gpu(_) =>
                    "on the fluid's GPU (its fields computed into the flocks' air, substeps)",
                _ => "on the CPU (fields to the host, substeps)",
            }
        )]
    }
}

/// The boids as a `.vtp` point cloud (SI): positions, ground velocity, velocity relative to the
/// air, speed and id.
fn write_boids_vtp(
    path: &Path,
    boids: &BoidArrays,
    frame: &Frame,
    time: f64,
) -> Result<(), FluidError> {
    let u = &frame.units;
    let o = frame.origin;
    let points: Vec<f32> = boids
        .pos
        .iter()
        .flat_map(|p| {
            let p = p.to_array();
            [0, 1, 2].map(|a| u.length_to_si(p[a] as f64 - o[a]) as f32)
        })
        .collect();
    let si = |v: &[Vec3]| -> Vec<f32> {
        v.iter()
            .flat_map(|w| w.to_array().map(|c| u.velocity_to_si(c as f64) as f32))
            .collect()
    };
    let velocity = si(&boids.vel);
    let relative = si(&boids.rel);
    let speed: Vec<f32> = velocity
        .chunks(3)
        .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt())
        .collect();
    let id: Vec<u8> = boids.id.iter().flat_map(|i| i.to_le_bytes()).collect();
    let arrays = [
        PointArray::f32("velocity", 3, &velocity),
        PointArray::f32("relative_velocity", 3, &relative),
        PointArray::f32("speed", 1, &speed),
        PointArray {
            kind: "UInt32",
            name: "id",
            components: 1,
            bytes: id,
        },
    ];
    write_points(path, &points, &arrays, ("speed", "velocity"), time)
}

/// [`crate::fluid::riders::OpenRider`] of the coupled flocks: the flocks of the scene file at
/// `path` riding `scene` on `backend`, or `None` when it has none.
pub fn open_rider(
    path: &Path,
    scene: &Scene,
    backend: &mut dyn FluidBackend,
) -> Result<Option<Box<dyn Rider>>, FluidError> {
    if scene.file.flocks.is_empty() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| FluidError::Invalid(format!("cannot read scene {}: {e}", path.display())))?;
    let specs = read_flocks(&text)
        .map_err(|e| FluidError::Invalid(format!("scene {}: {e}", path.display())))?;
    let flocks = SceneFlocks::open(&specs, scene, backend)
        .map_err(|e| FluidError::Invalid(format!("scene {}: {e}", path.display())))?;
    Ok(Some(Box::new(flocks)))
}
