//! The flock on several GPUs: one rank per process and GPU ([`super::slab`] has the plan and
//! the protocol). Device buffers only: the random start is generated on each GPU (every rank
//! draws all `N` numbers and keeps its slab's boids), boids to send are packed on the GPU, the
//! counts go as host messages and the payloads GPU to GPU through NCCL
//! (`NcclComm::exchange_device`), and are unpacked on the GPU.
//!
//! A step (stages `scan_cells`, `slab_scatter`, `update_boids_slab`, the exchange,
//! `slab_unpack`): the counts (made by the last update and unpack) are scanned into the cell
//! table; the held boids (own + halo, with holes where boids left) are scattered into cell
//! order, skipping holes; `update_boids_slab` updates own boids into the other buffer at the
//! same index (a hole where a boid left or a halo boid was), counts the kept ones into their
//! new cells, and packs the boids to send per neighbour; one synchronisation reads the
//! tallies; counts are swapped, payloads exchanged, and `slab_unpack` appends and counts them.
//!
//! Memory per held boid: two bodies (16 B) and two velocities (12 B), 56 B, in buffers sized
//! for the rank's start share with headroom (up to 25%, as free memory allows) plus the
//! incoming halo; per grid cell 8 B for the whole domain's grid (every rank keeps the whole
//! cell table); the send and receive buffers of each neighbour (28 B per boid of the halo
//! estimate, twice).

use super::slab::{
    check_start_counts, halo_width, step_travel, swap_counts, SlabError, SlabPlan, SlabRank,
};
use super::{FlockSettings, FlockState, WithinCell};
use crate::gpu::scan::CellScan;
use crate::gpu::{DriverContext, Gpu, GpuError, Shape, Views};
use crate::ranks::nccl::NcclComm;
use crate::ranks::Comm;
use cudarc::driver::CudaSlice;
use murmur_common::flock::abi::OrderCells;
use murmur_common::flock::slab::{
    tally, InitSlab, RouteSlab, ScatterSlab, SlabSends, UnpackSlab, UpdateSlab, HOLE,
};
use murmur_common::flock::{Body, Grid};
use murmur_common::kernel::DevSliceMut;
use murmur_common::Vec3;

const BODY_BYTES: u64 = 16;
const VEL_BYTES: u64 = 12;
/// Device bytes per held boid: two bodies and two velocities.
pub const BYTES_PER_HELD_BOID: u64 = 2 * (BODY_BYTES + VEL_BYTES);
/// Boids drawn per launch of `slab_init`.
const INIT_CHUNK: u64 = 1 << 28;
/// Headroom of the state buffers over the rank's start share, for migration imbalance (less
/// when memory is short, at least [`MIN_HEADROOM`]).
const HEADROOM: f64 = 0.25;
const MIN_HEADROOM: f64 = 0.02;

/// Send and receive buffers of one neighbour (bytes: bodies, velocities).
struct Slot {
    send_body: CudaSlice<u8>,
    send_vel: CudaSlice<u8>,
    recv_body: CudaSlice<u8>,
    recv_vel: CudaSlice<u8>,
}

/// One rank of the flock on its GPU.
pub struct CudaRank {
    pub gpu: Gpu,
    pub plan: SlabPlan,
    settings: FlockSettings,
    grid: Grid,
    body: [CudaSlice<Body>; 2],
    vel: [CudaSlice<[f32; 3]>; 2],
    /// The buffers holding the current entries.
    cur: usize,
    /// Entries of the current buffers, holes included.
    entries: u64,
    /// Entries that are not holes (what binning puts in cell order).
    live: u64,
    counts: CudaSlice<u32>,
    cell_end: CudaSlice<u32>,
    scan: CellScan,
    slots: Vec<Slot>,
    tally: CudaSlice<u32>,
    /// Entries the state buffers hold.
    pub capacity: u64,
    /// Boids each send buffer holds.
    pub send_capacity: u64,
    /// Own boids of every rank at the start.
    pub start_counts: Vec<u64>,
    /// The order inside a cell the update sees (`ById`: `order_cells_by_id` after the scatter,
    /// so the sums come out as on one GPU with the same setting, bit for bit).
    within: WithinCell,
}

