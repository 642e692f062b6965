//! The flock on several ranks: slabs along x, shared by the CPU ranks (N threads of one
//! process over `LocalComm`, memory copies) and the CUDA ranks (one process per GPU over NCCL,
//! [`super::slab_cuda`]). Per-boid rules (ownership, halo, migration) are
//! `murmur_common::flock::slab`; here: the plan (slab bounds, halo width, neighbours, the checks
//! of bad input), the exchange of counts, the gather of a snapshot, and the CPU rank.
//!
//! Slabs have equal widths: rank `k` of `N` owns x in `[-S + k 2S/N, -S + (k+1) 2S/N)` (the
//! first from `-inf`, the last to `+inf`). A step on a rank: bin own + halo boids on the
//! whole domain's grid, update own boids only (the same rule math and grid search as one
//! rank), then send each neighbour the boids that [`Slab::fate`] sends it (its halo for the
//! next step and the boids that migrate to it, ids with them) and append what arrives.

use super::{FlockSettings, FlockState, SimError};
use crate::ranks::{decode_u64, ring, Comm, CommError};
use murmur_common::flock::slab::{Fate, Slab, HOLE};
use murmur_common::flock::{
    fill_cell_start, grid_sums, integrate_position, new_velocity, FlockParams, Grid,
};
use murmur_common::Vec3;
use rayon::prelude::*;

/// Why a flock on several ranks could not run.
#[derive(Debug, thiserror::Error)]
pub enum SlabError {
    /// Bad input (too many ranks, too few boids, ...): one line.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Comm(#[from] CommError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    /// A rank's own failure during the run.
    #[error("rank {rank}: {what}")]
    Rank { rank: usize, what: String },
}

/// Halo width: the largest rule distance with a margin of 1e-3 relative (a boid a little
/// farther costs one distance test; one closer must never be missed).
pub fn halo_width(p: &FlockParams) -> f32 {
    p.max_distance() * 1.001
}

/// The farthest a boid moves along x in one step (`max_speed * dt`, 1% margin).
pub fn step_travel(p: &FlockParams) -> f32 {
    p.max_speed * p.dt * 1.01
}

/// Equal-width slabs of `[-scale, scale)` for `size` ranks, in rank order; the first starts at
/// `-inf` and the last ends at `+inf`, so every position has one owner.
pub fn slab_bounds(scale: f32, size: usize) -> Vec<(f32, f32)> {
    let w = 2.0 * scale as f64 / size as f64;
    let edge = |k: usize| (-(scale as f64) + k as f64 * w) as f32;
    (0..size)
        .map(|k| {
            let lo = if k == 0 { f32::NEG_INFINITY } else { edge(k) };
            let hi = if k + 1 == size {
                f32::INFINITY
            } else {
                edge(k + 1)
            };
            (lo, hi)
        })
        .collect()
}

/// Checks that `size` ranks can split a flock of `n` boids with these rules: at least two
/// ranks, at least one boid per rank, and slabs at least as wide as the halo plus one step's
/// travel (so halos and migrants only ever reach the next rank).
pub fn check_ranks(p: &FlockParams, size: usize, n: u64) -> Result<(), SlabError> {
    if size < 2 {
        return Err(SlabError::Invalid(format!(
            "a flock split across ranks needs at least 2 ranks, got {size}"
        )));
    }
    if n < size as u64 {
        return Err(SlabError::Invalid(format!(
            "{n} boids cannot be split across {size} ranks (fewer boids than ranks)"
        )));
    }
    if n >= HOLE as u64 {
        return Err(SlabError::Invalid(format!(
            "n = {n} is too large for boid ids (at most {})",
            HOLE as u64 - 1
        )));
    }
    let (halo, travel) = (halo_width(p) as f64, step_travel(p) as f64);
    let width = 2.0 * p.scale as f64 / size as f64;
    if width < halo + travel {
        let most = ((2.0 * p.scale as f64) / (halo + travel)).floor() as u64;
        return Err(SlabError::Invalid(format!(
            "{size} ranks cut [-{s}, {s}) into slabs {width:.3} wide, thinner than the halo \
             ({halo:.3}: the largest rule distance) plus one step's travel ({travel:.3}: \
             max_speed * dt): use at most {most} ranks or a larger scale",
            s = p.scale
        )));
    }
    Ok(())
}

