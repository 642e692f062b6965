//! Lattice Boltzmann kernels: initialisation and the fused pull stream-collide step, one entry
//! point per collision model (so each is compiled with only its own registers). Arguments are
//! `murmur_common::lbm::abi`; all math, and every population access, is `murmur_common::lbm`.

use crate::thread::index_below;
use murmur_common::lbm::abi::{Boundary, Init, StreamCollide};
use murmur_common::lbm::{
    init_cell, stream_collide_cell, stream_collide_interior, AcmMrt, Bgk, RmMrt,
};

/// Stage `init`: every cell's populations = the equilibrium of its fields.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn lbm_init(a: Init) {
    let Some(cell) = index_below(a.lattice.cells() as u64) else {
        return;
    };
    init_cell(&a, cell);
}

macro_rules! stream_collide_kernels {
    ($interior:ident, $boundary:ident, $model:ty) => {
        /// Stage `stream_collide` (pull), interior cells: every cell, returning at once unless it
        /// is fluid with only fluid neighbours.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $interior(a: StreamCollide<$model>) {
            let Some(cell) = index_below(a.p.lattice.cells() as u64) else {
                return;
            };
            stream_collide_interior(&a, cell);
        }

        /// Stage `stream_collide`, the listed cells: non-fluid cells and the fluid cells next to
        /// them; boundary conditions are applied while pulling.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $boundary(a: Boundary<$model>) {
            let Some(i) = index_below(a.cells.len()) else {
                return;
            };
            stream_collide_cell(&a.step, a.cells.read(i) as usize);
        }
    };
}

stream_collide_kernels!(lbm_stream_collide_bgk, lbm_boundary_bgk, Bgk);
stream_collide_kernels!(lbm_stream_collide_rm_mrt, lbm_boundary_rm_mrt, RmMrt);
stream_collide_kernels!(lbm_stream_collide_acm_mrt, lbm_boundary_acm_mrt, AcmMrt);