fn ping_pong<T>(pair: &mut [CudaSlice<T>; 2], read: usize) -> (&CudaSlice<T>, &mut CudaSlice<T>) {
    let (a, b) = pair.split_at_mut(1);
    if read == 0 {
        (&a[0], &mut b[0])
    } else {
        (&b[0], &mut a[0])
    }
}

impl CudaRank {
    /// The random CIS 565 start of `n` boids (the numbers of one GPU's `init_flock`), each rank
    /// keeping its slab's boids, and the first halo exchanged.
    pub fn random(
        comm: &NcclComm,
        gpu: Gpu,
        settings: &FlockSettings,
        n: u64,
        seed: u64,
    ) -> Result<CudaRank, SlabError> {
        let plan = SlabPlan::new(&settings.params, comm.rank(), comm.size(), n)?;
        let block = settings.block_size;
        let scale = settings.params.scale;
        // Count this rank's boids first (empty buffers: the kernel only tallies).
        let mut tally_buf = gpu.zeros::<u32>(tally::WORDS)?;
        let slab = plan.slab;
        let draw = move |gpu: &Gpu,
                         tally_buf: &mut CudaSlice<u32>,
                         mut bufs: Option<(&mut CudaSlice<Body>, &mut CudaSlice<[f32; 3]>)>|
              -> Result<(), GpuError> {
            let mut base = 0;
            while base < n {
                let chunk = (n - base).min(INIT_CHUNK);
                let shape = Shape::try_per_item(chunk, block)?;
                let state = bufs.as_mut().map(|(b, v)| (&mut **b, &mut **v));
                // SAFETY: one thread per drawn boid; claims past the buffers are only tallied.
                unsafe {
                    gpu.launch()
                        .run(shape, (state, &mut *tally_buf), |l, (state, tally)| {
                            let (body, vel) = match state {
                                Some((b, v)) => (l.write(b), l.write_cast(v)),
                                None => (DevSliceMut::empty(), DevSliceMut::empty()),
                            };
                            InitSlab {
                                n: chunk as u32,
                                scale,
                                base,
                                seed,
                                slab,
                                body,
                                vel,
                                tally: l.write(tally),
                            }
                        })
                }?;
                base += chunk;
            }
            Ok(())
        };
        draw(&gpu, &mut tally_buf, None)?;
        let own = comm.watched(|| gpu.download(&tally_buf))?[tally::KEPT] as u64;
        let start_counts = check_start_counts(comm, &plan, own)?;
        let mut r = CudaRank::allocate(gpu, plan, settings, &start_counts)?;
        r.gpu
            .stream
            .memset_zeros(&mut r.tally)
            .ctx("clearing the tally")?;
        draw(&r.gpu, &mut r.tally, Some((&mut r.body[0], &mut r.vel[0])))?;
        let got = r.gpu.download(&r.tally)?[tally::KEPT] as u64;
        if got != own {
            return Err(SlabError::Rank {
                rank: r.plan.rank,
                what: format!("the start drew {got} own boids, then {own}"),
            });
        }
        r.route(comm, own)?;
        Ok(r)
    }

    /// Starts from `state` (the whole flock on the host, e.g. a snapshot): this rank uploads
    /// its slab's boids.
    pub fn from_state(
        comm: &NcclComm,
        gpu: Gpu,
        settings: &FlockSettings,
        state: &FlockState,
    ) -> Result<CudaRank, SlabError> {
        let plan = SlabPlan::new(
            &settings.params,
            comm.rank(),
            comm.size(),
            state.len() as u64,
        )?;
        let mut bodies = Vec::new();
        let mut vels = Vec::new();
        for k in 0..state.len() {
            if plan.slab.owns(state.pos[k].x) {
                bodies.push(Body {
                    pos: state.pos[k],
                    id: state.id[k],
                });
                vels.push(state.vel[k].to_array());
            }
        }
        let own = bodies.len() as u64;
        let start_counts = check_start_counts(comm, &plan, own)?;
        let mut r = CudaRank::allocate(gpu, plan, settings, &start_counts)?;
        let s = r.gpu.stream.clone();
        s.memcpy_htod(&bodies, &mut r.body[0].slice_mut(..bodies.len()))
            .ctx("uploading positions")?;
        s.memcpy_htod(&vels, &mut r.vel[0].slice_mut(..vels.len()))
            .ctx("uploading velocities")?;
        r.route(comm, own)?;
        Ok(r)
    }