/// One rank's part of the decomposition.
#[derive(Clone, Debug)]
pub struct SlabPlan {
    pub rank: usize,
    pub size: usize,
    /// Every rank's x range, in rank order.
    pub bounds: Vec<(f32, f32)>,
    /// This rank's slab and its neighbours', as the kernels take it.
    pub slab: Slab,
    /// The rank behind each send slot: `[previous, next]`, or `[other]` with two ranks.
    pub peers: Vec<usize>,
}

impl SlabPlan {
    /// The plan of `rank` of `size` (checked by [`check_ranks`] first). A world of one rank
    /// (no split: the whole domain, no neighbours) is planned too: the slab path's own cost on
    /// one GPU (`flock scale --gpus 1`).
    pub fn new(p: &FlockParams, rank: usize, size: usize, n: u64) -> Result<SlabPlan, SlabError> {
        if size > 1 {
            check_ranks(p, size, n)?;
        }
        let bounds = slab_bounds(p.scale, size);
        let (prev, next) = ring(rank, size);
        let slab = Slab {
            lo: bounds[rank].0,
            hi: bounds[rank].1,
            prev_lo: bounds[prev].0,
            prev_hi: bounds[prev].1,
            next_lo: bounds[next].0,
            next_hi: bounds[next].1,
            halo: halo_width(p),
            prev_face: (rank > 0) as u32,
            next_face: (rank + 1 < size) as u32,
            next_slot: if size == 2 { 0 } else { 1 },
        };
        let peers = if size == 1 {
            Vec::new()
        } else if size == 2 {
            vec![next]
        } else {
            vec![prev, next]
        };
        Ok(SlabPlan {
            rank,
            size,
            bounds,
            slab,
            peers,
        })
    }

    /// Slab `k` for messages: `[-50, 0)`.
    pub fn describe(&self, k: usize) -> String {
        let (lo, hi) = self.bounds[k];
        format!("[{lo}, {hi})")
    }
}

/// Checks every rank's own boid count at the start (all ranks get the same answer): none
/// empty. Returns the counts in rank order.
pub fn check_start_counts<C: Comm + ?Sized>(
    comm: &C,
    plan: &SlabPlan,
    own: u64,
) -> Result<Vec<u64>, SlabError> {
    let all: Vec<u64> = comm
        .all_gather(&own.to_le_bytes())?
        .iter()
        .map(|m| decode_u64(m))
        .collect();
    if let Some(k) = all.iter().position(|&c| c == 0) {
        let total: u64 = all.iter().sum();
        return Err(SlabError::Invalid(format!(
            "rank {k}'s slab {} holds none of the {total} boids: use fewer ranks",
            plan.describe(k)
        )));
    }
    Ok(all)
}

/// Sends each send slot's count to its peer and returns the count each peer sends here, in
/// slot order (host messages).
pub fn swap_counts<C: Comm + ?Sized>(
    comm: &C,
    plan: &SlabPlan,
    sent: &[u64],
) -> Result<Vec<u64>, CommError> {
    let msgs: Vec<[u8; 8]> = sent.iter().map(|c| c.to_le_bytes()).collect();
    let sends: Vec<(usize, &[u8])> = plan
        .peers
        .iter()
        .zip(&msgs)
        .map(|(&p, m)| (p, &m[..]))
        .collect();
    Ok(comm
        .send_recv(&sends, &plan.peers)?
        .iter()
        .map(|m| decode_u64(m))
        .collect())
}

/// Bytes of one boid in host messages: position (3 f32), id (u32), velocity (3 f32).
pub const RECORD_BYTES: usize = 28;

