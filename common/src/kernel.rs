//! The typed kernel interface: what crosses from the host to a kernel.
//!
//! Every kernel takes exactly one `#[repr(C)]` argument struct by value (one `.param` in the PTX),
//! defined in `common` next to the math it runs, and named by [`Kernel::NAME`]. Device memory
//! appears in those structs only as [`DevSlice`] (read) and [`DevSliceMut`] (written): a pointer
//! and a 64-bit length, so what a kernel reads and writes is visible in its type, and lengths
//! hold lattices past `2^32` populations. The host builds the structs from its buffers
//! (`host/src/gpu/launch.rs`); the kernels (`kernels-gpu/`) take them apart.
//!
//! [`KERNEL_ENTRIES`] is the one table of kernels (their names are [`KERNELS`]): the host loads
//! exactly these from the PTX, and its build script fails naming any that the embedded PTX lacks
//! or whose parameter is not the size of its argument struct. The lattice kernels of every
//! model, format and streaming come from one list, [`lbm_variants!`](crate::lbm_variants),
//! which `kernels-gpu` expands into its entry points too.

use core::marker::PhantomData;

/// A kernel's argument struct: `NAME` is the PTX entry point that takes it.
pub trait Kernel: Copy {
    const NAME: &'static str;
}

/// A read-only view of `len` elements of device memory.
#[repr(C)]
#[derive(Debug)]
pub struct DevSlice<T> {
    ptr: *const T,
    len: u64,
}

/// A writable view of `len` elements of device memory.
#[repr(C)]
#[derive(Debug)]
pub struct DevSliceMut<T> {
    ptr: *mut T,
    len: u64,
}

/// What both views share: copyable whatever `T` is (derive would require `T: Copy`), built
/// from a raw pointer or empty, a length.
macro_rules! view {
    ($view:ident, $ptr:ty, $null:expr, $empty_doc:literal) => {
        impl<T> Clone for $view<T> {
            #[inline(always)]
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $view<T> {}

        impl<T> $view<T> {
            /// A view of `len` elements at `ptr`.
            ///
            /// # Safety
            /// `ptr` must point to `len` elements for as long as any kernel uses the view,
            /// readable (and, for a writable view, writable, with nothing else writing them
            /// meanwhile unless the kernel's contract says so).
            #[inline(always)]
            pub const unsafe fn from_raw(ptr: $ptr, len: u64) -> Self {
                $view { ptr, len }
            }

            #[doc = $empty_doc]
            #[inline(always)]
            pub const fn empty() -> Self {
                $view { ptr: $null, len: 0 }
            }

            #[inline(always)]
            pub const fn len(&self) -> u64 {
                self.len
            }

            #[inline(always)]
            pub const fn is_empty(&self) -> bool {
                self.len == 0
            }
        }
    };
}

view!(
    DevSlice,
    *const T,
    core::ptr::null(),
    "The empty view (null pointer, no elements): an argument a kernel does not use."
);
view!(
    DevSliceMut,
    *mut T,
    core::ptr::null_mut(),
    "The empty view: an output a kernel must skip (e.g. no counting)."
);

impl<T> DevSlice<T> {
    #[inline(always)]
    pub const fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// Element `i`.
    ///
    /// # Safety
    /// `i < len`.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        *self.ptr.add(i)
    }

    /// The first `len` elements (all of them when there are fewer).
    #[inline(always)]
    pub const fn prefix(&self, len: u64) -> Self {
        DevSlice {
            ptr: self.ptr,
            len: if len < self.len { len } else { self.len },
        }
    }

    /// The elements from `start` on.
    ///
    /// # Safety
    /// `start <= len`.
    #[inline(always)]
    pub unsafe fn offset(&self, start: u64) -> Self {
        DevSlice {
            ptr: self.ptr.add(start as usize),
            len: self.len - start,
        }
    }
}