    /// Sizes and allocates the buffers for the start shares `counts` (checked against free
    /// memory: a clear error when even the smallest headroom does not fit).
    fn allocate(
        gpu: Gpu,
        plan: SlabPlan,
        settings: &FlockSettings,
        counts: &[u64],
    ) -> Result<CudaRank, SlabError> {
        let grid = settings.grid();
        let cells = grid.cell_count() as u64;
        let p = &settings.params;
        let most = *counts.iter().max().unwrap_or(&1);
        let width = 2.0 * p.scale as f64 / plan.size as f64;
        // The boids within the halo and one step of a face, twice (the flock gathers), and at
        // least 64k.
        let band = (halo_width(p) + step_travel(p)) as f64 / width;
        let send_capacity = ((most as f64 * band * 2.0) as u64).max(1 << 16);
        let slots = plan.peers.len() as u64;
        let fixed = cells * 8
            + CellScan::bytes_needed(cells as u32)
            + slots * 2 * send_capacity * (BODY_BYTES + VEL_BYTES)
            + 64;
        let own = counts[plan.rank];
        let incoming = slots * send_capacity;
        let need = |headroom: f64| (own as f64 * (1.0 + headroom)) as u64 + incoming;
        let (free, total) = gpu.memory()?;
        // As `Gpu::check_fits`: 5% and 256 MiB kept free.
        let usable = (free as f64 / 1.05) as u64;
        let usable = usable.saturating_sub(256 << 20).saturating_sub(fixed);
        let fits = usable / BYTES_PER_HELD_BOID;
        let capacity = need(HEADROOM).min(fits).min(u32::MAX as u64);
        if capacity < need(MIN_HEADROOM) {
            let bytes = fixed + need(MIN_HEADROOM) * BYTES_PER_HELD_BOID;
            return Err(GpuError::OutOfMemory {
                what: format!(
                    "rank {}'s share of the flock ({own} boids, {cells} grid cells, {}% headroom)",
                    plan.rank,
                    (MIN_HEADROOM * 100.0) as u32
                ),
                need_mib: (bytes + bytes / 20 + (256 << 20)) >> 20,
                free_mib: free >> 20,
                total_mib: total >> 20,
            }
            .into());
        }
        let z = capacity as usize;
        let byte_buf = |per: u64| gpu.zeros::<u8>((send_capacity * per) as usize);
        let mut slot_bufs = Vec::new();
        for _ in 0..slots {
            slot_bufs.push(Slot {
                send_body: byte_buf(BODY_BYTES)?,
                send_vel: byte_buf(VEL_BYTES)?,
                recv_body: byte_buf(BODY_BYTES)?,
                recv_vel: byte_buf(VEL_BYTES)?,
            });
        }
        Ok(CudaRank {
            body: [gpu.zeros(z)?, gpu.zeros(z)?],
            vel: [gpu.zeros(z)?, gpu.zeros(z)?],
            cur: 0,
            entries: 0,
            live: 0,
            counts: gpu.zeros(cells as usize)?,
            cell_end: gpu.zeros(cells as usize)?,
            scan: CellScan::new(&gpu, cells as u32)?,
            slots: slot_bufs,
            tally: gpu.zeros(tally::WORDS)?,
            capacity,
            send_capacity,
            start_counts: counts.to_vec(),
            within: WithinCell::Binned,
            settings: settings.clone(),
            grid,
            plan,
            gpu,
        })
    }