fn push_record(out: &mut Vec<u8>, pos: Vec3, id: u32, vel: Vec3) {
    for x in pos.to_array() {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.extend_from_slice(&id.to_le_bytes());
    for x in vel.to_array() {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn read_records(bytes: &[u8], state: &mut FlockState) {
    let f = |b: &[u8], i: usize| f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
    for r in bytes.chunks_exact(RECORD_BYTES) {
        state.pos.push(Vec3::new(f(r, 0), f(r, 1), f(r, 2)));
        state
            .id
            .push(u32::from_le_bytes(r[12..16].try_into().unwrap()));
        state.vel.push(Vec3::new(f(r, 4), f(r, 5), f(r, 6)));
    }
}

/// Gathers every rank's own boids on rank 0, ordered by id there (`None` on the other ranks),
/// after checking that the ids are exactly `0..n` (no boid lost or doubled).
pub fn gather_state<C: Comm + ?Sized>(
    comm: &C,
    own: &FlockState,
    n: u64,
) -> Result<Option<FlockState>, SlabError> {
    if comm.rank() != 0 {
        let mut bytes = Vec::with_capacity(own.len() * RECORD_BYTES);
        for k in 0..own.len() {
            push_record(&mut bytes, own.pos[k], own.id[k], own.vel[k]);
        }
        comm.send_recv(&[(0, &bytes)], &[])?;
        return Ok(None);
    }
    let from: Vec<usize> = (1..comm.size()).collect();
    let mut all = own.clone();
    for m in comm.send_recv(&[], &from)? {
        read_records(&m, &mut all);
    }
    let mut seen = vec![false; n as usize];
    let mut bad = all.len() as u64 != n;
    for &id in &all.id {
        match seen.get_mut(id as usize) {
            Some(s) if !*s => *s = true,
            _ => bad = true,
        }
    }
    if bad {
        return Err(SlabError::Invalid(format!(
            "the ranks hold {} boids, not the {n} boids 0..{n} once each (a boid was lost or \
             doubled)",
            all.len()
        )));
    }
    Ok(Some(all.sorted_by_id()))
}

/// One rank of a flock split across ranks, as the run protocol ([`run_rank`]) drives it: the
/// CPU rank over any [`Comm`], the GPU rank over NCCL.
pub trait SlabRank<C: Comm + ?Sized> {
    /// One step (collective: every rank steps together).
    fn step(&mut self, comm: &C) -> Result<(), SlabError>;
    /// Waits until the queued steps have finished (a wall clock stops after it).
    fn synchronize(&self) -> Result<(), SlabError> {
        Ok(())
    }
    /// Boids held now (own and halo).
    fn held(&self) -> u64;
    /// This rank's own boids, in any order.
    fn own_state(&self) -> Result<FlockState, SlabError>;
}

/// Waits for every rank.
pub fn barrier<C: Comm + ?Sized>(comm: &C) -> Result<(), CommError> {
    comm.all_gather(&[0])?;
    Ok(())
}

/// `u64`s of every rank, in rank order.
pub fn gather_u64<C: Comm + ?Sized>(comm: &C, v: u64) -> Result<Vec<u64>, CommError> {
    Ok(comm
        .all_gather(&v.to_le_bytes())?
        .iter()
        .map(|m| decode_u64(m))
        .collect())
}

/// What [`run_rank`] returns on each rank.
pub struct RankRun {
    /// Wall time of the steps, between two barriers (the slowest rank's).
    pub wall: std::time::Duration,
    /// Boids each rank holds at the end (own and halo), in rank order.
    pub held: Vec<u64>,
    /// Own boids of each rank at the end, when gathered.
    pub own: Option<Vec<u64>>,
    /// The whole flock, ordered by id: on rank 0, when gathered.
    pub state: Option<FlockState>,
    /// Set when the stop probe ended the run early: the flock's step then (every rank agrees).
    pub stopped: Option<u64>,
    /// The path of the last checkpoint written (rank 0).
    pub checkpoint: Option<std::path::PathBuf>,
}

/// Rank 0's checkpoint writer for [`run_rank_with`]: the flock's step and the whole flock,
/// ordered by id; the path it wrote.
pub type SaveCheckpoint<'a> =
    dyn FnMut(u64, &FlockState) -> Result<std::path::PathBuf, SlabError> + 'a;

/// What a run of ranks does between steps besides stepping ([`run_rank_with`]).
pub struct Between<'a> {
    /// The flock's step when the run starts (a resumed run's checkpoint step; else 0).
    pub first: u64,
    /// Every this many flock steps a checkpoint (0: none but at a stop).
    pub every: u64,
    /// Asked after every step but the last, `done` steps into the run; several ranks must answer
    /// alike (`stop::Agreed`).
    pub stop: &'a mut dyn crate::stop::StopProbe,
    /// Rank 0 writes the checkpoints (never called on the other ranks).
    pub save: &'a mut SaveCheckpoint<'a>,
}

/// The run of one rank after its start, the same on every rank and every backend (`flock run`
/// on CPU ranks and on GPUs, `check-ranks`): a barrier, `steps` steps (`tick` after each), the
/// wait for the device, a barrier; then the held counts, and with `gather` the own counts and
/// the flock on rank 0. Every call here is collective and made by every rank in this order
/// whatever the rank or the options (a call one rank skips would leave the others waiting).
pub fn run_rank<C, R>(
    comm: &C,
    r: &mut R,
    steps: u64,
    gather: bool,
    n: u64,
    tick: impl FnMut(),
) -> Result<RankRun, SlabError>
where
    C: Comm + ?Sized,
    R: SlabRank<C>,
{
    let mut never = crate::stop::Never;
    let mut save = |_: u64, _: &FlockState| -> Result<std::path::PathBuf, SlabError> {
        Err(SlabError::Invalid("no checkpoints in this run".into()))
    };
    let between = Between {
        first: 0,
        every: 0,
        stop: &mut never,
        save: &mut save,
    };
    run_rank_with(comm, r, steps, gather, n, tick, between)
}

/// [`run_rank`] with checkpoints and a stop: after each step, the stop probe (agreed over the
/// ranks), and at a checkpoint step (a multiple of `every` of the flock's step) or at a stop
/// the ranks gather their boids on rank 0, which writes one checkpoint; every rank learns
/// whether it was written (a failure there fails every rank).
pub fn run_rank_with<C, R>(
    comm: &C,
    r: &mut R,
    steps: u64,
    gather: bool,
    n: u64,
    mut tick: impl FnMut(),
    between: Between<'_>,
) -> Result<RankRun, SlabError>
where
    C: Comm + ?Sized,
    R: SlabRank<C>,
{
    let Between {
        first,
        every,
        stop,
        save,
    } = between;
    barrier(comm)?;
    let t0 = std::time::Instant::now();
    let mut stopped = None;
    let mut checkpoint = None;
    for done in 1..=steps {
        r.step(comm)?;
        tick();
        let step = first + done;
        let stop_here = done < steps && stop.stop_after(done)?;
        if stop_here || (every > 0 && step.is_multiple_of(every)) {
            r.synchronize()?;
            let all = gather_state(comm, &r.own_state()?, n)?;
            let wrote = all.map(|s| save(step, &s));
            let failed = matches!(wrote, Some(Err(_)));
            if comm.any(failed)? {
                return Err(match wrote {
                    Some(Err(e)) => e,
                    _ => SlabError::Invalid(format!(
                        "rank 0 could not write the checkpoint of step {step}"
                    )),
                });
            }
            checkpoint = wrote.and_then(Result::ok).or(checkpoint);
        }
        if stop_here {
            stopped = Some(step);
            break;
        }
    }
    r.synchronize()?;
    barrier(comm)?;
    let wall = t0.elapsed();
    let held = gather_u64(comm, r.held())?;
    let (own, state) = if gather {
        let mine = r.own_state()?;
        let own = gather_u64(comm, mine.len() as u64)?;
        (Some(own), gather_state(comm, &mine, n)?)
    } else {
        (None, None)
    };
    barrier(comm)?;
    Ok(RankRun {
        wall,
        held,
        own,
        state,
        stopped,
        checkpoint,
    })
}

/// One CPU rank: own boids and this step's halo, the same stages as the CPU reference's
/// `coherent` (keys, sort, cell table, gather, update) over them, own boids only updated.
pub struct CpuRank {
    pub plan: SlabPlan,
    params: FlockParams,
    grid: Grid,
    /// Own and halo boids of this step, in any order.
    pos: Vec<Vec3>,
    vel: Vec<Vec3>,
    id: Vec<u32>,
}

impl CpuRank {
    /// Takes the boids of `state` (the whole flock, which every rank holds on the CPU) that
    /// this rank owns, checks that no rank is empty, and exchanges the first halo.
    pub fn start<C: Comm + ?Sized>(
        comm: &C,
        settings: &FlockSettings,
        state: &FlockState,
    ) -> Result<CpuRank, SlabError> {
        let plan = SlabPlan::new(
            &settings.params,
            comm.rank(),
            comm.size(),
            state.len() as u64,
        )?;
        let mut r = CpuRank {
            params: settings.params,
            grid: settings.grid(),
            pos: Vec::new(),
            vel: Vec::new(),
            id: Vec::new(),
            plan,
        };
        for k in 0..state.len() {
            if r.plan.slab.owns(state.pos[k].x) {
                r.pos.push(state.pos[k]);
                r.vel.push(state.vel[k]);
                r.id.push(state.id[k]);
            }
        }
        check_start_counts(comm, &r.plan, r.pos.len() as u64)?;
        // The first halo: every boid is own and kept; the fates say where its copies go.
        let fates: Vec<Fate> = r.pos.iter().map(|p| r.plan.slab.fate(p.x)).collect();
        let (pos, vel, id) = (r.pos.clone(), r.vel.clone(), r.id.clone());
        r.exchange(comm, &pos, &vel, &id, &fates)?;
        Ok(r)
    }

    /// Boids this rank holds now (own and halo).
    pub fn held(&self) -> usize {
        self.pos.len()
    }

    /// One step: bin, update own boids, exchange.
    pub fn step<C: Comm + ?Sized>(&mut self, comm: &C) -> Result<(), SlabError> {
        let grid = self.grid;
        let p = self.params;
        let n = self.pos.len() as u32;
        let mut pairs: Vec<(u32, u32)> = (0..n)
            .map(|i| (grid.key(self.pos[i as usize]), i))
            .collect();
        // Each cell in id order (`WithinCell::ById`): a boid's neighbours are summed in the
        // order the single-rank reference sums them in with that setting.
        let ids = &self.id;
        pairs.par_sort_unstable_by_key(|&(key, i)| (key, ids[i as usize]));
        let cells = grid.cell_count();
        let mut start = vec![0u32; cells as usize + 1];
        for i in 0..n {
            fill_cell_start(
                i,
                n,
                cells,
                |k| pairs[k as usize].0,
                |key, v| start[key as usize] = v,
            );
        }
        let pos: Vec<Vec3> = pairs.iter().map(|&(_, j)| self.pos[j as usize]).collect();
        let vel: Vec<Vec3> = pairs.iter().map(|&(_, j)| self.vel[j as usize]).collect();
        let id: Vec<u32> = pairs.iter().map(|&(_, j)| self.id[j as usize]).collect();
        let slab = self.plan.slab;
        // (new position, new velocity, fate) of each entry; halo entries stay untouched.
        let updated: Vec<(Vec3, Vec3, Fate)> = (0..n as usize)
            .into_par_iter()
            .map(|i| {
                if !slab.owns(pos[i].x) {
                    return (pos[i], vel[i], Fate::default());
                }
                let s = grid_sums(
                    &p,
                    &grid,
                    pos[i],
                    vel[i],
                    |key| start[key as usize],
                    |k| (pos[k as usize], vel[k as usize]),
                );
                let v = new_velocity(&p, vel[i], &s);
                let x = integrate_position(&p, pos[i], v);
                (x, v, slab.fate(x.x))
            })
            .collect();
        let lost = updated.iter().filter(|u| u.2.lost).count();
        if lost > 0 {
            return Err(SlabError::Rank {
                rank: self.plan.rank,
                what: format!("{lost} boids moved past a whole neighbouring slab in one step"),
            });
        }
        let new_pos: Vec<Vec3> = updated.iter().map(|u| u.0).collect();
        let new_vel: Vec<Vec3> = updated.iter().map(|u| u.1).collect();
        let fates: Vec<Fate> = updated.iter().map(|u| u.2).collect();
        self.exchange(comm, &new_pos, &new_vel, &id, &fates)
    }

    /// Keeps the entries whose fate keeps them, sends the others' copies to the send slots'
    /// peers, and appends what the peers send here.
    fn exchange<C: Comm + ?Sized>(
        &mut self,
        comm: &C,
        pos: &[Vec3],
        vel: &[Vec3],
        id: &[u32],
        fates: &[Fate],
    ) -> Result<(), SlabError> {
        let slots = self.plan.peers.len();
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); slots];
        self.pos.clear();
        self.vel.clear();
        self.id.clear();
        for (k, f) in fates.iter().enumerate() {
            if f.keep {
                self.pos.push(pos[k]);
                self.vel.push(vel[k]);
                self.id.push(id[k]);
            }
            for (s, bytes) in out.iter_mut().enumerate() {
                if f.send[s] {
                    push_record(bytes, pos[k], id[k], vel[k]);
                }
            }
        }
        let sends: Vec<(usize, &[u8])> = self
            .plan
            .peers
            .iter()
            .zip(&out)
            .map(|(&p, b)| (p, &b[..]))
            .collect();
        let got = comm.send_recv(&sends, &self.plan.peers)?;
        let mut add = FlockState::default();
        for m in &got {
            read_records(m, &mut add);
        }
        self.pos.extend(add.pos);
        self.vel.extend(add.vel);
        self.id.extend(add.id);
        Ok(())
    }

    /// This rank's own boids (halo left out), in any order.
    pub fn own_state(&self) -> FlockState {
        let mut s = FlockState::default();
        for k in 0..self.pos.len() {
            if self.plan.slab.owns(self.pos[k].x) {
                s.pos.push(self.pos[k]);
                s.vel.push(self.vel[k]);
                s.id.push(self.id[k]);
            }
        }
        s
    }
}