impl<T> DevSliceMut<T> {
    #[inline(always)]
    pub const fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// Elements `start .. start + len` (clamped to the view).
    ///
    /// # Safety
    /// `start <= len`.
    #[inline(always)]
    pub unsafe fn range(&self, start: u64, len: u64) -> Self {
        let rest = self.len - start;
        DevSliceMut {
            ptr: self.ptr.add(start as usize),
            len: if len < rest { len } else { rest },
        }
    }

    /// The same memory, read-only.
    #[inline(always)]
    pub const fn as_const(&self) -> DevSlice<T> {
        DevSlice {
            ptr: self.ptr,
            len: self.len,
        }
    }

    /// Element `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread writes element `i` during the launch.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        *self.ptr.add(i)
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread accesses element `i` during the launch (or all accesses
    /// are atomic).
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        *self.ptr.add(i) = value;
    }

    /// Pointer to element `i` (for atomics and vector stores).
    ///
    /// # Safety
    /// `i <= len`.
    #[inline(always)]
    pub unsafe fn at(&self, i: usize) -> *mut T {
        self.ptr.add(i)
    }
}

impl DevSliceMut<u32> {
    /// `atomicAdd(&self[i], value)`, returning the value before.
    ///
    /// # Safety
    /// `i < len`; every concurrent access to element `i` is atomic.
    #[inline(always)]
    pub unsafe fn fetch_add(&self, i: usize, value: u32) -> u32 {
        core::sync::atomic::AtomicU32::from_ptr(self.ptr.add(i))
            .fetch_add(value, core::sync::atomic::Ordering::Relaxed)
    }
}

/// A zero-sized marker that ties an argument struct to one of several kernels that share its
/// fields (one per collision model, say): `Args<M>` names a different entry point per `M`.
#[repr(C)]
pub struct Variant<M>(PhantomData<M>);

impl<M> Variant<M> {
    pub const NEW: Self = Variant(PhantomData);
}
impl<M> Clone for Variant<M> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Variant<M> {}
impl<M> core::fmt::Debug for Variant<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Variant")
    }
}

/// One row of the kernel table: an entry point and the size of the one argument struct it
/// takes, which the host's build script compares with the entry's `.param` in the PTX.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    /// The PTX entry point ([`Kernel::NAME`]).
    pub name: &'static str,
    /// `size_of` the argument struct on the host, in bytes.
    pub arg_bytes: usize,
    /// The argument struct's type name (`core::any::type_name`), for messages.
    pub args: fn() -> &'static str,
}

