//! A coupled flock as a scene describes it, in SI units (the `[[flocks]]` table's fields), its
//! checks and its conversion to lattice units: rule rates per fluid step, radii and avoidance in
//! cells, `tau_p` in fluid steps, the mass in the fluid's density scale (cells^3 of the reference
//! density). Every refusal is one line, before any step.

use murmur_common::coupling::sdf::{Avoidance, ObstacleList};
use murmur_common::coupling::{two_way_stable, Rates};
use murmur_common::lbm::Units;
use murmur_common::Vec3;
use serde::Deserialize;

/// Where a flock's boids start.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Spawn {
    /// Uniformly in the box `lo..hi` (m).
    Box { lo: [f64; 3], hi: [f64; 3] },
    /// Uniformly in the ball of `radius` (m) about `center` (m).
    Sphere { center: [f64; 3], radius: f64 },
}

/// One-way (the air moves the boids) or two-way (the boids push back).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    #[default]
    OneWay,
    TwoWay,
}

/// How the views colour a flock's boids.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ColourBy {
    /// The flock's `colour`.
    #[default]
    Colour,
    /// Ground speed, 0 to twice the scene's `U`, on the sequential map.
    Speed,
    /// Speed relative to the air, 0 to `max_speed`, on the sequential map.
    Relative,
}

/// A flock of a scene, SI units.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlockSpec {
    pub count: u64,
    pub spawn: Spawn,
    #[serde(default)]
    pub seed: u64,
    /// Cohesion, separation and alignment rates (1/s).
    pub rates: [f64; 3],
    /// Cohesion, separation and alignment radii (m).
    pub radii: [f64; 3],
    /// Speed limit relative to the air (m/s).
    pub max_speed: f64,
    /// Response time (s); 0: tracers that obey the rules.
    #[serde(default)]
    pub tau_p: f64,
    /// Mass of one boid (kg); used by two-way coupling.
    #[serde(default)]
    pub mass: f64,
    /// Distance within which the boids steer off solids and walls (m); 0: no steering.
    #[serde(default)]
    pub avoid: f64,
    /// The avoidance rule's rate (1/s).
    #[serde(default)]
    pub avoid_rate: f64,
    #[serde(default)]
    pub coupling: Way,
    /// Flock substeps per fluid step.
    #[serde(default = "one")]
    pub substeps: u32,
    /// Name in output files (`NAME_STEP_<name>.npz`); default `boids`, `boids1`, ... by place.
    #[serde(default)]
    pub name: Option<String>,
    /// Colour in the views, `#rrggbb` (default `#ffcc33`).
    #[serde(default)]
    pub colour: Option<String>,
    /// What the views colour the boids by.
    #[serde(default)]
    pub colour_by: ColourBy,
}

impl FlockSpec {
    /// The flock's colour packed as the views take it (`0xAABBGGRR`); its `colour` checked by
    /// [`FlockSpec::lattice`] first.
    pub fn packed_colour(&self) -> u32 {
        let hex = self.colour.as_deref().unwrap_or("#ffcc33");
        let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0xffcc33);
        let (r, g, b) = (v >> 16 & 0xff, v >> 8 & 0xff, v & 0xff);
        0xff00_0000 | b << 16 | g << 8 | r
    }
}

fn one() -> u32 {
    1
}

/// Where a scene's flocks live: the scene's units, the domain's extent `0..extent` (m) and the
/// lattice coordinate of the physical origin (cell centres at whole coordinates).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub units: Units,
    pub extent: [f64; 3],
    pub origin: [f64; 3],
}

impl Frame {
    /// Lattice coordinates of the physical point `p` (m).
    pub fn cells(&self, p: [f64; 3]) -> Vec3 {
        let c = |a: usize| (self.units.length_to_lattice(p[a]) + self.origin[a]) as f32;
        Vec3::new(c(0), c(1), c(2))
    }
}

/// A flock in lattice units, ready for [`super::CpuBoids`].
#[derive(Clone, Debug, PartialEq)]
pub struct LatticeFlock {
    pub rates: Rates,
    /// Response time, fluid steps.
    pub tau_p: f64,
    /// Mass in the fluid's density scale (reference density x cell volume = 1).
    pub mass: f64,
    pub avoidance: Avoidance,
    pub way: Way,
}

