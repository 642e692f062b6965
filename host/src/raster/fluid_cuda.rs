//! The fluid viewer on the GPU: the smoke's advection (`smoke_forward`, `smoke_backward`,
//! `smoke_correct`) and a frame's stages (`fluid_derived`, `smoke_light`, `fluid_occupancy`,
//! `render_clear`, `fluid_splat`, `fluid_shade`) on a CUDA lattice's own fields buffer, then
//! one copy of the `RGBA8` frame back into page-locked memory kept between frames.
//!
//! What a frame reads is computed only where and when it changes: a slice's derived arrays on
//! its plane alone (the backend computes the plane's fields, `FluidFrame::field_planes`), the
//! derived arrays and a volume's occupancy once per state step, the smoke's light volume and
//! occupancy once per advection. Each frame's stages are timed with CUDA events
//! ([`CudaFluidRaster::times`]).

use crate::gpu::{DriverContext, Gpu, GpuError, Shape, StageClock, Views};
use crate::timing::StageTimes;
use cudarc::driver::{CudaSlice, PinnedHostSlice};
use murmur_common::render::abi::{
    FluidDerived, FluidOccupancy, FluidShade, FluidSplat, RenderClear, SmokeBackward, SmokeCorrect,
    SmokeForward, SmokeLight, PIXEL_BLOCK,
};
use murmur_common::render::fluid::{FluidFrame, Planes, Quantity, ViewKind, Volumes};
use murmur_common::render::occupancy::Bricks;
use murmur_common::render::smoke::{SmokeParams, SmokeSource};
use murmur_common::DevSlice;

/// Threads per block of the per-cell and per-sample kernels (a multiple of 32: the occupancy
/// launch is whole warps).
const BLOCK: u32 = 128;

/// The smoke on the GPU: density, BFECC's forward step (then the next density) and its
/// compensated field, the sources.
pub struct CudaSmoke {
    s: CudaSlice<f32>,
    hat: CudaSlice<f32>,
    e: CudaSlice<f32>,
    sources: CudaSlice<SmokeSource>,
    count: u32,
    /// Advections so far: what the frames' light volume and occupancy were built from.
    advections: u64,
}

impl CudaSmoke {
    /// No smoke yet in a lattice of `cells` cells (12 bytes per cell).
    pub fn new(gpu: &Gpu, cells: usize, sources: &[SmokeSource]) -> Result<CudaSmoke, GpuError> {
        gpu.check_fits("the smoke (12 bytes per cell)", 12 * cells as u64)?;
        // One dummy source keeps the buffer non-empty.
        let upload = if sources.is_empty() {
            vec![SmokeSource::default()]
        } else {
            sources.to_vec()
        };
        Ok(CudaSmoke {
            s: gpu.zeros(cells)?,
            hat: gpu.zeros(cells)?,
            e: gpu.zeros(cells)?,
            sources: gpu.upload(&upload)?,
            count: sources.len() as u32,
            advections: 0,
        })
    }

    /// One advection by the velocity of `fields` (`4 n` values on the device).
    pub fn advect(
        &mut self,
        gpu: &Gpu,
        p: &SmokeParams,
        fields: &CudaSlice<f32>,
        flags: &CudaSlice<u8>,
    ) -> Result<(), GpuError> {
        let p = SmokeParams {
            sources: self.count,
            ..*p
        };
        let cells = Shape::try_per_item(p.lattice.cells() as u64, BLOCK)?;
        // SAFETY: one thread per cell; the buffers hold the lattice.
        unsafe {
            gpu.launch()
                .run(cells, &mut self.hat, |l, hat| SmokeForward {
                    p,
                    fields: l.read(fields),
                    flags: l.read(flags),
                    s: l.read(&self.s),
                    s_hat: l.write(hat),
                })
        }?;
        // SAFETY: as above.
        unsafe {
            gpu.launch().run(cells, &mut self.e, |l, e| SmokeBackward {
                p,
                fields: l.read(fields),
                flags: l.read(flags),
                s: l.read(&self.s),
                s_hat: l.read(&self.hat),
                e: l.write(e),
            })
        }?;
        // SAFETY: as above; `sources` holds `p.sources` entries (at least one).
        unsafe {
            gpu.launch()
                .run(cells, &mut self.hat, |l, hat| SmokeCorrect {
                    p,
                    fields: l.read(fields),
                    flags: l.read(flags),
                    sources: l.read(&self.sources),
                    s: l.read(&self.s),
                    e: l.read(&self.e),
                    s_new: l.write(hat),
                })
        }?;
        std::mem::swap(&mut self.s, &mut self.hat);
        self.advections += 1;
        Ok(())
    }

