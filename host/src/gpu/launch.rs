//! The one launch layer: every kernel is launched here, from its typed argument struct
//! (`murmur_common::kernel`), with a [`Shape`] (grid, block, dynamic shared bytes, and whether it
//! may overlap the previous kernel in the stream: programmatic dependent launch, PDL).
//!
//! ```no_run
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::CountCells, Body, Grid};
//! fn count(gpu: &Gpu, grid: Grid, body: &CudaSlice<Body>, counts: &mut CudaSlice<u32>)
//!     -> Result<(), GpuError> {
//!     let n = body.len() as u32;
//!     let shape = Shape::try_per_item(n as u64, 256)?;
//!     // SAFETY: body holds n boids, counts one zeroed entry per cell.
//!     unsafe {
//!         gpu.launch().run(shape, counts, |l, counts| CountCells {
//!             n,
//!             grid,
//!             body: l.read(body),
//!             counts: l.write(counts),
//!         })
//!     }
//! }
//! ```
//!
//! # Views bound to their launch
//! A kernel's arguments hold its buffers as [`DevSlice`] (read) and [`DevSliceMut`] (written):
//! `Copy` pointers without a lifetime, because they sit in every kernel's `#[repr(C)]` argument
//! struct, which the device code shares (a lifetime there would spread into every struct and
//! every kernel's signature). They are made only inside the closure of [`Launch::run`], from
//! the [`Views`] it is handed, and the closure's result is launched at once:
//! - [`Views::read`] takes `&'b CudaSlice`, [`Views::write`] `&'b mut CudaSlice`, where `'b`
//!   outlives the closure: each buffer stays borrowed for the whole launch, so one buffer cannot
//!   be two write views of one launch (E0499) nor a read and a write view (E0502).
//! - The closure is an `Fn`: it may capture the buffers it reads, and takes those it writes
//!   through `run`'s `buffers` argument (an `Fn` closure cannot borrow a capture mutably).
//!   It cannot assign a view to a captured variable (E0594), and the `&mut Views` cannot leave it
//!   (E0521).
//! - Interior mutability is the hole that remains: a `Cell` captured by the closure can carry a
//!   view out of it, and nothing stops a view so kept from reaching a later launch. Views are
//!   lifetime-free by design (above), so no type can close it; do not do it.
//!
//! Two launches need what these rules refuse, each through an explicit call with a safety
//! contract: in-place streaming reads and writes one buffer in one launch ([`Views::in_place`]),
//! and the boundary kernel runs on a [`Side`] stream beside the interior kernel, each writing
//! its own cells of the same buffers ([`Side::launch`], an `unsafe fn`).
//!
//! # Streams
//! A buffer owned by another stream than the launch's is joined: the launch stream waits for the
//! owner's queued work (an event recorded on the owner), and after the launch the owner waits
//! for it. So a buffer is used on another stream ([`Gpu::launch_on`]) only through this join.
//! PDL uses `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`: the
//! kernel's blocks may start while the previous kernel's blocks drain, and the kernel waits in
//! `griddepcontrol.wait` (`thread::wait_for_previous_grid`) before it reads that kernel's
//! results. Graph capture keeps the attribute as a programmatic edge.
//!
//! A [`Side`] stream runs work beside a GPU's own stream: [`Side::fork`] orders it after
//! everything queued on the own stream so far, launches through [`Side::launch`] then run at the
//! same time as what the own stream queues next (its buffers are not joined launch by launch),
//! and [`Side::join`] orders the own stream's later work after them. At the device's highest
//! priority, the side stream's blocks are placed first whenever SM resources free up; at the
//! default priority, kernels of both streams are placed in the order they were launched.
//!
//! # Misuse the compiler refuses
//! Each refused launch beside its twin that compiles (`DevSlice::empty` stands in where a
//! refused line took the view).
//!
//! Two write views of one buffer (E0499), and of two buffers:
//! ```compile_fail,E0499
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::ScatterIndex, Body, Grid};
//! fn _f(gpu: &Gpu, shape: Shape, grid: Grid, body: &CudaSlice<Body>, table: &mut CudaSlice<u32>)
//!     -> Result<(), GpuError> {
//!     unsafe {
//!         gpu.launch().run(shape, table, |l, table| ScatterIndex {
//!             n: body.len() as u32,
//!             grid,
//!             body: l.read(body),
//!             cell_end: l.write(table),
//!             values: l.write(table),
//!         })
//!     }
//! }
//! ```
//! ```no_run
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::ScatterIndex, Body, Grid};
//! fn _f(
//!     gpu: &Gpu, shape: Shape, grid: Grid, body: &CudaSlice<Body>,
//!     table: &mut CudaSlice<u32>, values: &mut CudaSlice<u32>,
//! ) -> Result<(), GpuError> {
//!     unsafe {
//!         gpu.launch().run(shape, (table, values), |l, (table, values)| ScatterIndex {
//!             n: body.len() as u32,
//!             grid,
//!             body: l.read(body),
//!             cell_end: l.write(table),
//!             values: l.write(values),
//!         })
//!     }
//! }
//! ```
//!
//! One buffer read and written by one launch (E0502), and the explicit in-place call:
//! ```compile_fail,E0502
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::abi::CellBounds;
//! fn _f(gpu: &Gpu, shape: Shape, n: u32, table: &mut CudaSlice<u32>) -> Result<(), GpuError> {
//!     unsafe {
//!         gpu.launch().run(shape, table, |l, table| CellBounds {
//!             n,
//!             cell_count: n,
//!             keys: l.read(table),
//!             cell_end: l.write(table),
//!         })
//!     }
//! }
//! ```
//! ```no_run
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::abi::CellBounds;
//! fn _f(gpu: &Gpu, shape: Shape, n: u32, table: &mut CudaSlice<u32>) -> Result<(), GpuError> {
//!     unsafe {
//!         gpu.launch().run(shape, table, |l, table| {
//!             // SAFETY (of `in_place`): for illustration only.
//!             let (keys, cell_end) = l.in_place(table);
//!             CellBounds { n, cell_count: n, keys, cell_end }
//!         })
//!     }
//! }
//! ```
//!
//! A view assigned to a captured variable, to outlive its launch (E0594), and a variable of
//! the closure's own:
//! ```compile_fail,E0594
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::CountCells, Body, Grid};
//! fn _f(gpu: &Gpu, shape: Shape, grid: Grid, body: &CudaSlice<Body>, counts: &mut CudaSlice<u32>)
//!     -> Result<(), GpuError> {
//!     let mut kept = None;
//!     unsafe {
//!         gpu.launch().run(shape, counts, |l, counts| {
//!             let counts = l.write(counts);
//!             kept = Some(counts);
//!             CountCells { n: body.len() as u32, grid, body: l.read(body), counts }
//!         })
//!     }
//! }
//! ```
//! ```no_run
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::CountCells, Body, Grid};
//! fn _f(gpu: &Gpu, shape: Shape, grid: Grid, body: &CudaSlice<Body>, counts: &mut CudaSlice<u32>)
//!     -> Result<(), GpuError> {
//!     unsafe {
//!         gpu.launch().run(shape, counts, |l, counts| {
//!             let mut kept = None;
//!             let counts = l.write(counts);
//!             kept = Some(counts);
//!             CountCells { n: body.len() as u32, grid, body: l.read(body), counts: kept.unwrap() }
//!         })
//!     }
//! }
//! ```
//!
//! The views handle kept past the launch (E0521, even through interior mutability), and a
//! launch that keeps only what it read from it:
//! ```compile_fail,E0521
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::CountCells, Body, Grid};
//! fn _f(gpu: &Gpu, shape: Shape, grid: Grid, body: &CudaSlice<Body>, counts: &mut CudaSlice<u32>)
//!     -> Result<(), GpuError> {
//!     let kept = std::cell::RefCell::new(None);
//!     unsafe {
//!         gpu.launch().run(shape, counts, |l, counts| {
//!             let args = CountCells {
//!                 n: body.len() as u32, grid, body: l.read(body), counts: l.write(counts),
//!             };
//!             *kept.borrow_mut() = Some(l);
//!             args
//!         })
//!     }
//! }
//! ```
//! ```no_run
//! # use cudarc::driver::CudaSlice;
//! # use murmur::internals::gpu::{Gpu, GpuError, Shape};
//! # use murmur_common::flock::{abi::CountCells, Body, Grid};
//! fn _f(gpu: &Gpu, shape: Shape, grid: Grid, body: &CudaSlice<Body>, counts: &mut CudaSlice<u32>)
//!     -> Result<(), GpuError> {
//!     let kept = std::cell::RefCell::new(None);
//!     unsafe {
//!         gpu.launch().run(shape, counts, |l, counts| {
//!             let args = CountCells {
//!                 n: body.len() as u32, grid, body: l.read(body), counts: l.write(counts),
//!             };
//!             *kept.borrow_mut() = Some(l.stream().clone());
//!             args
//!         })
//!     }
//! }
//! ```

