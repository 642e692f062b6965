//! The CPU reference flock: the GPU's stages, one for one, on all cores (rayon), calling the same
//! `murmur_common::flock` functions the kernels call. Methods agree up to float summation order.

use super::capture::FlockCapture;
use super::stage::{Search, Stage};
use super::{FlockBackend, FlockSettings, FlockState, Method, SimError, WithinCell};
use crate::raster::CpuRaster;
use crate::timing::{stage, StageTimes};
use murmur_common::flock::{
    fill_cell_start, grid_sums, integrate_position, naive_sums, new_velocity, FlockParams, Grid,
};
use murmur_common::render::View;
use murmur_common::Vec3;
use rayon::prelude::*;

/// CPU flock with ping-pong buffers allocated once (resized only when `n` or the grid changes).
pub struct CpuFlock {
    settings: FlockSettings,
    grid: Grid,
    pos: Vec<Vec3>,
    vel: Vec<Vec3>,
    id: Vec<u32>,
    // Scratch, reused every step.
    vel_new: Vec<Vec3>,
    pairs: Vec<(u32, u32)>,
    /// Lower-bound table: cell `k` holds sorted entries `cell_start[k]..cell_start[k + 1]`.
    cell_start: Vec<u32>,
    pos_sorted: Vec<Vec3>,
    vel_sorted: Vec<Vec3>,
    id_sorted: Vec<u32>,
    times: StageTimes,
    /// The viewer's key frame (empty until the first `render_into`).
    raster: CpuRaster,
    step_ms: Vec<f64>,
    /// The order inside a cell after binning.
    within: WithinCell,
}

impl CpuFlock {
    pub fn new(settings: &FlockSettings, state: &FlockState) -> CpuFlock {
        let mut f = CpuFlock {
            settings: settings.clone(),
            grid: settings.grid(),
            pos: Vec::new(),
            vel: Vec::new(),
            id: Vec::new(),
            vel_new: Vec::new(),
            pairs: Vec::new(),
            cell_start: Vec::new(),
            pos_sorted: Vec::new(),
            vel_sorted: Vec::new(),
            id_sorted: Vec::new(),
            times: StageTimes::default(),
            raster: CpuRaster::default(),
            step_ms: Vec::new(),
            within: WithinCell::Binned,
        };
        f.load(state);
        f.resize_grid();
        f
    }

    /// Chooses the order inside a cell ([`WithinCell::ById`]: the order of the CPU ranks).
    pub fn set_within_cell(&mut self, within: WithinCell) {
        self.within = within;
    }

    fn load(&mut self, state: &FlockState) {
        self.pos.clone_from(&state.pos);
        self.vel.clone_from(&state.vel);
        self.id.clone_from(&state.id);
        let n = state.len();
        self.vel_new.resize(n, Vec3::ZERO);
        self.pairs.resize(n, (0, 0));
        self.pos_sorted.resize(n, Vec3::ZERO);
        self.vel_sorted.resize(n, Vec3::ZERO);
        self.id_sorted.resize(n, 0);
    }

    fn resize_grid(&mut self) {
        let entries = if self.settings.method.uses_grid() {
            self.grid.cell_count() as usize + 1
        } else {
            0
        };
        self.cell_start.resize(entries, 0);
    }

    /// Stages `compute_keys`, `sort`, `cell_bounds` (shared by `scattered` and `coherent`).
    fn bin(&mut self) {
        let grid = self.grid;
        let pos = &self.pos;
        stage(&mut self.times, Stage::ComputeKeys.name(), || {
            self.pairs
                .par_iter_mut()
                .enumerate()
                .for_each(|(i, pair)| *pair = (grid.key(pos[i]), i as u32));
        });
        // Pairs are unique (the index, or the id, breaks ties), so the unstable sort is
        // deterministic.
        let (id, within) = (&self.id, self.within);
        stage(&mut self.times, Stage::Sort.name(), || match within {
            WithinCell::Binned => self.pairs.par_sort_unstable(),
            WithinCell::ById => self
                .pairs
                .par_sort_unstable_by_key(|&(key, i)| (key, id[i as usize])),
        });
        let pairs = &self.pairs;
        let start = &mut self.cell_start;
        let cells = grid.cell_count();
        stage(&mut self.times, Stage::CellBounds.name(), || {
            let n = pairs.len() as u32;
            for i in 0..n {
                fill_cell_start(
                    i,
                    n,
                    cells,
                    |k| pairs[k as usize].0,
                    |key, v| start[key as usize] = v,
                );
            }
        });
    }
}

/// Stage `update_boids_*`: every boid's new velocity from one search closure, then its new
/// position, into `out_vel` / `out_pos` (the previous state stays readable by the searches).
fn update_boids(
    out_vel: &mut [Vec3],
    out_pos: &mut [Vec3],
    p: &FlockParams,
    pos: &[Vec3],
    vel: &[Vec3],
    sums: impl Fn(u32, Vec3, Vec3) -> murmur_common::flock::RuleSums + Sync,
) {
    out_vel
        .par_iter_mut()
        .zip(out_pos.par_iter_mut())
        .enumerate()
        .for_each(|(i, (v, x))| {
            let s = sums(i as u32, pos[i], vel[i]);
            *v = new_velocity(p, vel[i], &s);
            *x = integrate_position(p, pos[i], *v);
        });
}