impl<C: Comm + ?Sized> SlabRank<C> for CpuRank {
    fn step(&mut self, comm: &C) -> Result<(), SlabError> {
        CpuRank::step(self, comm)
    }

    fn held(&self) -> u64 {
        CpuRank::held(self) as u64
    }

    fn own_state(&self) -> Result<FlockState, SlabError> {
        Ok(CpuRank::own_state(self))
    }
}

/// The flock `start` run for `steps` steps on `ranks` CPU ranks in this process (threads over `LocalComm`): rank
/// 0's [`RankRun`].
pub fn run_cpu_ranks_as(
    settings: &FlockSettings,
    start: &FlockState,
    ranks: usize,
    steps: u64,
    gather: bool,
) -> Result<RankRun, SlabError> {
    check_ranks(&settings.params, ranks, start.len() as u64)?;
    let n = start.len() as u64;
    let out = crate::ranks::local::run_ranks(ranks, |comm| -> Result<_, SlabError> {
        let mut r = CpuRank::start(&comm, settings, start)?;
        run_rank(&comm, &mut r, steps, gather, n, || {})
    })?;
    Ok(out.into_iter().next().expect("rank 0 ran"))
}

/// A run of `ranks` CPU ranks in this process (threads over `LocalComm`).
pub struct CpuRanksRun {
    /// The final state, gathered and ordered by id.
    pub state: FlockState,
    /// Own boids of each rank at the end, in rank order.
    pub own: Vec<u64>,
    /// Boids each rank held at the end (own and halo).
    pub held: Vec<u64>,
}