    /// The density on the device.
    pub fn density(&self) -> &CudaSlice<f32> {
        &self.s
    }

    /// Advections so far (the density changes with each).
    pub fn advections(&self) -> u64 {
        self.advections
    }
}

/// What a frame's occupancy bricks were built from: the smoke after a number of advections,
/// or a volume's quantity and range at a step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum OccupancyOf {
    Smoke(Option<u64>),
    Volume {
        step: u64,
        quantity: u32,
        lo: u32,
        hi: u32,
    },
}

/// The frame's buffers on the GPU and the host, allocated on first use (pixel buffers per
/// frame size), and what the cached volumes were computed from.
#[derive(Default)]
pub struct CudaFluidRaster {
    keys: Option<CudaSlice<u64>>,
    rgba: Option<CudaSlice<u8>>,
    /// The frame's page-locked copy on the host.
    host: Option<PinnedHostSlice<u8>>,
    derived: Option<CudaSlice<f32>>,
    /// The step and planes the derived arrays hold.
    derived_of: Option<(u64, Planes)>,
    light: Option<CudaSlice<f32>>,
    /// The smoke's advections and the extinction (bits) the light volume was built with.
    light_of: Option<(Option<u64>, u32)>,
    occupancy: Option<CudaSlice<u8>>,
    occupancy_of: Option<OccupancyOf>,
    /// No smoke yet: zeros for the views that read it.
    zero_smoke: Option<CudaSlice<f32>>,
    /// A one-value stand-in for the buffers a frame does not read.
    dummy: Option<CudaSlice<f32>>,
    solids: Option<CudaSlice<[f32; 3]>>,
    solids_host: Option<PinnedHostSlice<[f32; 3]>>,
    clock: Option<StageClock>,
    /// Whether this frame's first event is recorded ([`CudaFluidRaster::begin`]).
    begun: bool,
}

/// The buffers of a frame's [`Volumes`] (a one-value dummy for those it does not read).
struct VolumeBuffers<'a> {
    fields: &'a CudaSlice<f32>,
    derived: Option<&'a CudaSlice<f32>>,
    smoke: Option<&'a CudaSlice<f32>>,
    light: Option<&'a CudaSlice<f32>>,
    flags: &'a CudaSlice<u8>,
    dummy: &'a CudaSlice<f32>,
}

impl<'a> VolumeBuffers<'a> {
    /// Their views in one launch, with `occupancy`.
    fn views<'b>(&self, la: &mut Views<'b>, occupancy: DevSlice<u8>) -> Volumes
    where
        'a: 'b,
    {
        let mut or_dummy = |b: Option<&'a CudaSlice<f32>>| la.read(b.unwrap_or(self.dummy));
        Volumes {
            fields: or_dummy(Some(self.fields)),
            derived: or_dummy(self.derived),
            smoke: or_dummy(self.smoke),
            light: or_dummy(self.light),
            flags: la.read(self.flags),
            occupancy,
        }
    }
}

