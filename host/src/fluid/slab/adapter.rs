//! A rank's backend seen as the whole lattice ([`SlabFluid`]), and CPU ranks in one process.

use crate::fluid::{Fields, FluidBackend, FluidError, Setup};
use crate::ranks::Comm;
use crate::timing::StageTimes;
use murmur_common::lbm::halo::{self, face_cells};
use murmur_common::lbm::health::{Bounds, Report};
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::{CollisionModel, Lattice, Layout};
use murmur_common::lbm::{StorageKind, Streaming, Q};
use std::sync::Arc;

use super::*;

/// One rank's backend seen as the whole lattice.
pub struct SlabFluid {
    pub(super) inner: Box<dyn FluidBackend>,
    pub(super) comm: Arc<dyn Comm>,
    pub(super) plan: SlabPlan,
    /// `Some(periodic)`: [`FluidBackend::fields`] gives this rank's output piece (the slab
    /// axis wrapping or not) instead of the whole lattice gathered on every rank.
    pieces: Option<bool>,
}

/// A health report as a message: 3 floats, the fixed-point density excess (`i64`), the fluid
/// cells (`u64`), the global first bad cell (or `u64::MAX`).
fn encode_report(r: Option<Report>, global_bad: Option<u64>) -> Vec<u8> {
    let mut m = Vec::with_capacity(HEALTH_MESSAGE);
    let r = r.unwrap_or(Report {
        min_rho: f32::INFINITY,
        max_rho: f32::NEG_INFINITY,
        max_mach: f32::NEG_INFINITY,
        first_bad: None,
        excess: 0,
        fluid: 0,
    });
    m.extend_from_slice(&r.min_rho.to_le_bytes());
    m.extend_from_slice(&r.max_rho.to_le_bytes());
    m.extend_from_slice(&r.max_mach.to_le_bytes());
    m.extend_from_slice(&r.excess.to_le_bytes());
    m.extend_from_slice(&r.fluid.to_le_bytes());
    m.extend_from_slice(&global_bad.unwrap_or(u64::MAX).to_le_bytes());
    m
}

/// Bytes of [`encode_report`]'s message.
const HEALTH_MESSAGE: usize = 36;

fn u64_at(m: &[u8], byte: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&m[byte..byte + 8]);
    u64::from_le_bytes(b)
}

fn f32_at(m: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([m[4 * i], m[4 * i + 1], m[4 * i + 2], m[4 * i + 3]])
}

impl SlabFluid {
    pub fn new(inner: Box<dyn FluidBackend>, comm: Arc<dyn Comm>, plan: SlabPlan) -> SlabFluid {
        SlabFluid {
            inner,
            comm,
            plan,
            pieces: None,
        }
    }

    /// From now on [`FluidBackend::fields`] gives this rank's output piece ([`Piece`]; the
    /// slab axis wraps when `periodic`), for [`crate::fluid::pieces::PieceSink`].
    pub fn write_pieces(&mut self, periodic: bool) {
        self.pieces = Some(periodic);
    }

    /// The communicator and the cut.
    pub fn comm(&self) -> &Arc<dyn Comm> {
        &self.comm
    }

    pub fn plan(&self) -> &SlabPlan {
        &self.plan
    }