    /// Chooses the order inside a cell the update sees.
    pub fn set_within_cell(&mut self, within: WithinCell) {
        self.within = within;
    }

    /// Device bytes per own boid of the start share (all buffers counted).
    pub fn bytes_per_own_boid(&self) -> f64 {
        let cells = self.grid.cell_count() as u64;
        let slots = self.slots.len() as u64;
        let bytes = self.capacity * BYTES_PER_HELD_BOID
            + cells * 8
            + CellScan::bytes_needed(cells as u32)
            + slots * 2 * self.send_capacity * (BODY_BYTES + VEL_BYTES);
        bytes as f64 / self.start_counts[self.plan.rank].max(1) as f64
    }

    /// The start's own boids `0..own` of the current buffers: counted, the first halo sent.
    fn route(&mut self, comm: &NcclComm, own: u64) -> Result<(), SlabError> {
        self.gpu
            .stream
            .memset_zeros(&mut self.tally)
            .ctx("clearing the tally")?;
        let block = self.settings.block_size;
        {
            let shape = Shape::try_per_item(own, block)?;
            let (grid, slab) = (self.grid, self.plan.slab);
            let (body, vel) = (&self.body[self.cur], &self.vel[self.cur]);
            let buffers = (&mut self.slots[..], &mut self.tally, &mut self.counts);
            // SAFETY: own < capacity boids; counts zeroed (fresh); sends sized as tallied.
            unsafe {
                self.gpu
                    .launch()
                    .run(shape, buffers, |l, (slots, tally, counts)| {
                        let sends = sends_view(l, slots, tally);
                        RouteSlab {
                            n: own as u32,
                            grid,
                            slab,
                            body: l.read(body),
                            vel: l.read_cast(vel),
                            counts: l.write(counts),
                            sends,
                        }
                    })
            }?;
        }
        self.entries = own;
        self.exchange(comm)
    }

    /// One step (waits for the GPU once, to read the tallies).
    pub fn step(&mut self, comm: &NcclComm) -> Result<(), SlabError> {
        comm.beat();
        let block = self.settings.block_size;
        let grid = self.grid;
        let cells = grid.cell_count();
        self.scan.run(
            &self.gpu,
            &mut self.counts,
            &mut self.cell_end,
            cells,
            false,
        )?;
        let (cur, other) = (self.cur, self.cur ^ 1);
        {
            let shape = Shape::try_per_item(self.entries, block)?;
            let n = self.entries as u32;
            let (bin, bout) = ping_pong(&mut self.body, cur);
            let (vin, vout) = ping_pong(&mut self.vel, cur);
            let buffers = (&mut self.cell_end, bout, vout);
            // SAFETY: the non-hole entries are the counted ones: their claims are a
            // permutation of 0..live.
            unsafe {
                self.gpu
                    .launch()
                    .run(shape, buffers, |l, (cell_end, bout, vout)| ScatterSlab {
                        n,
                        grid,
                        body_in: l.read(bin),
                        vel_in: l.read_cast(vin),
                        cell_end: l.write(cell_end),
                        body_out: l.write(bout),
                        vel_out: l.write_cast(vout),
                    })
            }?;
        }
        if self.within == WithinCell::ById {
            let shape = Shape::try_per_item(cells as u64, block)?;
            let cell_end = &self.cell_end;
            let buffers = (&mut self.body[other], &mut self.vel[other]);
            // SAFETY: cell_end holds the ends of the scattered cells (a partition of
            // 0..live); one thread per cell moves entries inside its own cell only.
            unsafe {
                self.gpu
                    .launch()
                    .run(shape, buffers, |l, (body, vel)| OrderCells {
                        cell_count: cells,
                        cell_end: l.read(cell_end),
                        body: l.write(body),
                        vel: l.write_cast(vel),
                    })
            }?;
        }
        {
            let shape = Shape::try_per_item(self.live, block)?;
            let (n, params, slab) = (self.live as u32, self.settings.params, self.plan.slab);
            let cell_end = &self.cell_end;
            let (bin, bout) = ping_pong(&mut self.body, other);
            let (vin, vout) = ping_pong(&mut self.vel, other);
            let buffers = (
                &mut self.slots[..],
                &mut self.tally,
                bout,
                vout,
                &mut self.counts,
            );
            // SAFETY: live entries in cell order with their table; the outputs hold capacity
            // >= live entries; counts zeroed by the scan.
            unsafe {
                self.gpu
                    .launch()
                    .run(shape, buffers, |l, (slots, tally, bout, vout, counts)| {
                        let sends = sends_view(l, slots, tally);
                        UpdateSlab {
                            n,
                            grid,
                            params,
                            slab,
                            cell_end: l.read(cell_end),
                            body: l.read(bin),
                            vel: l.read_cast(vin),
                            body_out: l.write(bout),
                            vel_out: l.write_cast(vout),
                            counts: l.write(counts),
                            sends,
                        }
                    })
            }?;
        }
        self.entries = self.live;
        self.exchange(comm)
    }