/// What a frame is drawn from on the device.
pub struct DeviceInput<'a> {
    /// `rho, u` as `FluidBackend::fields` lays them out, current on the frame's
    /// `FluidFrame::field_planes`.
    pub fields: &'a CudaSlice<f32>,
    pub flags: &'a CudaSlice<u8>,
    pub smoke: Option<&'a CudaSmoke>,
    /// The state's step: the derived arrays and a volume's occupancy stay while it does.
    pub step: u64,
    /// Solid sample positions (lattice coordinates), uploaded per frame.
    pub solids: &'a [[f32; 3]],
    pub solid_radius: f32,
    /// Coloured points drawn over the fluid (a coupled flock's boids), uploaded per frame.
    pub points: crate::fluid::Points<'a>,
}

impl CudaFluidRaster {
    /// Starts a frame's timing before the backend queues the frame's fields (the first stage,
    /// `fields`, runs from here to [`CudaFluidRaster::draw`]).
    pub fn begin(&mut self, gpu: &Gpu) -> Result<(), GpuError> {
        let clock = self.clock.get_or_insert_with(|| StageClock::new(&gpu.ctx));
        clock.begin(&gpu.stream)?;
        self.begun = true;
        Ok(())
    }

    /// Per-frame GPU times of the stages since the last [`CudaFluidRaster::reset_times`]
    /// (waits for the frames drawn so far).
    pub fn times(&mut self) -> Result<StageTimes, GpuError> {
        match self.clock.as_mut() {
            Some(c) => c.times(),
            None => Ok(StageTimes::default()),
        }
    }

    pub fn reset_times(&mut self) -> Result<(), GpuError> {
        match self.clock.as_mut() {
            Some(c) => c.reset(),
            None => Ok(()),
        }
    }