use super::{DriverContext, Gpu, GpuError};
use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};
use murmur_common::kernel::{DevSlice, DevSliceMut, Kernel};
use std::ffi::c_void;
use std::sync::Arc;

/// Dynamic shared memory a kernel gets without opting in (CUDA's 48 KiB default).
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

/// Most blocks of a grid along x, y and z (CUDA's limits on every device since compute
/// capability 3.0).
pub const MAX_GRID: (u32, u32, u32) = ((1 << 31) - 1, 65_535, 65_535);

/// Grid, block and dynamic shared memory of one launch, and whether it may overlap the kernel
/// before it (PDL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    pub after_previous: bool,
}

impl Shape {
    /// One thread per element of `n` (at least one block), `block` threads per block; refused
    /// when the blocks do not fit a grid ([`MAX_GRID`]) or `block` is 0.
    pub fn try_per_item(n: u64, block: u32) -> Result<Shape, GpuError> {
        if block == 0 {
            return Err(GpuError::Unsupported(format!(
                "a launch over {n} items in blocks of 0 threads"
            )));
        }
        let blocks = n.div_ceil(block as u64).max(1);
        if blocks > MAX_GRID.0 as u64 {
            return Err(GpuError::GridTooLarge {
                what: format!("{n} items in blocks of {block} threads"),
                axis: 'x',
                blocks,
                max: MAX_GRID.0,
            });
        }
        Ok(Shape::blocks(blocks as u32, block))
    }