/// Bytes per boid of a coupled flock on the host (`CpuBoids`: position, ground and relative
/// velocities, id, and the sort's scratch: key, order and a spare of each permuted array).
pub const HOST_BYTES_PER_BOID: u64 = 3 * 12 + 4 + 4 + 8 + 12 + 4;

/// Why a scene's flock cannot run, one line each.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("flock {0}: {1} must be a finite number >= 0, got {2}")]
    Negative(usize, &'static str, f64),
    #[error("flock {0}: two-way coupling needs tau_p > 0 (the boids' drag is what pushes back)")]
    TwoWayTracers(usize),
    #[error("flock {0}: two-way coupling needs a mass > 0")]
    TwoWayMassless(usize),
    #[error(
        "flock {index}: two-way coupling is unstable at one substep of {dt} steps with tau_p = \
         {tau_p:.3} steps and mass {mass:.3} (needs dt <= 2 tau_p / (1 + m / (rho V))): raise \
         the substeps, tau_p or lower the mass"
    )]
    Unstable {
        index: usize,
        dt: f64,
        tau_p: f64,
        mass: f64,
    },
    #[error("flock {index}: its avoidance distance {avoid} m is above the domain's smallest extent {most} m")]
    AvoidTooFar { index: usize, avoid: f64, most: f64 },
    #[error("flock {index}: its spawn region reaches outside the domain (0..{extent:?} m)")]
    SpawnOutside { index: usize, extent: [f64; 3] },
    #[error("flock {index}: its spawn region lies inside a solid (at {at:?} m)")]
    SpawnInSolid { index: usize, at: [f64; 3] },
    #[error("flock {index}: {count} boids need {need} MiB on the host, more than the {limit} MiB allowed")]
    TooMany {
        index: usize,
        count: u64,
        need: u64,
        limit: u64,
    },
    #[error("flock {0}: count must be at least 1")]
    Empty(usize),
    #[error("flock {0}: colour must be #rrggbb, got {1:?}")]
    Colour(usize, String),
    #[error("flock {0}: substeps must be at least 1")]
    NoSubsteps(usize),
    #[error("flock {0}: name must be letters, digits, '-' or '_', got {1:?}")]
    Name(usize, String),
}