/// Runs `steps` steps of the flock `start` on `ranks` CPU ranks in this process, gathered.
pub fn run_cpu_ranks(
    settings: &FlockSettings,
    start: &FlockState,
    ranks: usize,
    steps: u64,
) -> Result<CpuRanksRun, SlabError> {
    let run = run_cpu_ranks_as(settings, start, ranks, steps, true)?;
    Ok(CpuRanksRun {
        state: run.state.expect("rank 0 gathers"),
        own: run.own.expect("gathered"),
        held: run.held,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_cover_the_line_once() {
        let b = slab_bounds(100.0, 4);
        assert_eq!(b[0], (f32::NEG_INFINITY, -50.0));
        assert_eq!(b[1], (-50.0, 0.0));
        assert_eq!(b[3], (50.0, f32::INFINITY));
    }

    #[test]
    fn plans_name_their_peers() {
        let p = FlockParams::CIS565;
        let two = SlabPlan::new(&p, 0, 2, 100).unwrap();
        assert_eq!(two.peers, vec![1]);
        assert_eq!(two.slab.next_slot, 0);
        let four = SlabPlan::new(&p, 0, 4, 100).unwrap();
        assert_eq!(four.peers, vec![3, 1]);
        assert_eq!((four.slab.prev_face, four.slab.next_face), (0, 1));
        // 200 / 40 = 5 < 5.005 + 0.202.
        let e = SlabPlan::new(&p, 0, 40, 100).unwrap_err().to_string();
        assert!(e.contains("use at most 38 ranks"), "{e}");
        // A world of one (`flock scale --gpus 1`): the whole line, no neighbour, no face.
        let one = SlabPlan::new(&p, 0, 1, 100).unwrap();
        assert!(one.peers.is_empty());
        assert_eq!(
            (one.slab.lo, one.slab.hi),
            (f32::NEG_INFINITY, f32::INFINITY)
        );
        assert_eq!((one.slab.prev_face, one.slab.next_face), (0, 0));
        assert!(SlabPlan::new(&p, 0, 4, 3).is_err());
    }
}