    /// [`Shape::try_per_item`] for launches that do not take its error: a grid that does not
    /// fit saturates, and [`Launch::run`] then refuses it, naming the kernel.
    pub fn per_item(n: u64, block: u32) -> Shape {
        let blocks = n.div_ceil(block as u64).max(1);
        Shape::blocks(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// Fails naming `kernel` when the grid exceeds [`MAX_GRID`] along an axis.
    pub fn check(&self, kernel: &str) -> Result<(), GpuError> {
        let (g, m) = (self.grid, MAX_GRID);
        for (axis, blocks, max) in [('x', g.0, m.0), ('y', g.1, m.1), ('z', g.2, m.2)] {
            if blocks > max {
                return Err(GpuError::GridTooLarge {
                    what: kernel.to_string(),
                    axis,
                    blocks: blocks as u64,
                    max,
                });
            }
        }
        Ok(())
    }

    /// `blocks` blocks of `block` threads.
    pub fn blocks(blocks: u32, block: u32) -> Shape {
        Shape {
            grid: (blocks.max(1), 1, 1),
            block: (block, 1, 1),
            shared_bytes: 0,
            after_previous: false,
        }
    }

    /// With `bytes` of dynamic shared memory.
    pub fn shared_bytes(mut self, bytes: u32) -> Shape {
        self.shared_bytes = bytes;
        self
    }

    /// With one `T` of dynamic shared memory (a kernel's `#[repr(C)]` shared layout).
    pub fn shared_of<T>(self) -> Shape {
        self.shared_bytes(std::mem::size_of::<T>() as u32)
    }

    /// Lets the kernel start before the previous one in the stream has finished when `allowed`
    /// (it must wait for it on the device before reading its results).
    pub fn after_previous(mut self, allowed: bool) -> Shape {
        self.after_previous = allowed;
        self
    }
}

/// One launch being prepared: the stream it goes to and the other streams whose buffers it
/// uses. Its views are made in the closure of [`Launch::run`].
pub struct Launch<'a> {
    gpu: &'a Gpu,
    stream: &'a Arc<CudaStream>,
    /// A stream whose buffers count as joined (the own stream of a [`Side`] launch, which the
    /// fork and the join order instead).
    forked: Option<&'a Arc<CudaStream>>,
    /// Owners of buffers this launch uses that are not its stream (joined before and after).
    foreign: Vec<Arc<CudaStream>>,
    /// The first failure of a join, reported by [`Launch::run`].
    error: Option<GpuError>,
}

impl<'a> Launch<'a> {
    pub(super) fn new(gpu: &'a Gpu, stream: &'a Arc<CudaStream>) -> Launch<'a> {
        Launch {
            gpu,
            stream,
            forked: None,
            foreign: Vec::new(),
            error: None,
        }
    }