/// Binds argument structs to entry-point names and collects them into [`KERNELS`] and
/// [`KERNEL_ENTRIES`]: the only place a kernel's name is written as a string. Called by
/// [`lbm_variants!`](crate::lbm_variants), which adds the lattice kernels of every model,
/// format and streaming; their names are built from the same pieces as the kernels' own.
macro_rules! kernel_table {
    (
        entries: [$($args:ty => $name:expr,)*],
        formats: [$(($f:ty, $fname:literal),)*],
        storages: [$(($s:ty, $sname:literal, $stream:literal),)*],
        variants: [$(($m:ty, $mname:literal, $vs:ty, $vsname:literal, $vstream:literal),)*],
    ) => {
        kernel_table! {
            @table
            $($args => $name,)*
            $(
                lbm::Init<$s> => concat!("lbm_init_", $sname, $stream),
                lbm::FieldsArgs<$s> => concat!("lbm_fields_", $sname, $stream),
                lbm::Health<$s> => concat!("lbm_health_", $sname, $stream),
                lbm::IbVelocity<$s> => concat!("ib_velocity_", $sname, $stream),
                crate::lbm::links::WallLinks<$s> => concat!("lbm_wall_links_", $sname, $stream),
                crate::lbm::statistics::Statistics<$s> =>
                    concat!("lbm_statistics_", $sname, $stream),
                render::PlaneFields<$s> => concat!("fluid_plane_fields_", $sname, $stream),
            )*
            $(
                lbm::HaloPack<$f> => concat!("lbm_halo_pack_", $fname),
                lbm::HaloUnpack<$f> => concat!("lbm_halo_unpack_", $fname),
            )*
            $(
                lbm::StreamCollide<$m, $vs> =>
                    concat!("lbm_stream_collide_", $mname, "_", $vsname, $vstream),
                lbm::StreamCollideBand<$m, $vs> =>
                    concat!("lbm_stream_collide_band_", $mname, "_", $vsname, $vstream),
                lbm::StreamCollideSponge<$m, $vs> =>
                    concat!("lbm_stream_collide_sponge_", $mname, "_", $vsname, $vstream),
                lbm::Boundary<$m, $vs> =>
                    concat!("lbm_boundary_", $mname, "_", $vsname, $vstream),
                lbm::StreamCollideLayer<$m, $vs> =>
                    concat!("lbm_stream_collide_layer_", $mname, "_", $vsname, $vstream),
            )*
        }
    };
    (@table $($args:ty => $name:expr,)*) => {
        $(impl Kernel for $args {
            const NAME: &'static str = $name;
        }
        // SAFETY: an argument struct is `#[repr(C)]` plain data and device views, the same
        // definition the kernel takes as its one parameter.
        #[cfg(all(feature = "cuda", not(target_arch = "nvptx64")))]
        unsafe impl cudarc::driver::DeviceRepr for $args {})*
        /// Every kernel entry point the host launches.
        pub const KERNELS: &[&str] = &[$(<$args as Kernel>::NAME),*];
        /// Every kernel entry point with its argument struct's size.
        pub const KERNEL_ENTRIES: &[KernelEntry] = &[$(KernelEntry {
            name: <$args as Kernel>::NAME,
            arg_bytes: core::mem::size_of::<$args>(),
            args: core::any::type_name::<$args>,
        }),*];
    };
}

use crate::coupling::abi as coupling;
use crate::flock::abi as flock;
use crate::lbm::abi as lbm;
use crate::render::abi as render;
use crate::sort::abi as sort;

crate::lbm_variants!(kernel_table {
    entries: [
        flock::InitFlock => "init_flock",
        flock::CountCells => "count_cells",
        flock::ScatterCells => "scatter_cells",
        flock::ScatterIndex => "scatter_index",
        flock::ComputeKeys => "compute_keys",
        flock::CellBounds => "cell_bounds",
        flock::Gather => "gather",
        flock::OrderCells => "order_cells_by_id",
        flock::UpdateNaive => "update_boids_naive",
        flock::UpdateScattered => "update_boids_scattered",
        flock::UpdateCoherent => "update_boids_coherent",
        flock::UpdateCoherentPredicated => "update_boids_coherent_predicated",
        flock::UpdateCoherentShared => "update_boids_coherent_shared",
        sort::RadixCounts => "radix_counts",
        sort::RadixOnesweep => "radix_onesweep",
        sort::ScanCells => "scan_cells",
        render::RenderClear => "render_clear",
        render::RenderSplat => "render_splat",
        render::RenderResolve => "render_resolve",
        lbm::IbClear => "ib_clear",
        lbm::IbMark => "ib_mark",
        lbm::IbForce => "ib_force",
        lbm::IbForceBins => "ib_force_bins",
        lbm::IbUpdate => "ib_update",
        crate::lbm::half::CheckHalf => "check_half",
        lbm::IbBin => "ib_bin",
        lbm::IbPlace => "ib_place",
        lbm::IbGather => "ib_gather",
        lbm::BandPack => "ib_band_pack",
        lbm::BandUnpack => "ib_band_unpack",
        crate::lbm::ib::push::PushPoints => "push_mark",
        crate::lbm::ib::push::PushSpread => "push_spread",
        crate::flock::slab::InitSlab => "slab_init",
        crate::flock::slab::RouteSlab => "slab_route",
        crate::flock::slab::ScatterSlab => "slab_scatter",
        crate::flock::slab::UpdateSlab => "update_boids_slab",
        crate::flock::slab::UnpackSlab => "slab_unpack",
        render::FluidDerived => "fluid_derived",
        render::SmokeForward => "smoke_forward",
        render::SmokeBackward => "smoke_backward",
        render::SmokeCorrect => "smoke_correct",
        render::SmokeLight => "smoke_light",
        render::FluidSplat => "fluid_splat",
        render::FluidOccupancy => "fluid_occupancy",
        render::FluidShade => "fluid_shade",
        coupling::CouplingKeys => "coupling_keys",
        coupling::CouplingStarts => "coupling_starts",
        coupling::CouplingGather => "coupling_gather",
        coupling::CouplingRules => "coupling_rules",
        coupling::CouplingMove => "coupling_move",
    ],
});