    /// This rank's local fields with every rank's face layers exchanged: the fields of
    /// [`Piece::of`] (rank, `periodic`), a lattice of `below + owned + above` layers along the
    /// slab axis.
    pub(super) fn piece(&mut self, periodic: bool) -> Result<Fields, FluidError> {
        let r = self.rank();
        let p = Piece::of(&self.plan, r, periodic);
        self.comm.set_busy(true);
        let local = self.inner.fields();
        self.comm.set_busy(false);
        let local = local?;
        let l = local.lattice;
        let axis = self.plan.axis as u32;
        let face = face_cells(&l, axis);
        let n = l.cells();
        // Layer k of the local lattice: the four fields of its face cells.
        let layer = |k: u32| -> Vec<f32> {
            let mut v = Vec::with_capacity(4 * face);
            for a in 0..4 {
                for i in 0..face {
                    v.push(local.data[a * n + halo::face_cell(&l, axis, k, i)]);
                }
            }
            v
        };
        let owned = p.owned;
        let lo: Vec<f32> = (1..=owned.min(2)).flat_map(layer).collect();
        let hi: Vec<f32> = (owned + 1 - owned.min(2)..=owned).flat_map(layer).collect();
        let (prev, next) = crate::ranks::ring(r, self.comm.size());
        // To the next rank first, then the previous (the halo's order: with two ranks both are
        // the same peer and the messages pair up in order).
        let got = self.comm.send_recv(
            &[(next, as_bytes(&hi)), (prev, as_bytes(&lo))],
            &[prev, next],
        )?;
        let bad = || FluidError::WrongSize {
            what: "a field layer message".into(),
        };
        let from_prev: Vec<f32> = from_bytes(&got[0], got[0].len() / 4).ok_or_else(bad)?;
        let from_next: Vec<f32> = from_bytes(&got[1], got[1].len() / 4).ok_or_else(bad)?;
        let mut dims = [l.nx, l.ny, l.nz];
        dims[axis as usize] = p.below + owned + p.above;
        let ext = Lattice::new(dims[0], dims[1], dims[2]);
        let m = ext.cells();
        let mut data = vec![0f32; 4 * m];
        let mut put = |e: u32, values: &[f32]| {
            for a in 0..4 {
                for i in 0..face {
                    data[a * m + halo::face_cell(&ext, axis, e, i)] = values[a * face + i];
                }
            }
        };
        // The previous rank's last `below` layers, the owned layers, the next rank's first
        // `above` layers.
        let prev_layers = from_prev.len() / (4 * face);
        for j in 0..p.below {
            let k = prev_layers - p.below as usize + j as usize;
            put(j, &from_prev[4 * face * k..4 * face * (k + 1)]);
        }
        for k in 0..owned {
            put(p.below + k, &layer(k + 1));
        }
        for j in 0..p.above {
            let k = j as usize;
            put(
                p.below + owned + j,
                &from_next[4 * face * k..4 * face * (k + 1)],
            );
        }
        Ok(Fields { lattice: ext, data })
    }

    pub(super) fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// Gathers `values` arrays of per-cell data (`arrays` arrays of the local lattice's cells)
    /// into the global cell order, on every rank.
    fn gather(&self, local: &[f32], arrays: usize) -> Result<Vec<f32>, FluidError> {
        let r = self.rank();
        let l = self.plan.local_lattice(r);
        let a = self.plan.axis;
        let owned = self.plan.owned(r);
        let n = l.cells();
        let mine: Vec<f32> = (0..arrays)
            .flat_map(|k| {
                (0..n)
                    .filter(move |&c| {
                        let (x, y, z) = l.coords(c);
                        (1..=owned).contains(&[x, y, z][a])
                    })
                    .map(move |c| local[k * n + c])
            })
            .collect();
        let all = self
            .comm
            .all_gather(as_bytes(&mine))
            .map_err(FluidError::from)?;
        let g = self.plan.global.cells();
        let mut out = vec![0f32; arrays * g];
        for (peer, msg) in all.iter().enumerate() {
            let pl = self.plan.local_lattice(peer);
            let po = self.plan.owned(peer);
            let cells: Vec<usize> = (0..pl.cells())
                .filter(|&c| {
                    let (x, y, z) = pl.coords(c);
                    (1..=po).contains(&[x, y, z][a])
                })
                .map(|c| self.plan.global_cell(peer, c))
                .collect();
            let vals: Vec<f32> =
                from_bytes(msg, arrays * cells.len()).ok_or_else(|| FluidError::WrongSize {
                    what: format!("the piece rank {peer} sent"),
                })?;
            for k in 0..arrays {
                for (i, &c) in cells.iter().enumerate() {
                    out[k * g + c] = vals[k * cells.len() + i];
                }
            }
        }
        Ok(out)
    }
}

impl FluidBackend for SlabFluid {
    fn plan(&self) -> &crate::fluid::plan::FluidPlan {
        self.inner.plan()
    }

    fn describe(&self) -> String {
        format!(
            "{} x {} ranks (slabs along {})",
            self.inner.describe(),
            self.plan.size(),
            AXES[self.plan.axis]
        )
    }

    fn lattice(&self) -> Lattice {
        self.plan.global
    }

    fn model(&self) -> CollisionModel {
        self.inner.model()
    }

    fn storage(&self) -> StorageKind {
        self.inner.storage()
    }

    fn layout(&self) -> Layout {
        self.inner.layout()
    }

    fn streaming(&self) -> Streaming {
        self.inner.streaming()
    }

    fn step(&mut self) -> Result<(), FluidError> {
        self.comm.set_busy(true);
        let r = self.inner.step();
        self.comm.set_busy(false);
        r
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        if let Some(periodic) = self.pieces {
            return self.piece(periodic);
        }
        self.comm.set_busy(true);
        let local = self.inner.fields();
        self.comm.set_busy(false);
        let data = self.gather(&local?.data, 4)?;
        Ok(Fields {
            lattice: self.plan.global,
            data,
        })
    }