    /// A launch on `stream` whose buffers owned by `forked` are not joined (a fork and a join
    /// order the two streams instead).
    pub(super) fn beside(
        gpu: &'a Gpu,
        stream: &'a Arc<CudaStream>,
        forked: &'a Arc<CudaStream>,
    ) -> Launch<'a> {
        let mut l = Launch::new(gpu, stream);
        l.forked = Some(forked);
        l
    }

    /// The stream the launch goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }

    /// Joins the owner of a buffer once when it is not the launch stream.
    fn own(&mut self, owner: &Arc<CudaStream>) {
        if Arc::ptr_eq(owner, self.stream)
            || self.forked.is_some_and(|f| Arc::ptr_eq(f, owner))
            || self.foreign.iter().any(|s| Arc::ptr_eq(s, owner))
        {
            return;
        }
        if let Err(e) = self.stream.join(owner) {
            self.error.get_or_insert(GpuError::Driver {
                context: "joining a buffer's stream".into(),
                source: e,
            });
        }
        self.foreign.push(owner.clone());
    }

    // `read`, `write`, `read_cast`, `write_cast` and `write_as` make the views [`Views`] hands
    // out (their borrows are held by `Views`, for the launch).

    /// A read-only view of `buf` for the kernel.
    fn read<T>(&mut self, buf: &CudaSlice<T>) -> DevSlice<T> {
        self.own(buf.stream());
        let (ptr, _record) = buf.device_ptr(self.stream);
        // SAFETY: the allocation holds `len` elements and outlives the launch (freeing it is
        // ordered after the launch on its owning stream).
        unsafe { DevSlice::from_raw(ptr as *const T, buf.len() as u64) }
    }

    /// A writable view of `buf` for the kernel.
    fn write<T>(&mut self, buf: &mut CudaSlice<T>) -> DevSliceMut<T> {
        self.own(buf.stream());
        let len = buf.len() as u64;
        let (ptr, _record) = buf.device_ptr_mut(self.stream);
        // SAFETY: as in `read`; `&mut` keeps other host code from handing it out meanwhile.
        unsafe { DevSliceMut::from_raw(ptr as *mut T, len) }
    }

    /// A read-only view of `buf` as elements of another type of the same size and alignment
    /// (e.g. `[f32; 3]` device buffers as glam's `Vec3`, which cudarc's traits cannot name).
    fn read_cast<T, U>(&mut self, buf: &CudaSlice<T>) -> DevSlice<U> {
        const { assert!(same_layout::<T, U>()) };
        let s = self.read(buf);
        // SAFETY: the same allocation and element count; `U` has `T`'s size and alignment.
        unsafe { DevSlice::from_raw(s.as_ptr() as *const U, s.len()) }
    }

    /// A writable view of `buf` as elements of another type of the same size and alignment.
    fn write_cast<T, U>(&mut self, buf: &mut CudaSlice<T>) -> DevSliceMut<U> {
        const { assert!(same_layout::<T, U>()) };
        let s = self.write(buf);
        // SAFETY: as in `read_cast`.
        unsafe { DevSliceMut::from_raw(s.as_mut_ptr() as *mut U, s.len()) }
    }

    /// A writable view of a byte buffer as `U` elements (e.g. RGBA8 pixels as `u32`): device
    /// allocations are 256-byte aligned.
    fn write_as<U>(&mut self, buf: &mut CudaSlice<u8>) -> DevSliceMut<U> {
        let bytes = self.write(buf);
        // SAFETY: the same allocation, its length in whole `U`s; aligned (see above).
        unsafe {
            DevSliceMut::from_raw(
                bytes.as_mut_ptr() as *mut U,
                bytes.len() / std::mem::size_of::<U>() as u64,
            )
        }
    }

    /// Launches kernel `K` with `args` in `shape` on the launch stream.
    ///
    /// # Safety
    /// `args` must meet the contract documented on `K` (which buffers it reads and writes, how
    /// many elements each must hold, what must be zeroed), and `shape` must cover the elements
    /// the kernel expects one thread each for.
    unsafe fn enqueue<K: Kernel + DeviceRepr>(
        self,
        mut args: K,
        shape: Shape,
    ) -> Result<(), GpuError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        shape.check(K::NAME)?;
        let func = self.gpu.function::<K>();
        if shape.shared_bytes > DEFAULT_SHARED_LIMIT {
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shape.shared_bytes as i32,
            )
            .ctx(&format!("allowing {} its shared memory", K::NAME))?;
        }
        self.stream.context().bind_to_thread().ctx(K::NAME)?;
        let mut params = [&mut args as *mut K as *mut c_void];
        // SAFETY: an all-zero attribute is a valid value of this plain C struct.
        let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: shape.grid.0,
            gridDimY: shape.grid.1,
            gridDimZ: shape.grid.2,
            blockDimX: shape.block.0,
            blockDimY: shape.block.1,
            blockDimZ: shape.block.2,
            sharedMemBytes: shape.shared_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: shape.after_previous as u32,
        };
        // SAFETY: the kernel takes exactly one parameter, a `K` (the typed kernel interface);
        // the driver copies it during the call.
        sys::cuLaunchKernelEx(
            &config,
            func.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
        .result()
        .ctx(K::NAME)?;
        for owner in &self.foreign {
            owner.join(self.stream).ctx("joining a buffer's stream")?;
        }
        Ok(())
    }
}