impl FlockSpec {
    /// Flock `index` of a scene checked and converted in `frame`, `obstacles` the solids at
    /// the start, `limit_mib` the host memory the boids may take.
    pub fn lattice(
        &self,
        index: usize,
        frame: &Frame,
        obstacles: &ObstacleList,
        limit_mib: u64,
    ) -> Result<LatticeFlock, SpecError> {
        let (units, extent) = (&frame.units, frame.extent);
        let fine = |v: f64| v.is_finite() && v >= 0.0;
        for (name, v) in [
            ("tau_p", self.tau_p),
            ("mass", self.mass),
            ("avoid", self.avoid),
            ("avoid_rate", self.avoid_rate),
            ("max_speed", self.max_speed),
            ("rates[0]", self.rates[0]),
            ("rates[1]", self.rates[1]),
            ("rates[2]", self.rates[2]),
            ("radii[0]", self.radii[0]),
            ("radii[1]", self.radii[1]),
            ("radii[2]", self.radii[2]),
        ] {
            if !fine(v) {
                return Err(SpecError::Negative(index, name, v));
            }
        }
        if self.count == 0 {
            return Err(SpecError::Empty(index));
        }
        if self.substeps == 0 {
            return Err(SpecError::NoSubsteps(index));
        }
        if let Some(n) = &self.name {
            let fine = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
            if n.is_empty() || !n.chars().all(fine) {
                return Err(SpecError::Name(index, n.clone()));
            }
        }
        if let Some(c) = &self.colour {
            let hex = c.strip_prefix('#').filter(|h| h.len() == 6);
            if !hex.is_some_and(|h| h.chars().all(|ch| ch.is_ascii_hexdigit())) {
                return Err(SpecError::Colour(index, c.clone()));
            }
        }
        let need = (self.count * HOST_BYTES_PER_BOID).div_ceil(1 << 20);
        if need > limit_mib {
            return Err(SpecError::TooMany {
                index,
                count: self.count,
                need,
                limit: limit_mib,
            });
        }
        let most = extent.iter().copied().fold(f64::INFINITY, f64::min);
        if self.avoid > most {
            return Err(SpecError::AvoidTooFar {
                index,
                avoid: self.avoid,
                most,
            });
        }
        let (lo, hi) = self.spawn.bounds();
        if (0..3).any(|a| lo[a] < 0.0 || hi[a] > extent[a]) {
            return Err(SpecError::SpawnOutside { index, extent });
        }
        let dt = 1.0 / self.substeps as f64;
        let tau_p = units.time_to_steps(self.tau_p);
        // The boid's mass against the air of one cell: the kernel's volume.
        let mass = self.mass / (units.rho0 * units.dx.powi(3));
        if self.coupling == Way::TwoWay {
            if self.tau_p == 0.0 {
                return Err(SpecError::TwoWayTracers(index));
            }
            if self.mass == 0.0 {
                return Err(SpecError::TwoWayMassless(index));
            }
            if !two_way_stable(dt, tau_p, mass, 1.0, 1.0) {
                return Err(SpecError::Unstable {
                    index,
                    dt,
                    tau_p,
                    mass,
                });
            }
        }
        // A spawn region wholly inside a solid: its centre and corners all inside one.
        let inside = |p: [f64; 3]| {
            let x = frame.cells(p);
            obstacles.inside(x)
        };
        let probes = self.spawn.probes();
        if probes.iter().all(|&p| inside(p)) {
            return Err(SpecError::SpawnInSolid {
                index,
                at: probes[0],
            });
        }
        let per_step = |r: f64| (r * units.dt) as f32;
        let cells = |m: f64| units.length_to_lattice(m) as f32;
        Ok(LatticeFlock {
            rates: Rates {
                rule: self.rates.map(per_step),
                distance: self.radii.map(cells),
                max_speed: units.velocity_to_lattice(self.max_speed) as f32,
            },
            tau_p,
            mass,
            avoidance: Avoidance {
                reach: cells(self.avoid),
                rate: per_step(self.avoid_rate),
                margin: 0.05,
                h: 1e-2,
            },
            way: self.coupling,
        })
    }

    /// `self.count` starting positions in lattice coordinates of `frame`, uniform in the spawn
    /// region, the same for the same seed.
    pub fn positions(&self, frame: &Frame) -> Vec<Vec3> {
        let mut state = self.seed ^ 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            // SplitMix64.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let cells = |p: [f64; 3]| frame.cells(p);
        (0..self.count)
            .map(|_| match &self.spawn {
                Spawn::Box { lo, hi } => cells([0, 1, 2].map(|a| lo[a] + next() * (hi[a] - lo[a]))),
                Spawn::Sphere { center, radius } => loop {
                    let d = [0, 1, 2].map(|_| 2.0 * next() - 1.0);
                    if d.iter().map(|v| v * v).sum::<f64>() <= 1.0 {
                        break cells([0, 1, 2].map(|a| center[a] + radius * d[a]));
                    }
                },
            })
            .collect()
    }
}

impl Spawn {
    /// The region's bounding box (m).
    fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        match self {
            Spawn::Box { lo, hi } => (*lo, *hi),
            Spawn::Sphere { center, radius } => {
                (center.map(|c| c - radius), center.map(|c| c + radius))
            }
        }
    }

    /// Points that span the region: its centre and the corners of its box (a sphere: the ends
    /// of its three diameters).
    fn probes(&self) -> Vec<[f64; 3]> {
        match self {
            Spawn::Box { lo, hi } => {
                let mut p = vec![[0, 1, 2].map(|a| 0.5 * (lo[a] + hi[a]))];
                for k in 0..8 {
                    p.push([0, 1, 2].map(|a| if k >> a & 1 == 0 { lo[a] } else { hi[a] }));
                }
                p
            }
            Spawn::Sphere { center, radius } => {
                let mut p = vec![*center];
                for a in 0..3 {
                    for s in [-1.0, 1.0] {
                        let mut q = *center;
                        q[a] += s * radius;
                        p.push(q);
                    }
                }
                p
            }
        }
    }
}

#[cfg(test)]
mod tests;