    /// Collective: the rank owning `cell` (a global cell) reads it, every rank gets it.
    fn cell_state(&mut self, cell: usize) -> Result<(f32, [f32; 3]), FluidError> {
        let r = self.rank();
        let g = self.plan.global;
        let (x, y, z) = g.coords(cell);
        let layer = [x, y, z][self.plan.axis];
        let mut mine = Vec::new();
        if self.plan.ranges[r].contains(&layer) {
            self.comm.set_busy(true);
            let local = self.inner.fields();
            self.comm.set_busy(false);
            let local = local?;
            let mut c = [x, y, z];
            c[self.plan.axis] = layer - self.plan.ranges[r].start + 1;
            let lc = local.lattice.index(c[0], c[1], c[2]);
            let u = local.u(lc);
            mine = as_bytes(&[local.rho(lc), u[0], u[1], u[2]]).to_vec();
        }
        let all = self.comm.all_gather(&mine)?;
        let m = all
            .iter()
            .find(|m| m.len() == 16)
            .ok_or_else(|| FluidError::Invalid(format!("no rank owns cell {cell}")))?;
        Ok((f32_at(m, 0), [f32_at(m, 1), f32_at(m, 2), f32_at(m, 3)]))
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        self.comm.set_busy(true);
        let local = self.inner.populations();
        self.comm.set_busy(false);
        self.gather(&local?, Q)
    }

    fn allocated_bytes(&self) -> u64 {
        self.inner.allocated_bytes()
    }

    fn device_memory(&self) -> Option<(u64, u64)> {
        self.inner.device_memory()
    }

    fn step_count(&self) -> u64 {
        self.inner.step_count()
    }

    fn take_forces(&mut self) -> Result<Vec<crate::fluid::forces::ForceSample>, FluidError> {
        self.inner.take_forces()
    }

    /// Collective: each sample's force as the rank that owns it computed it (every rank runs
    /// every sample; only the owner has all of a sample's passes).
    fn samples(&mut self) -> Result<Option<crate::fluid::ib::plan::SampleSnapshot>, FluidError> {
        let Some(mut snap) = self.inner.samples()? else {
            return Ok(None);
        };
        let mine: Vec<f32> = snap.force.iter().flatten().copied().collect();
        let all = self
            .comm
            .all_gather(as_bytes(&mine))
            .map_err(FluidError::from)?;
        let forces = all
            .iter()
            .map(|m| from_bytes::<f32>(m, mine.len()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| FluidError::WrongSize {
                what: "a rank's sample forces".into(),
            })?;
        let domains: Vec<Domain> = (0..self.plan.size())
            .map(|r| self.plan.ib_domain(r))
            .collect();
        for (i, (pos, force)) in snap.positions.iter().zip(&mut snap.force).enumerate() {
            if let Some(r) = domains.iter().position(|d| d.owns(*pos)) {
                *force = [0, 1, 2].map(|c| forces[r][3 * i + c]);
            }
        }
        Ok(Some(snap))
    }

    /// Collective: every rank gets the same report (the extremes over all ranks, the lowest
    /// global cell out of bounds), so every rank stops at the same step.
    fn health(&mut self, bounds: &Bounds) -> Result<Option<Report>, FluidError> {
        let r = self.rank();
        // The exempt boxes in this slab's coordinates: its layer 1 is its first owned one.
        let first = self.plan.global_layer(r, 1) as i64 - 1;
        let layers = self.plan.owned(r) + 2;
        let local_bounds = bounds.on_slab(self.plan.axis, first, layers);
        self.comm.set_busy(true);
        let local = self.inner.health(&local_bounds);
        self.comm.set_busy(false);
        let local = local?;
        let bad = local
            .and_then(|l| l.first_bad)
            .map(|c| self.plan.global_cell(r, c as usize) as u64);
        let all = self
            .comm
            .all_gather(&encode_report(local, bad))
            .map_err(FluidError::from)?;
        let mut out: Option<Report> = None;
        let mut first_bad = u64::MAX;
        for m in &all {
            if m.len() != HEALTH_MESSAGE {
                return Err(FluidError::WrongSize {
                    what: "a rank's health message".into(),
                });
            }
            let (lo, hi, ma) = (f32_at(m, 0), f32_at(m, 1), f32_at(m, 2));
            first_bad = first_bad.min(u64_at(m, 28));
            if hi == f32::NEG_INFINITY {
                continue;
            }
            let o = out.get_or_insert(Report {
                min_rho: lo,
                max_rho: hi,
                max_mach: ma,
                first_bad: None,
                excess: 0,
                fluid: 0,
            });
            // Integer sums: the same in any rank order.
            o.excess = o.excess.wrapping_add(u64_at(m, 12) as i64);
            o.fluid += u64_at(m, 20);
            // NaN-aware: a NaN anywhere stays visible.
            o.min_rho = if lo.is_nan() { lo } else { o.min_rho.min(lo) };
            o.max_rho = if hi.is_nan() { hi } else { o.max_rho.max(hi) };
            o.max_mach = if ma.is_nan() { ma } else { o.max_mach.max(ma) };
        }
        if let Some(o) = out.as_mut() {
            o.first_bad = (first_bad != u64::MAX).then_some(first_bad as u32);
        }
        Ok(out)
    }

    fn synchronize(&mut self) -> Result<(), FluidError> {
        self.comm.set_busy(true);
        let r = self.inner.synchronize();
        self.comm.set_busy(false);
        r
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        self.inner.times()
    }

    fn reset_times(&mut self) {
        self.inner.reset_times()
    }

    fn set_inlet_scale(&mut self, scale: f32) {
        self.inner.set_inlet_scale(scale)
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.inner.gpu_ms_per_step()
    }

    /// Cells of this rank's own box ([`SlabFluid::own_box`]), x fastest within it.
    fn read_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        out: &mut [u8],
    ) -> Result<(), FluidError> {
        self.busy(|b| b.inner.read_state_piece(cells, out))
    }