impl<'a> Launch<'a> {
    /// Launches kernel `K` in `shape` on the launch stream, with the arguments `args` makes
    /// from the launch's [`Views`] and `buffers` (module docs: the views live for this launch
    /// only).
    ///
    /// `args` is an `Fn`: it captures what it reads (buffers as `&CudaSlice`, plain values) and
    /// is handed `buffers`, by value, for what it needs by `&mut` (the buffers it writes: one
    /// `&mut CudaSlice`, or a tuple of them; `()` when it writes none).
    ///
    /// # Safety
    /// The arguments must meet the contract documented on `K` (which buffers it reads and
    /// writes, how many elements each must hold, what must be zeroed), and `shape` must cover
    /// the elements the kernel expects one thread each for.
    pub unsafe fn run<'b, B, K, F>(self, shape: Shape, buffers: B, args: F) -> Result<(), GpuError>
    where
        'a: 'b,
        K: Kernel + DeviceRepr,
        F: Fn(&mut Views<'b>, B) -> K,
    {
        let mut views = Views { launch: self };
        let args = args(&mut views, buffers);
        // SAFETY: the caller's contract.
        unsafe { views.launch.enqueue(args, shape) }
    }
}

/// The views of one launch, handed to the closure of [`Launch::run`]: each view borrows
/// its buffer for `'b`, which outlives the closure, so the buffer stays borrowed for the whole
/// launch. Buffers owned by another stream are joined (module docs).
pub struct Views<'b> {
    launch: Launch<'b>,
}