    /// Reads the tallies (the one wait of a step), swaps counts with the neighbours,
    /// exchanges the packed boids GPU to GPU and appends them.
    fn exchange(&mut self, comm: &NcclComm) -> Result<(), SlabError> {
        let rank = self.plan.rank;
        let t = comm.watched(|| self.gpu.download(&self.tally))?;
        self.gpu
            .stream
            .memset_zeros(&mut self.tally)
            .ctx("clearing the tally")?;
        if t[tally::LOST] > 0 {
            return Err(SlabError::Rank {
                rank,
                what: format!(
                    "{} boids moved past a whole neighbouring slab in one step",
                    t[tally::LOST]
                ),
            });
        }
        let slots = self.slots.len();
        let sent: Vec<u64> = (0..slots).map(|s| t[tally::SENT + s] as u64).collect();
        for (s, &k) in sent.iter().enumerate() {
            if k > self.send_capacity {
                return Err(SlabError::Rank {
                    rank,
                    what: format!(
                        "{k} boids to send to rank {}, more than its buffer holds ({}): the \
                         flock gathered at a slab face",
                        self.plan.peers[s], self.send_capacity
                    ),
                });
            }
        }
        // The update keeps the entries it does not drop; at the start every entry is kept.
        let kept = if self.live == 0 && self.entries > 0 {
            self.entries
        } else {
            self.live
                .checked_sub(t[tally::DROPPED] as u64)
                .ok_or_else(|| SlabError::Rank {
                    rank,
                    what: format!(
                        "the update dropped {} of {} entries",
                        t[tally::DROPPED],
                        self.live
                    ),
                })?
        };
        let recv = swap_counts(comm, &self.plan, &sent)?;
        let incoming: u64 = recv.iter().sum();
        if self.entries + incoming > self.capacity {
            return Err(SlabError::Rank {
                rank,
                what: format!(
                    "{} boids do not fit the {} this rank holds (its start share was {}): the \
                     flock drifted too far from an even split",
                    self.entries + incoming,
                    self.capacity,
                    self.start_counts[rank]
                ),
            });
        }
        // NCCL's stream waits for the packing; the compute stream for the exchange.
        comm.stream
            .join(&self.gpu.stream)
            .ctx("ordering the exchange after the update")?;
        {
            let mut sends = Vec::new();
            let mut recvs = Vec::new();
            for (s, slot) in self.slots.iter_mut().enumerate() {
                let peer = self.plan.peers[s];
                let Slot {
                    send_body,
                    send_vel,
                    recv_body,
                    recv_vel,
                } = slot;
                if sent[s] > 0 {
                    sends.push((peer, &*send_body, (sent[s] * BODY_BYTES) as usize));
                    sends.push((peer, &*send_vel, (sent[s] * VEL_BYTES) as usize));
                }
                if recv[s] > 0 {
                    recvs.push((peer, recv_body, (recv[s] * BODY_BYTES) as usize));
                    recvs.push((peer, recv_vel, (recv[s] * VEL_BYTES) as usize));
                }
            }
            comm.exchange_device(&sends, &mut recvs)?;
        }
        self.gpu
            .stream
            .join(&comm.stream)
            .ctx("ordering the unpack after the exchange")?;
        let block = self.settings.block_size;
        let mut at = self.entries;
        for (s, slot) in self.slots.iter_mut().enumerate() {
            let k = recv[s];
            if k == 0 {
                continue;
            }
            if k > self.send_capacity {
                return Err(SlabError::Rank {
                    rank,
                    what: format!("rank {} sends {k} boids, more than fit", self.plan.peers[s]),
                });
            }
            let shape = Shape::try_per_item(k, block)?;
            let grid = self.grid;
            let (recv_body, recv_vel) = (&slot.recv_body, &slot.recv_vel);
            let buffers = (
                &mut self.body[self.cur],
                &mut self.vel[self.cur],
                &mut self.counts,
            );
            // SAFETY: k received boids; the outputs start at the first free entry.
            unsafe {
                self.gpu
                    .launch()
                    .run(shape, buffers, |l, (body, vel, counts)| {
                        let body_out = l.write(body);
                        let vel_out: DevSliceMut<Vec3> = l.write_cast(vel);
                        UnpackSlab {
                            n: k as u32,
                            grid,
                            body_in: l.read_as::<Body>(recv_body),
                            vel_in: l.read_as::<Vec3>(recv_vel),
                            // SAFETY: at + k <= capacity (checked above).
                            body_out: body_out.range(at, k),
                            vel_out: vel_out.range(at, k),
                            counts: l.write(counts),
                        }
                    })
            }?;
            at += k;
        }
        self.entries = at;
        self.live = kept + incoming;
        Ok(())
    }

