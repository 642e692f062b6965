//! Lattice Boltzmann kernels: initialisation and the fused pull stream-collide step, one entry
//! point per collision model (so each is compiled with only its own registers). All math is in
//! `murmur_common::lbm`.

use crate::thread;
use murmur_common::lbm::{
    initial_populations, store_populations, stream_collide_cell, stream_collide_interior,
    LbmParams, ACM_MRT, BGK, RM_MRT,
};

/// Stage `init`: `f[q n + cell]` = equilibrium of `rho[cell]`, `(ux, uy, uz)[cell]`, where
/// `fields` holds `rho, ux, uy, uz` as four arrays of `n` floats.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn lbm_init(n: u32, fields: *const f32, f: *mut f32) {
    let cell = thread::index();
    let n = n as usize;
    if cell >= n {
        return;
    }
    let rho = *fields.add(cell);
    let u = [
        *fields.add(n + cell),
        *fields.add(2 * n + cell),
        *fields.add(3 * n + cell),
    ];
    store_populations(f, n, cell, &initial_populations(rho, u));
}

macro_rules! stream_collide_kernels {
    ($interior:ident, $boundary:ident, $model:expr) => {
        /// Stage `stream_collide` (pull), interior cells: every cell, returning at once unless it
        /// is fluid with only fluid neighbours; gather from `src`, collide, write `dst` (and the
        /// fields when `p.store_fields != 0`).
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $interior(
            p: LbmParams,
            flags: *const u8,
            src: *const f32,
            dst: *mut f32,
            fields: *mut f32,
        ) {
            let cell = thread::index();
            if cell >= p.lattice.cells() {
                return;
            }
            stream_collide_interior::<{ $model }>(&p, cell, flags, src, dst, fields);
        }

        /// Stage `stream_collide`, the other cells: `cells[0..count]` lists the non-fluid cells
        /// and the fluid cells next to them; boundary conditions are applied while pulling.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $boundary(
            p: LbmParams,
            count: u32,
            cells: *const u32,
            flags: *const u8,
            src: *const f32,
            dst: *mut f32,
            fields: *mut f32,
        ) {
            let i = thread::index();
            if i >= count as usize {
                return;
            }
            let cell = *cells.add(i) as usize;
            stream_collide_cell::<{ $model }>(&p, cell, flags, src, dst, fields);
        }
    };
}

stream_collide_kernels!(lbm_stream_collide_bgk, lbm_boundary_bgk, BGK);
stream_collide_kernels!(lbm_stream_collide_rm_mrt, lbm_boundary_rm_mrt, RM_MRT);
stream_collide_kernels!(lbm_stream_collide_acm_mrt, lbm_boundary_acm_mrt, ACM_MRT);