impl<'b> Views<'b> {
    /// The stream the launch goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.launch.stream
    }

    /// A read-only view of `buf`.
    pub fn read<T>(&mut self, buf: &'b CudaSlice<T>) -> DevSlice<T> {
        self.launch.read(buf)
    }

    /// A writable view of `buf`.
    pub fn write<T>(&mut self, buf: &'b mut CudaSlice<T>) -> DevSliceMut<T> {
        self.launch.write(buf)
    }

    /// A read-only view of `buf` as elements of another type of the same size and alignment
    /// (e.g. `[f32; 3]` device buffers as glam's `Vec3`, which cudarc's traits cannot name).
    pub fn read_cast<T, U>(&mut self, buf: &'b CudaSlice<T>) -> DevSlice<U> {
        self.launch.read_cast(buf)
    }

    /// A writable view of `buf` as elements of another type of the same size and alignment.
    pub fn write_cast<T, U>(&mut self, buf: &'b mut CudaSlice<T>) -> DevSliceMut<U> {
        self.launch.write_cast(buf)
    }

    /// A read-only view of a byte buffer as `U` elements (e.g. received bytes as bodies):
    /// device allocations are 256-byte aligned.
    pub fn read_as<U>(&mut self, buf: &'b CudaSlice<u8>) -> DevSlice<U> {
        let bytes = self.launch.read(buf);
        // SAFETY: the same allocation, its length in whole `U`s; aligned (see above).
        unsafe {
            DevSlice::from_raw(
                bytes.as_ptr() as *const U,
                bytes.len() / std::mem::size_of::<U>() as u64,
            )
        }
    }

    /// A writable view of a byte buffer as `U` elements (e.g. RGBA8 pixels as `u32`): device
    /// allocations are 256-byte aligned.
    pub fn write_as<U>(&mut self, buf: &'b mut CudaSlice<u8>) -> DevSliceMut<U> {
        self.launch.write_as(buf)
    }

    /// `buf` as both the read and the write view of this launch: in-place streaming, whose
    /// kernel reads the populations of slots it then overwrites.
    ///
    /// # Safety
    /// No element of `buf` is written by one thread of the launch and read or written by
    /// another: each thread reads only slots that it alone writes or that no thread writes (the
    /// launch orders no thread after another, so any other pairing is a race).
    pub unsafe fn in_place<T>(
        &mut self,
        buf: &'b mut CudaSlice<T>,
    ) -> (DevSlice<T>, DevSliceMut<T>) {
        let w = self.launch.write(buf);
        (w.as_const(), w)
    }
}

/// A second stream of one GPU for work beside the work of the GPU's own stream (see the module
/// docs): the stream and the two events of a fork and a join.
pub struct Side {
    stream: Arc<CudaStream>,
    forked: CudaEvent,
    joined: CudaEvent,
}

impl Side {
    /// A side stream of `gpu`, at the device's highest priority when `high`, else at the
    /// default priority (the own stream's).
    pub fn new(gpu: &Gpu, high: bool) -> Result<Side, GpuError> {
        let stream = if high {
            gpu.ctx.bind_to_thread().ctx("binding the context")?;
            let (_, highest) = cudarc::driver::result::stream::get_priority_range()
                .ctx("reading the stream priorities")?;
            gpu.ctx.new_stream_with_priority(highest)
        } else {
            gpu.ctx.new_stream()
        }
        .ctx("creating a side stream")?;
        let event = || {
            gpu.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .ctx("creating a CUDA event")
        };
        Ok(Side {
            stream,
            forked: event()?,
            joined: event()?,
        })
    }