/// `cudarc::driver::DeviceRepr` for the argument structs and the plain types inside them, so
/// the host's launch layer can pass them by value (host only, `cuda` feature).
#[cfg(all(feature = "cuda", not(target_arch = "nvptx64")))]
mod device_repr {
    use super::*;
    use cudarc::driver::DeviceRepr;
    // SAFETY: `#[repr(C)]` views of a device address and a length: exactly what the kernel reads.
    unsafe impl<T> DeviceRepr for DevSlice<T> {}
    unsafe impl<T> DeviceRepr for DevSliceMut<T> {}
    unsafe impl<M> DeviceRepr for Variant<M> {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in KERNELS.iter().enumerate() {
            assert!(!KERNELS[i + 1..].contains(a), "{a} appears twice");
        }
    }

    #[test]
    fn views_are_pointer_and_64_bit_length() {
        use core::mem::{align_of, size_of};
        assert_eq!(size_of::<DevSlice<f32>>(), 16);
        assert_eq!(align_of::<DevSlice<f32>>(), 8);
        assert_eq!(size_of::<DevSlice<u8>>(), 16);
        assert_eq!(size_of::<DevSliceMut<u8>>(), 16);
        assert_eq!(align_of::<DevSliceMut<u8>>(), 8);
        assert_eq!(size_of::<DevSliceMut<u64>>(), 16);
        assert_eq!(size_of::<Variant<u32>>(), 0);
    }

    #[test]
    fn entries_pair_types_with_their_variant() {
        use crate::lbm::{AcmMrt, Bgk, Fp16C, Fp16S, Fp32, InPlace, RmMrt};
        assert_eq!(KERNELS.len(), KERNEL_ENTRIES.len());
        for (name, entry) in KERNELS.iter().zip(KERNEL_ENTRIES) {
            assert_eq!(*name, entry.name);
            assert!(entry.arg_bytes > 0, "{name}");
        }
        assert_eq!(
            <lbm::StreamCollide<Bgk, Fp16S> as Kernel>::NAME,
            "lbm_stream_collide_bgk_fp16s"
        );
        assert_eq!(
            <lbm::StreamCollide<RmMrt, Fp32> as Kernel>::NAME,
            "lbm_stream_collide_rm_mrt_fp32"
        );
        assert_eq!(
            <lbm::Boundary<AcmMrt, InPlace<Fp16C>> as Kernel>::NAME,
            "lbm_boundary_acm_mrt_fp16c_in_place"
        );
        assert_eq!(
            <lbm::HaloPack<Fp16C> as Kernel>::NAME,
            "lbm_halo_pack_fp16c"
        );
        assert_eq!(
            <render::PlaneFields<InPlace<Fp32>> as Kernel>::NAME,
            "fluid_plane_fields_fp32_in_place"
        );
        let sc = KERNEL_ENTRIES
            .iter()
            .find(|k| k.name == "lbm_stream_collide_acm_mrt_fp16s_in_place")
            .unwrap();
        assert_eq!(
            sc.arg_bytes,
            core::mem::size_of::<lbm::StreamCollide<AcmMrt, InPlace<Fp16S>>>()
        );
        assert!((sc.args)().contains("StreamCollide"));
    }
}