impl FlockBackend for CpuFlock {
    fn describe(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn len(&self) -> usize {
        self.pos.len()
    }

    fn step(&mut self) -> Result<(), SimError> {
        let t0 = std::time::Instant::now();
        let p = self.settings.params;
        let grid = self.grid;
        let n = self.pos.len() as u32;
        match self.settings.method {
            Method::Naive => {
                let (pos, vel) = (&self.pos, &self.vel);
                let (vn, pn) = (&mut self.vel_new, &mut self.pos_sorted);
                stage(&mut self.times, Stage::Update(Search::Naive).name(), || {
                    update_boids(vn, pn, &p, pos, vel, |i, x, _| {
                        naive_sums(&p, n, i, x, |j| (pos[j as usize], vel[j as usize]))
                    })
                });
            }
            Method::Scattered => {
                self.bin();
                let (pos, vel, pairs) = (&self.pos, &self.vel, &self.pairs);
                let start = &self.cell_start;
                let (vn, pn) = (&mut self.vel_new, &mut self.pos_sorted);
                stage(
                    &mut self.times,
                    Stage::Update(Search::Scattered).name(),
                    || {
                        update_boids(vn, pn, &p, pos, vel, |_, x, v| {
                            grid_sums(
                                &p,
                                &grid,
                                x,
                                v,
                                |key| start[key as usize],
                                |k| {
                                    let j = pairs[k as usize].1 as usize;
                                    (pos[j], vel[j])
                                },
                            )
                        })
                    },
                );
            }
            Method::Coherent | Method::CoherentShared => {
                self.bin();
                let (pos, vel, id, pairs) = (&self.pos, &self.vel, &self.id, &self.pairs);
                let (ps, vs, is) = (
                    &mut self.pos_sorted,
                    &mut self.vel_sorted,
                    &mut self.id_sorted,
                );
                stage(&mut self.times, Stage::Gather.name(), || {
                    ps.par_iter_mut()
                        .zip(vs.par_iter_mut())
                        .zip(is.par_iter_mut())
                        .zip(pairs.par_iter())
                        .for_each(|(((x, v), d), &(_, j))| {
                            *x = pos[j as usize];
                            *v = vel[j as usize];
                            *d = id[j as usize];
                        });
                });
                std::mem::swap(&mut self.pos, &mut self.pos_sorted);
                std::mem::swap(&mut self.vel, &mut self.vel_sorted);
                std::mem::swap(&mut self.id, &mut self.id_sorted);
                let (pos, vel) = (&self.pos, &self.vel);
                let start = &self.cell_start;
                let (vn, pn) = (&mut self.vel_new, &mut self.pos_sorted);
                stage(
                    &mut self.times,
                    Stage::Update(Search::Coherent).name(),
                    || {
                        update_boids(vn, pn, &p, pos, vel, |_, x, v| {
                            grid_sums(
                                &p,
                                &grid,
                                x,
                                v,
                                |key| start[key as usize],
                                |k| (pos[k as usize], vel[k as usize]),
                            )
                        })
                    },
                );
            }
        }
        // Ping-pong: the new state becomes current.
        std::mem::swap(&mut self.vel, &mut self.vel_new);
        std::mem::swap(&mut self.pos, &mut self.pos_sorted);
        self.times.steps += 1;
        self.step_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        Ok(())
    }

    fn state(&mut self) -> Result<FlockState, SimError> {
        Ok(FlockState {
            pos: self.pos.clone(),
            vel: self.vel.clone(),
            id: self.id.clone(),
        }
        .sorted_by_id())
    }

    fn set_state(&mut self, state: &FlockState) -> Result<(), SimError> {
        self.load(state);
        Ok(())
    }

    fn capture(&mut self) -> Result<FlockCapture, SimError> {
        Ok(FlockCapture {
            state: FlockState {
                pos: self.pos.clone(),
                vel: self.vel.clone(),
                id: self.id.clone(),
            },
            buffer: 0,
            within: self.within,
            settings: self.settings.clone(),
        })
    }

    fn restore(&mut self, capture: &FlockCapture) -> Result<(), SimError> {
        capture.check(&self.settings)?;
        // In the captured order: the next binning sorts (key, index) pairs of this order.
        self.load(&capture.state);
        self.within = capture.within;
        Ok(())
    }

    fn set_settings(&mut self, settings: &FlockSettings) -> Result<(), SimError> {
        self.settings = settings.clone();
        self.grid = settings.grid();
        self.resize_grid();
        Ok(())
    }

    fn times(&mut self) -> Result<StageTimes, SimError> {
        Ok(self.times.clone())
    }

    fn reset_times(&mut self) {
        self.times.reset();
        self.step_ms.clear();
    }

    fn step_ms(&mut self) -> Result<Vec<f64>, SimError> {
        Ok(self.step_ms.clone())
    }

    fn render_into(
        &mut self,
        view: &View,
        background: u32,
        rgba: &mut [u8],
    ) -> Result<(), SimError> {
        // Boid order does not matter: each pixel keeps the minimum key.
        self.raster
            .draw(view, &self.pos, &self.vel, background, rgba)?;
        Ok(())
    }
}