    /// Orders the side stream after everything queued on `gpu`'s own stream so far.
    pub fn fork(&self, gpu: &Gpu) -> Result<(), GpuError> {
        self.forked
            .record(&gpu.stream)
            .ctx("recording a CUDA event")?;
        self.stream
            .wait(&self.forked)
            .ctx("waiting for a CUDA event")
    }

    /// A launch on the side stream: buffers of `gpu`'s own stream are not joined (the fork and
    /// the join order it), those of other streams are. This is how one buffer is written by two
    /// launches in flight: the boundary kernel here over the listed cells, the interior kernel
    /// on the own stream over the others.
    ///
    /// # Safety
    /// Between the [`Side::fork`] before it and the [`Side::join`] after it, the work queued on
    /// `gpu`'s own stream writes no element this launch reads or writes, and reads none it
    /// writes (disjoint cells of the same buffers are fine).
    pub unsafe fn launch<'a>(&'a self, gpu: &'a Gpu) -> Launch<'a> {
        Launch::beside(gpu, &self.stream, &gpu.stream)
    }

    /// Orders `gpu`'s own stream after everything launched on the side stream so far.
    pub fn join(&self, gpu: &Gpu) -> Result<(), GpuError> {
        self.joined
            .record(&self.stream)
            .ctx("recording a CUDA event")?;
        gpu.stream
            .wait(&self.joined)
            .ctx("waiting for a CUDA event")
    }
}

/// True when `T` and `U` have the same size and alignment.
const fn same_layout<T, U>() -> bool {
    std::mem::size_of::<T>() == std::mem::size_of::<U>()
        && std::mem::align_of::<T>() == std::mem::align_of::<U>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_item_takes_the_largest_grid_that_fits() {
        let most = MAX_GRID.0 as u64;
        let s = Shape::try_per_item(most * 256, 256).unwrap();
        assert_eq!((s.grid, s.block), ((MAX_GRID.0, 1, 1), (256, 1, 1)));
        assert!(s.check("k").is_ok());
        assert_eq!(Shape::try_per_item(0, 128).unwrap().grid, (1, 1, 1));
        assert_eq!(Shape::try_per_item(129, 128).unwrap().grid, (2, 1, 1));
    }

    #[test]
    fn per_item_refuses_a_grid_that_does_not_fit() {
        let most = MAX_GRID.0 as u64;
        match Shape::try_per_item(most * 256 + 1, 256) {
            Err(GpuError::GridTooLarge {
                axis: 'x',
                blocks,
                max,
                what,
            }) => {
                assert_eq!((blocks, max), (most + 1, MAX_GRID.0));
                assert!(
                    what.contains(&format!("{} items", most * 256 + 1)),
                    "{what}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(Shape::try_per_item(u64::MAX, 1024).is_err());
        assert!(matches!(
            Shape::try_per_item(10, 0),
            Err(GpuError::Unsupported(_))
        ));
    }

    #[test]
    fn a_launch_refuses_a_shape_past_the_grid_limits() {
        // The saturating form's grid for too many items, and a 3D grid too deep along z.
        let s = Shape::per_item(u64::MAX, 256);
        assert!(matches!(
            s.check("k"),
            Err(GpuError::GridTooLarge { axis: 'x', .. })
        ));
        let deep = Shape {
            grid: (1, 1, MAX_GRID.2 + 1),
            ..Shape::blocks(1, 32)
        };
        match deep.check("stream_collide") {
            Err(e @ GpuError::GridTooLarge { axis: 'z', .. }) => {
                assert!(e.to_string().starts_with("stream_collide: "), "{e}")
            }
            other => panic!("{other:?}"),
        }
        let fits = Shape {
            grid: MAX_GRID,
            ..Shape::blocks(1, 32)
        };
        assert!(fits.check("k").is_ok());
    }
}