    /// Draws `frame` into `rgba` (`width * height * 4` bytes, checked by the caller) and waits
    /// for the copy.
    pub fn draw(
        &mut self,
        gpu: &Gpu,
        frame: &FluidFrame,
        input: &DeviceInput<'_>,
        rgba: &mut [u8],
    ) -> Result<(), GpuError> {
        if !self.begun {
            self.begin(gpu)?;
        }
        self.begun = false;
        let mark = |c: &mut Option<StageClock>, stage| match c.as_mut() {
            Some(c) => c.mark(&gpu.stream, stage),
            None => Ok(()),
        };
        mark(&mut self.clock, "fields")?;
        let l = frame.lattice;
        let n = l.cells();
        let pixels = frame.view.width as usize * frame.view.height as usize;
        if self.keys.as_ref().is_none_or(|k| k.len() != pixels) {
            self.keys = None;
            self.rgba = None;
            self.host = None;
            gpu.check_fits("the frame (12 bytes per pixel)", 12 * pixels as u64)?;
            self.keys = Some(gpu.zeros(pixels)?);
            self.rgba = Some(gpu.zeros(4 * pixels)?);
            self.host = Some(gpu.pinned(4 * pixels)?);
        }
        if self.dummy.is_none() {
            self.dummy = Some(gpu.zeros(1)?);
        }
        let q = Quantity::from_u32(frame.quantity);
        let smoke_kind = frame.kind == ViewKind::Smoke as u32;
        let needs_smoke = smoke_kind || (q == Quantity::Smoke);
        if needs_smoke && input.smoke.is_none() && self.zero_smoke.is_none() {
            self.zero_smoke = Some(gpu.zeros::<f32>(n)?);
        }
        let smoke = match input.smoke {
            Some(s) => Some(s.density()),
            None if needs_smoke => self.zero_smoke.as_ref(),
            None => None,
        };
        let smoke_state = input.smoke.map(|s| s.advections());

        // Stage `fluid_derived`: a slice's plane or every cell, once per step.
        if let Some(planes) = frame.derived_planes() {
            if self.derived.as_ref().is_none_or(|b| b.len() != 2 * n) {
                self.derived = None;
                self.derived_of = None;
                gpu.check_fits("the derived fields (8 bytes per cell)", 8 * n as u64)?;
                self.derived = Some(gpu.zeros(2 * n)?);
            }
            let current = self
                .derived_of
                .is_some_and(|(step, p)| step == input.step && (p == planes || p.is_all(&l)));
            if !current {
                let Some(derived) = self.derived.as_mut() else {
                    unreachable!("allocated above")
                };
                let shape = Shape::try_per_item(planes.cells(&l) as u64, BLOCK)?;
                // SAFETY: one thread per cell of the planes; fields hold 4 n values (current
                // where the planes' gradients reach), derived 2 n.
                unsafe {
                    gpu.launch()
                        .run(shape, derived, |la, derived| FluidDerived {
                            lattice: l,
                            periodic: 0b111,
                            planes,
                            fields: la.read(input.fields),
                            flags: la.read(input.flags),
                            derived: la.write(derived),
                        })
                }?;
                self.derived_of = Some((input.step, planes));
            }
        }
        mark(&mut self.clock, "derived")?;

        // Stage `smoke_light`, once per advection (and extinction).
        if smoke_kind {
            if self.light.as_ref().is_none_or(|b| b.len() != n) {
                self.light = None;
                self.light_of = None;
                gpu.check_fits("the light volume (4 bytes per cell)", 4 * n as u64)?;
                self.light = Some(gpu.zeros(n)?);
            }
            let of = (smoke_state, frame.sigma.to_bits());
            if self.light_of != Some(of) {
                let (Some(light), Some(smoke)) = (self.light.as_mut(), smoke) else {
                    unreachable!("allocated above")
                };
                let shape = Shape::try_per_item(l.nx as u64 * l.nz as u64, BLOCK)?;
                // SAFETY: one thread per (x, z) column of the lattice.
                unsafe {
                    gpu.launch().run(shape, light, |la, light| SmokeLight {
                        lattice: l,
                        sigma: frame.sigma,
                        smoke: la.read(smoke),
                        light: la.write(light),
                    })
                }?;
                self.light_of = Some(of);
            }
        }
        mark(&mut self.clock, "light")?;

        let Some(dummy) = self.dummy.as_ref() else {
            unreachable!("allocated above")
        };
        let volumes = VolumeBuffers {
            fields: input.fields,
            derived: self.derived.as_ref().filter(|_| q.derived()),
            smoke,
            light: self.light.as_ref().filter(|_| smoke_kind),
            flags: input.flags,
            dummy,
        };

        // Stage `fluid_occupancy` (the marches), when what it reads changed.
        let marching = frame.kind != ViewKind::Slice as u32;
        if marching {
            let bricks = Bricks::of(&l).count();
            let of = if smoke_kind {
                OccupancyOf::Smoke(smoke_state)
            } else {
                OccupancyOf::Volume {
                    step: input.step,
                    quantity: frame.quantity,
                    lo: frame.lo.to_bits(),
                    hi: frame.hi.to_bits(),
                }
            };
            if self.occupancy.as_ref().is_none_or(|b| b.len() != bricks) {
                self.occupancy = Some(gpu.zeros(bricks)?);
                self.occupancy_of = None;
            }
            if self.occupancy_of != Some(of) {
                let Some(occupancy) = self.occupancy.as_mut() else {
                    unreachable!("allocated above")
                };
                let shape = Shape::try_per_item(bricks as u64 * 32, BLOCK)?;
                // SAFETY: one warp per brick (BLOCK is a multiple of 32); the volumes the
                // frame reads hold the lattice.
                unsafe {
                    gpu.launch()
                        .run(shape, occupancy, |la, occupancy| FluidOccupancy {
                            frame: *frame,
                            volumes: volumes.views(la, DevSlice::empty()),
                            occupancy: la.write(occupancy),
                        })
                }?;
                self.occupancy_of = Some(of);
            }
        }
        mark(&mut self.clock, "occupancy")?;

        // Stages `render_clear` and `fluid_splat`: the solids' samples.
        let count = input.solids.len();
        if count > 0 && self.solids.as_ref().is_none_or(|b| b.len() != count) {
            self.solids = Some(gpu.zeros(count)?);
            self.solids_host = Some(gpu.pinned(count)?);
        }
        let Some(keys) = self.keys.as_mut() else {
            unreachable!("allocated above")
        };
        let per_pixel = Shape::try_per_item(pixels as u64, PIXEL_BLOCK)?;
        // SAFETY: one thread per key.
        unsafe {
            gpu.launch()
                .run(per_pixel, &mut *keys, |la, keys| RenderClear {
                    frame: la.write(keys),
                })
        }?;
        if let (Some(buf), Some(host)) = (
            self.solids.as_mut().filter(|_| count > 0),
            self.solids_host.as_mut(),
        ) {
            // The previous frame's upload from it finished: every frame ends synchronised.
            host.as_mut_slice()
                .ctx("filling the solids' samples")?
                .copy_from_slice(input.solids);
            gpu.stream
                .memcpy_htod(host, buf)
                .ctx("uploading the solids' samples")?;
            let shape = Shape::try_per_item(count as u64, BLOCK)?;
            let buf = &*buf;
            // SAFETY: one thread per sample; pixels stay inside the frame.
            unsafe {
                gpu.launch().run(shape, &mut *keys, |la, keys| FluidSplat {
                    n: count as u32,
                    radius: input.solid_radius,
                    view: frame.view,
                    pos: la.read_cast(buf),
                    colours: DevSlice::empty(),
                    frame: la.write(keys),
                })
            }?;
        }
        let pts = &input.points;
        if !pts.pos.is_empty() {
            let n = pts.pos.len();
            let (pos, colours) = (gpu.upload(pts.pos)?, gpu.upload(pts.colour)?);
            let shape = Shape::try_per_item(n as u64, BLOCK)?;
            // SAFETY: one thread per point; pixels stay inside the frame.
            unsafe {
                gpu.launch().run(shape, &mut *keys, |la, keys| FluidSplat {
                    n: n as u32,
                    radius: pts.radius,
                    view: frame.view,
                    pos: la.read_cast(&pos),
                    colours: la.read(&colours),
                    frame: la.write(keys),
                })
            }?;
        }
        mark(&mut self.clock, "splat")?;

        // Stage `fluid_shade`.
        let occupancy = self.occupancy.as_ref().filter(|_| marching);
        let (Some(keys), Some(out)) = (self.keys.as_ref(), self.rgba.as_mut()) else {
            unreachable!("allocated above")
        };
        // SAFETY: one thread per pixel; every volume the frame reads holds the lattice (the
        // dummies stand in only for those its kind and quantity never read), the occupancy
        // its bricks.
        unsafe {
            gpu.launch().run(per_pixel, &mut *out, |la, out| {
                let occupancy = match occupancy {
                    Some(o) => la.read(o),
                    None => DevSlice::empty(),
                };
                FluidShade {
                    frame: *frame,
                    volumes: volumes.views(la, occupancy),
                    keys: la.read(keys),
                    rgba: la.write_as::<u32>(out),
                }
            })
        }?;
        mark(&mut self.clock, "shade")?;

        // The copy back, into page-locked memory: one DMA at the link's speed.
        let Some(host) = self.host.as_mut() else {
            unreachable!("allocated above")
        };
        gpu.stream
            .memcpy_dtoh(out, host)
            .ctx("copying the frame from the GPU")?;
        mark(&mut self.clock, "copy")?;
        if let Some(c) = self.clock.as_mut() {
            c.end();
        }
        gpu.synchronize()?;
        rgba.copy_from_slice(&host.as_slice().ctx("reading the frame")?[..4 * pixels]);
        Ok(())
    }
}