    /// Cells of this rank's own box, as [`FluidBackend::read_state_piece`] here; the next
    /// step exchanges the ghost layers first.
    fn write_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        self.busy(|b| b.inner.write_state_piece(cells, data))
    }

    /// Collective: this rank's part of the whole lattice's state ([`super::state`]).
    fn capture_small_state(&mut self) -> Result<crate::fluid::state::SmallState, FluidError> {
        self.capture_rank()
    }

    /// This rank's part of `small` (a rank's capture, [`super::state::split_small`]'s, or the
    /// whole lattice's, [`super::state::merge_small`]'s).
    fn restore_small_state(
        &mut self,
        small: &crate::fluid::state::SmallState,
    ) -> Result<(), FluidError> {
        self.restore_rank(small)
    }

    fn enable_pushes(&mut self, most: u32) -> Result<(), FluidError> {
        self.inner.enable_pushes(most)
    }

    /// Collective ([`SlabFluid::route_pushes`]).
    fn push(&mut self, pos: &[[f32; 3]], total: &[u64]) -> Result<(), FluidError> {
        let (pos, total) = self.route_pushes(pos, total)?;
        self.inner.push(&pos, &total)
    }

    fn as_slab(&mut self) -> Option<&mut SlabFluid> {
        Some(self)
    }
}

/// Opens `rank`'s slab of `setup` on the CPU, exchanging through `comm`.
pub fn open_cpu_rank(
    setup: &Setup,
    plan: &SlabPlan,
    comm: Arc<dyn Comm>,
) -> Result<SlabFluid, FluidError> {
    let local = plan.local_setup(setup, comm.rank());
    let halo = CpuHalo {
        comm: comm.clone(),
        axis: plan.axis as u32,
    };
    let inner = crate::fluid::cpu::open_slab(&local, halo)?;
    Ok(SlabFluid::new(inner, comm, plan.clone()))
}

/// What a run of several ranks in one process gives back (rank 0's view).
pub struct RanksResult {
    /// Decoded populations in the global cell order, `f[q * n + cell]`.
    pub populations: Vec<f32>,
    pub fields: Fields,
    /// The solids' force rows of every step (summed over the ranks).
    pub forces: Vec<crate::fluid::forces::ForceSample>,
    /// The samples after the last step, each force from the rank that owns it.
    pub samples: Option<crate::fluid::ib::plan::SampleSnapshot>,
    pub plan: SlabPlan,
}

/// Runs `setup` for `steps` steps on `ranks` CPU ranks in this process (threads joined by
/// memory copies: the decomposition and exchange of a multi-GPU run without GPUs).
pub fn run_cpu_ranks(setup: &Setup, ranks: usize, steps: u64) -> Result<RanksResult, FluidError> {
    let plan = SlabPlan::new(setup, ranks)?;
    let mut out = crate::ranks::local::run_ranks(ranks, |comm| -> Result<_, FluidError> {
        let comm: Arc<dyn Comm> = Arc::new(comm);
        let mut b = open_cpu_rank(setup, &plan, comm)?;
        for _ in 0..steps {
            b.step()?;
        }
        let forces = b.take_forces()?;
        let samples = b.samples()?;
        Ok((b.populations()?, b.fields()?, forces, samples))
    })?;
    let (populations, fields, forces, samples) = out.swap_remove(0);
    Ok(RanksResult {
        populations,
        fields,
        forces,
        samples,
        plan,
    })
}