    /// Waits for the GPU.
    pub fn synchronize(&self) -> Result<(), SlabError> {
        Ok(self.gpu.synchronize()?)
    }

    /// Boids held now (own and halo).
    pub fn held(&self) -> u64 {
        self.live
    }

    /// This rank's own boids, copied back (any order).
    pub fn own_state(&self) -> Result<FlockState, SlabError> {
        let e = self.entries as usize;
        let bodies = self
            .gpu
            .stream
            .clone_dtoh(&self.body[self.cur].slice(..e))
            .ctx("copying boids back")?;
        let vel = self
            .gpu
            .stream
            .clone_dtoh(&self.vel[self.cur].slice(..e))
            .ctx("copying velocities back")?;
        let mut s = FlockState::default();
        for (b, v) in bodies.iter().zip(vel) {
            if b.id != HOLE && self.plan.slab.owns(b.pos.x) {
                s.pos.push(b.pos);
                s.id.push(b.id);
                s.vel.push(Vec3::from_array(v));
            }
        }
        Ok(s)
    }
}

/// The send buffers and tally as a kernel sees them (slot 1 empty with one neighbour).
fn sends_view<'b>(
    l: &mut Views<'b>,
    slots: &'b mut [Slot],
    tally: &'b mut CudaSlice<u32>,
) -> SlabSends {
    let mut body = [DevSliceMut::empty(), DevSliceMut::empty()];
    let mut vel = [DevSliceMut::empty(), DevSliceMut::empty()];
    for (s, slot) in slots.iter_mut().enumerate() {
        body[s] = l.write_as::<Body>(&mut slot.send_body);
        vel[s] = l.write_as::<Vec3>(&mut slot.send_vel);
    }
    SlabSends {
        body,
        vel,
        tally: l.write(tally),
    }
}

impl SlabRank<NcclComm> for CudaRank {
    fn step(&mut self, comm: &NcclComm) -> Result<(), SlabError> {
        CudaRank::step(self, comm)
    }

    fn synchronize(&self) -> Result<(), SlabError> {
        CudaRank::synchronize(self)
    }

    fn held(&self) -> u64 {
        CudaRank::held(self)
    }

    fn own_state(&self) -> Result<FlockState, SlabError> {
        CudaRank::own_state(self)
    }
}
