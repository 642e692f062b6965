//! Boundary conditions as cell types, applied while pulling (Krüger et al. 2017, Ch. 5):
//!
//! - [`CellKind::Wall`]: halfway bounce-back, `f_q(x) = f*_opp(q)(x)` (Eq. 5.26), the wall halfway
//!   between the fluid cell and the wall cell;
//! - [`CellKind::MovingWall`] and [`CellKind::Inlet`]: bounce-back with the wall-velocity term
//!   `f_q(x) = f*_opp(q)(x) + 2 w_q rho_w (c_q . u_w) / c_s^2` (Eq. 5.27, `rho_w = 1`): a lid, or
//!   a velocity inlet imposing `u_w` halfway (Sec. 5.3.3); an inlet's `u_w` is its face's
//!   velocity times its [`profile`] at the link's wall point `x - c_q / 2` and the ramp factor
//!   [`inlet_scale`];
//! - [`CellKind::Outlet`]: anti-bounce-back pressure boundary (Eq. 5.53),
//!   `f_q(x) = -f*_opp(q)(x) + 2 w_q rho_w [1 + (c_q . u)^2 / (2 c_s^4) - u^2 / (2 c_s^2)]`, with
//!   `rho_w` the outlet density and `u` the fluid cell's own velocity (zeroth-order extrapolation);
//! - [`CellKind::FreeSlip`]: specular reflection at the halfway plane (Krüger Sec. 5.3.4): the
//!   population arriving at `x` along `c_q` from a free-slip cell whose face has normal axis `a`
//!   is the one that left `x - c_q + c_{q,a} e_a` (the cell beside `x` along the wall) along the
//!   mirror image of `c_q` ([`mirrored`]), when that cell is fluid; otherwise (corners, cells of
//!   no face) plain bounce-back. The normal momentum bounces, the tangential momentum passes:
//!   no shear stress on the wall;
//! - [`CellKind::CutSolid`]: a node of a fixed solid whose links to fluid neighbours are cut at
//!   their exact wall distance: interpolated bounce-back ([`super::links`]), the populations
//!   written into the solid node's slots before the step and pulled like a fluid neighbour's;
//! - periodic: every axis wraps in the index math, so any axis without boundary cells is periodic.
//!
//! `f*` are post-collision populations of the previous step, which the pull scheme reads from the
//! source buffer at the fluid cell itself.
//!
//! The cell byte: bits 0-2 the [`CellKind`] ([`KIND_MASK`]), bits 3-5 the domain face the cell
//! belongs to (0..5 = `-x, +x, -y, +y, -z, +z`, the index into `LbmParams::faces`; [`NO_FACE`]
//! for cells of no face, e.g. a voxel wall inside the domain), bit 6 reserved, bit 7
//! [`NEAR_BOUNDARY`]. Fluid cells have face bits 0, so an interior fluid cell's byte is exactly
//! [`FLUID`].

use super::d3q27::{velocity, velocity_f32, weight};
use super::params::{Face, LbmParams};

/// What a cell is. Stored in the low bits of one byte per cell (`u8`), the same on CPU and GPU.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CellKind {
    /// Fluid: streams and collides.
    #[default]
    Fluid = 0,
    /// Resting solid wall (bounce-back).
    Wall = 1,
    /// Wall moving tangentially with its face's velocity (e.g. a cavity lid).
    MovingWall = 2,
    /// Velocity inlet: its face's velocity, profile and the inlet scale.
    Inlet = 3,
    /// Pressure outlet at its face's density.
    Outlet = 4,
    /// Free-slip wall (specular reflection) with its face's normal.
    FreeSlip = 5,
    /// A node of a fixed solid with interpolated bounce-back ([`super::links`]): it never runs;
    /// each fluid neighbour pulls from it, as from a fluid cell, the population the wall-links
    /// stage wrote into its slot before the step.
    CutSolid = 6,
}

impl CellKind {
    /// The kind of a stored byte (its low bits; unknown values read as walls).
    #[inline(always)]
    pub const fn from_u8(b: u8) -> CellKind {
        match b & KIND_MASK {
            0 => CellKind::Fluid,
            2 => CellKind::MovingWall,
            3 => CellKind::Inlet,
            4 => CellKind::Outlet,
            5 => CellKind::FreeSlip,
            6 => CellKind::CutSolid,
            _ => CellKind::Wall,
        }
    }
}

/// Bits of a cell byte that hold its [`CellKind`].
pub const KIND_MASK: u8 = 0x07;
/// First bit of the face index in a cell byte.
pub const FACE_SHIFT: u32 = 3;
/// Bits of a cell byte that hold its face index.
pub const FACE_MASK: u8 = 0x38;
/// Face index of a cell that belongs to no domain face.
pub const NO_FACE: u8 = 7;
/// Bit set on fluid cells of the outlet layer: the one damping zone murmur allows, a layer
/// of fluid cells before a pressure outlet whose shear rate moves toward [`SPONGE_RATE`] with
/// the square of the depth into the layer ([`sponge_rates`]). Such cells take the boundary
/// path of the stream-collide step.
pub const SPONGE: u8 = 0x40;

/// Shear rate at the outlet end of the layer (`tau = 1`, `nu = 1/6`).
pub const SPONGE_RATE: f32 = 1.0;

/// The relaxation rates of an outlet-layer cell at coordinates `pos`.
#[inline(always)]
pub fn sponge_rates(p: &LbmParams, pos: [u32; 3]) -> super::Rates {
    let mut r = p.rates;
    // A choice, not an index: `pos` indexed by a runtime axis would live in local memory on
    // the GPU.
    let at = match p.sponge_axis {
        0 => Some(pos[0]),
        1 => Some(pos[1]),
        2 => Some(pos[2]),
        _ => None,
    };
    if let Some(at) = at {
        let t = ((at as f32 - p.sponge_start) * p.sponge_inv).clamp(0.0, 1.0);
        r.shear += t * t * (SPONGE_RATE - r.shear);
    }
    r
}

/// Bit set (by [`mark_near_boundary`]) on fluid cells with at least one non-fluid neighbour:
/// only those take the boundary path of the stream-collide step.
pub const NEAR_BOUNDARY: u8 = 0x80;

/// Byte of a fluid cell.
pub const FLUID: u8 = CellKind::Fluid as u8;

/// Byte of a ghost cell of a slab (several ranks, [`super::halo`]): a fluid cell another rank
/// owns, whose populations crossing the slab face arrive by exchange before each step. It never
/// runs and never counts (health, forces), but its neighbours pull from it as from any fluid
/// cell. A fluid kind with face bits [`NO_FACE`] (fluid cells otherwise have face bits 0) and
/// [`NEAR_BOUNDARY`], so the interior kernel (which runs bytes exactly [`FLUID`]) skips it.
pub const GHOST: u8 = FLUID | (NO_FACE << FACE_SHIFT) | NEAR_BOUNDARY;

/// Face bits that pin an owned fluid cell to the boundary path: the cells of a slab's face
/// layers, updated first so that their populations can travel while the interior updates.
/// [`mark_near_boundary`] keeps [`NEAR_BOUNDARY`] on fluid cells with face bits set.
pub const SLAB_FACE: u8 = 6 << FACE_SHIFT;
/// Byte of an outlet cell.
pub const OUTLET: u8 = CellKind::Outlet as u8;
/// Byte of an inlet cell.
pub const INLET: u8 = CellKind::Inlet as u8;
/// Byte of a node of a solid with interpolated bounce-back.
pub const CUT_SOLID: u8 = CellKind::CutSolid as u8 | (NO_FACE << FACE_SHIFT);

/// Names of the faces in index order (the order of `LbmParams::faces`).
pub const FACE_NAMES: [&str; 6] = ["-x", "+x", "-y", "+y", "-z", "+z"];

/// The face index (0..5, or [`NO_FACE`]) of a cell byte.
#[inline(always)]
pub const fn face_of(byte: u8) -> u8 {
    (byte & FACE_MASK) >> FACE_SHIFT
}

/// The byte of a cell of `kind` on face `face` (0..5, or [`NO_FACE`]). Fluid cells are
/// [`FLUID`] whatever the face.
#[inline(always)]
pub const fn cell_byte(kind: CellKind, face: u8) -> u8 {
    match kind {
        CellKind::Fluid => FLUID,
        _ => kind as u8 | ((face << FACE_SHIFT) & FACE_MASK),
    }
}

/// The normal axis (0, 1, 2 for x, y, z) of face `face` (0..5).
#[inline(always)]
pub const fn face_axis(face: u8) -> usize {
    (face / 2) as usize
}

/// The direction of `c_q` with its component along `axis` negated: the mirror image of `c_q`
/// at a wall of normal `axis` (`q = 9 (cz+1) + 3 (cy+1) + (cx+1)`, so negating `c_a` moves
/// `q` by `-2 c_a` times the axis stride 1, 3, 9).
#[inline(always)]
pub const fn mirrored(q: usize, axis: usize) -> usize {
    let c = velocity(q);
    let stride = match axis {
        0 => 1,
        1 => 3,
        _ => 9,
    };
    let c_a = match axis {
        0 => c[0],
        1 => c[1],
        _ => c[2],
    };
    (q as i32 - 2 * stride * c_a) as usize
}

/// The inlet ramp at `step`: rises smoothly from 0 at step 0 to 1 at `ramp_steps` (the smoothstep
/// `s^2 (3 - 2 s)`, `s = step / ramp_steps`: zero slope at both ends, so the inflow starts and
/// stops accelerating without a jump), 1 from then on and without a ramp (`ramp_steps <= 0`).
/// The host sets [`LbmParams::inlet_scale`] to it before each step.
pub fn inlet_scale(step: u64, ramp_steps: f64) -> f32 {
    if ramp_steps.is_nan() || ramp_steps <= 0.0 || step as f64 >= ramp_steps {
        return 1.0;
    }
    let s = step as f64 / ramp_steps;
    (s * s * (3.0 - 2.0 * s)) as f32
}

/// The inlet profile of `face` at lattice position `pos`: the product of the parabolas of its
/// [`Face::parabolic`] axes, each `max(0, 1 - ((pos_a - center_a) inv_half_width_a)^2)`; 1 for
/// a uniform inlet. Two parabolic axes with the wall planes at `0` and `H` give the DFG 3D
/// profile `16 y z (H - y) (H - z) / H^4`.
#[inline(always)]
pub fn profile(face: &Face, pos: [f32; 3]) -> f32 {
    let mut s = 1.0f32;
    let mut a = 0;
    while a < 3 {
        if face.parabolic & (1 << a) != 0 {
            let t = (pos[a] - face.center[a]) * face.inv_half_width[a];
            let p = 1.0 - t * t;
            s *= if p > 0.0 { p } else { 0.0 };
        }
        a += 1;
    }
    s
}

/// The velocity an inlet face imposes at lattice position `pos`: its velocity times its
/// [`profile`] and the step's [`LbmParams::inlet_scale`].
#[inline(always)]
pub fn inlet_velocity(p: &LbmParams, face: &Face, pos: [f32; 3]) -> [f32; 3] {
    let s = p.inlet_scale * profile(face, pos);
    [
        face.velocity[0] * s,
        face.velocity[1] * s,
        face.velocity[2] * s,
    ]
}

/// Bounce-back with a wall velocity: the population entering the fluid along `c_q` from a wall
/// moving at `uw`, given the post-collision population `f_out` that left along `-c_q`.
#[inline(always)]
pub fn moving_bounce_back(q: usize, f_out: f32, uw: [f32; 3]) -> f32 {
    let c = velocity_f32(q);
    f_out + 6.0 * weight(q) * (c[0] * uw[0] + c[1] * uw[1] + c[2] * uw[2])
}

/// Anti-bounce-back at a pressure boundary of density `rho_w`, fluid velocity `u`.
#[inline(always)]
pub fn anti_bounce_back(q: usize, f_out: f32, rho_w: f32, u: [f32; 3]) -> f32 {
    let c = velocity_f32(q);
    let cu = c[0] * u[0] + c[1] * u[1] + c[2] * u[2];
    let uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    -f_out + 2.0 * weight(q) * rho_w * (1.0 + 4.5 * cu * cu - 1.5 * uu)
}

/// Sets [`NEAR_BOUNDARY`] on every fluid cell of `flags` that has a non-fluid cell among its 26
/// neighbours (periodic wrap) or face bits set (slab faces and ghosts, pinned to the boundary
/// path), and clears it on the other fluid cells; other bits stay. Backends call it once on
/// upload.
pub fn mark_near_boundary(lattice: &super::Lattice, flags: &mut [u8]) {
    let n = lattice.cells();
    let mut cell = 0;
    while cell < n {
        if flags[cell] & KIND_MASK == FLUID {
            let o = lattice.pull_offsets(cell);
            let mut near = flags[cell] & FACE_MASK != 0;
            let mut q = 0;
            while q < super::Q {
                near |= flags[super::access::neighbour(&o, q)] & KIND_MASK != FLUID;
                q += 1;
            }
            flags[cell] = (flags[cell] & !NEAR_BOUNDARY) | if near { NEAR_BOUNDARY } else { 0 };
        }
        cell += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{DevSlice, DevSliceMut};
    use crate::lbm::abi::StreamCollide;
    use crate::lbm::d3q27::{opposite, velocity, Q};
    use crate::lbm::equilibrium::equilibrium;
    use crate::lbm::ib::band::BandRef;
    use crate::lbm::{
        cell_fields, initial_populations, stream_collide_cell, Bgk, Fp32, InPlace, Lattice, Layout,
        LbmParams, Populations, Rates,
    };
    use std::vec;
    use std::vec::Vec;

    /// A lattice stepped on the CPU with the cell function the kernels run (in place: one
    /// buffer, cells updated one after another).
    struct Run {
        p: LbmParams,
        pops: Populations<InPlace<Fp32>>,
        flags: Vec<u8>,
        f: Vec<f32>,
        step: u64,
    }

    impl Run {
        /// Starts from `fields` (`rho, ux, uy, uz` arrays) at equilibrium.
        fn new(p: LbmParams, mut flags: Vec<u8>, fields: Vec<f32>) -> Run {
            mark_near_boundary(&p.lattice, &mut flags);
            let pops = Populations::<InPlace<Fp32>>::new(p.lattice, Layout::SOA, 0);
            let mut f = vec![0.0f32; pops.len()];
            let n = p.lattice.cells();
            for cell in 0..n {
                let u = [1, 2, 3].map(|a| fields[a * n + cell]);
                // SAFETY: the view covers the vector, sized for the lattice.
                unsafe {
                    pops.store(
                        DevSliceMut::from_raw(f.as_mut_ptr(), f.len() as u64),
                        cell,
                        &initial_populations(fields[cell], u),
                    )
                };
            }
            Run {
                p,
                pops,
                flags,
                f,
                step: 0,
            }
        }

        fn steps(&mut self, n: usize) {
            for _ in 0..n {
                self.step += 1;
                // SAFETY: the views cover the vectors.
                let a = unsafe {
                    StreamCollide::<Bgk, InPlace<Fp32>>::new(
                        self.p,
                        self.pops.at_step(self.step),
                        DevSlice::from_raw(self.flags.as_ptr(), self.flags.len() as u64),
                        DevSliceMut::from_raw(self.f.as_mut_ptr(), self.f.len() as u64),
                    )
                };
                for cell in 0..self.p.lattice.cells() {
                    // SAFETY: as above; one cell at a time (no outlets: no outlet velocities).
                    unsafe { stream_collide_cell(&a, cell, cell) };
                }
            }
        }

        /// The populations as the next step finds them.
        fn now(&self) -> Populations<InPlace<Fp32>> {
            self.pops.at_step(self.step + 1)
        }

        fn view(&self) -> DevSlice<f32> {
            // SAFETY: the view covers the vector, which outlives it.
            unsafe { DevSlice::from_raw(self.f.as_ptr(), self.f.len() as u64) }
        }

        fn flags_view(&self) -> DevSlice<u8> {
            // SAFETY: as `view`.
            unsafe { DevSlice::from_raw(self.flags.as_ptr(), self.flags.len() as u64) }
        }

        /// Total mass of the fluid cells' populations.
        fn mass(&self) -> f64 {
            let n = self.p.lattice.cells();
            (0..n)
                .filter(|&c| self.flags[c] & KIND_MASK == FLUID)
                // SAFETY: the buffer holds the lattice.
                .map(|c| {
                    unsafe { self.now().own_all(self.view(), c) }
                        .iter()
                        .map(|&v| v as f64)
                        .sum::<f64>()
                })
                .sum()
        }

        fn u(&self, cell: usize) -> [f32; 3] {
            // SAFETY: the buffers hold the lattice.
            unsafe {
                cell_fields(
                    &self.p,
                    &self.now(),
                    self.flags_view(),
                    self.view(),
                    &BandRef::NONE,
                    cell,
                )
            }
            .1
        }
    }

    /// A channel periodic along x and z with walls of `kind` on the y faces (layers y = 0 and
    /// y = ny - 1), every cell at velocity `u(y)`.
    fn channel(kind: CellKind, u: impl Fn(u32) -> [f32; 3]) -> Run {
        let l = Lattice::new(5, 10, 3);
        let flags = (0..l.cells())
            .map(|c| match l.coords(c).1 {
                0 => cell_byte(kind, 2),
                9 => cell_byte(kind, 3),
                _ => FLUID,
            })
            .collect();
        let n = l.cells();
        let mut fields = vec![0.0f32; 4 * n];
        for c in 0..n {
            let v = u(l.coords(c).1);
            fields[c] = 1.0;
            for a in 0..3 {
                fields[(a + 1) * n + c] = v[a];
            }
        }
        Run::new(
            LbmParams::new(l, Rates::from_viscosity(0.05)),
            flags,
            fields,
        )
    }

    #[test]
    fn uniform_flow_along_free_slip_walls_stays_uniform() {
        let u0 = [0.05f32, 0.0, -0.02];
        let mut run = channel(CellKind::FreeSlip, |_| u0);
        let m0 = run.mass();
        run.steps(200);
        // FP32 rounding alone moves the mass of a fully periodic box by about 1e-6 over as many
        // steps; a leak through the walls would show at once (30 wall links per step and row).
        assert!(
            (run.mass() - m0).abs() < 1e-5 * m0,
            "mass {m0} -> {}",
            run.mass()
        );
        for cell in 0..run.p.lattice.cells() {
            if run.flags[cell] & KIND_MASK == FLUID {
                let u = run.u(cell);
                for a in 0..3 {
                    assert!((u[a] - u0[a]).abs() < 1e-6, "cell {cell}: {u:?}");
                }
            }
        }
        // The same flow between no-slip walls is sheared: the wall rows slow down.
        let mut run = channel(CellKind::Wall, |_| u0);
        run.steps(200);
        let l = run.p.lattice;
        assert!(run.u(l.index(2, 1, 1))[0] < 0.8 * u0[0]);
    }

    #[test]
    fn uniform_flow_in_a_free_slip_duct_stays_uniform_at_its_edges() {
        // Free-slip walls on the y and z faces meet along edges parallel to x: a population
        // crossing both walls reflects off both (a single reflection there would act as a
        // no-slip wall and shear the edge rows).
        let l = Lattice::new(4, 8, 7);
        let flags: std::vec::Vec<u8> = (0..l.cells())
            .map(|c| {
                let (_, y, z) = l.coords(c);
                match (y, z) {
                    (0, _) => cell_byte(CellKind::FreeSlip, 2),
                    (7, _) => cell_byte(CellKind::FreeSlip, 3),
                    (_, 0) => cell_byte(CellKind::FreeSlip, 4),
                    (_, 6) => cell_byte(CellKind::FreeSlip, 5),
                    _ => FLUID,
                }
            })
            .collect();
        let n = l.cells();
        let u0 = [0.05f32, 0.0, 0.0];
        let mut fields = vec![0.0f32; 4 * n];
        for c in 0..n {
            fields[c] = 1.0;
            fields[n + c] = u0[0];
        }
        let mut run = Run::new(
            LbmParams::new(l, Rates::from_viscosity(0.05)),
            flags,
            fields,
        );
        run.steps(200);
        for cell in 0..n {
            if run.flags[cell] & KIND_MASK == FLUID {
                let u = run.u(cell);
                for a in 0..3 {
                    assert!(
                        (u[a] - u0[a]).abs() < 1e-6,
                        "cell {:?}: {u:?}",
                        l.coords(cell)
                    );
                }
            }
        }
    }

    #[test]
    fn free_slip_conserves_mass_and_tangential_momentum_of_any_flow() {
        // A sheared flow with wall-normal motion: specular reflection maps every population that
        // leaves toward a wall onto exactly one that enters, flipping only its normal component.
        let mut run = channel(CellKind::FreeSlip, |y| {
            let s = (y as f32 * 0.7).sin();
            [0.03 * s, 0.02 * (y as f32 * 1.3).cos(), 0.01 * s]
        });
        let tangential = |run: &Run| {
            let n = run.p.lattice.cells();
            let mut j = [0.0f64; 2];
            for c in (0..n).filter(|&c| run.flags[c] & KIND_MASK == FLUID) {
                // SAFETY: the buffer holds the lattice.
                let f = unsafe { run.now().own_all(run.view(), c) };
                for (q, &fq) in f.iter().enumerate() {
                    let v = velocity(q);
                    j[0] += v[0] as f64 * fq as f64;
                    j[1] += v[2] as f64 * fq as f64;
                }
            }
            j
        };
        let (m0, j0) = (run.mass(), tangential(&run));
        run.steps(100);
        let (m1, j1) = (run.mass(), tangential(&run));
        assert!((m1 - m0).abs() < 1e-5 * m0, "mass {m0} -> {m1}");
        for a in 0..2 {
            assert!(
                (j1[a] - j0[a]).abs() < 1e-5,
                "momentum {a}: {j0:?} -> {j1:?}"
            );
        }
    }

    #[test]
    fn mirrored_negates_one_component() {
        for q in 0..Q {
            for axis in 0..3 {
                let mut c = velocity(q);
                c[axis] = -c[axis];
                assert_eq!(velocity(mirrored(q, axis)), c, "q {q} axis {axis}");
            }
        }
    }

    #[test]
    fn cell_bytes_carry_kind_and_face() {
        for face in 0..6u8 {
            let b = cell_byte(CellKind::FreeSlip, face);
            assert_eq!(
                (CellKind::from_u8(b), face_of(b)),
                (CellKind::FreeSlip, face)
            );
            assert_eq!(b & NEAR_BOUNDARY, 0);
        }
        assert_eq!(face_of(cell_byte(CellKind::Wall, NO_FACE)), NO_FACE);
        assert_eq!(cell_byte(CellKind::Fluid, 3), FLUID);
        assert_eq!(face_axis(5), 2);
    }

    #[test]
    fn parabolic_profiles_vanish_at_the_walls_and_peak_between() {
        // Walls at 0.5 and 8.5 along y: the 2D channel profile 4 s (1 - s).
        let face = Face::moving([0.1, 0.0, 0.0]).with_parabola(1, 0.5, 8.5);
        for (y, want) in [(0.5, 0.0), (4.5, 1.0), (2.5, 0.75), (-3.0, 0.0), (8.5, 0.0)] {
            let got = profile(&face, [7.0, y, -2.0]);
            assert!((got - want).abs() < 1e-6, "y {y}: {got}");
        }
        // Both tangential axes of an x face: the DFG 3D profile 16 y z (H - y) (H - z) / H^4.
        let h = 16.0f32;
        let face = Face::moving([0.1, 0.0, 0.0])
            .with_parabola(1, 0.5, 0.5 + h)
            .with_parabola(2, 0.5, 0.5 + h);
        for (y, z) in [(3.0f32, 7.0f32), (8.0, 8.0), (1.0, 15.5), (12.25, 4.75)] {
            let want = 16.0 * y * z * (h - y) * (h - z) / h.powi(4);
            let got = profile(&face, [0.0, y + 0.5, z + 0.5]);
            assert!((got - want).abs() < 1e-6, "({y}, {z}): {got} vs {want}");
        }
        let mut p = LbmParams::new(Lattice::new(1, 1, 1), Rates::from_viscosity(0.1));
        p.inlet_scale = 0.5;
        let u = inlet_velocity(&p, &face, [0.0, 8.5, 8.5]);
        assert!((u[0] - 0.05).abs() < 1e-7 && u[1] == 0.0 && u[2] == 0.0);
        assert_eq!(profile(&Face::moving([1.0; 3]), [3.0, 4.0, 5.0]), 1.0);
    }

    #[test]
    fn inlet_scale_ramps_smoothly_to_one() {
        assert_eq!(inlet_scale(0, 100.0), 0.0);
        assert_eq!(inlet_scale(50, 100.0), 0.5);
        assert_eq!(inlet_scale(100, 100.0), 1.0);
        assert_eq!(inlet_scale(1000, 100.0), 1.0);
        assert_eq!(inlet_scale(0, 0.0), 1.0);
        assert_eq!(inlet_scale(3, f64::NAN), 1.0);
        let s: Vec<f32> = (0..=100).map(|t| inlet_scale(t, 100.0)).collect();
        assert!(s.windows(2).all(|w| w[1] >= w[0]));
        // Zero slope at both ends: the first and last steps change it by far less than 1/100.
        assert!(s[1] < 1e-3 && 1.0 - s[99] < 1e-3);
    }

    #[test]
    fn inlet_cells_report_their_profile() {
        let l = Lattice::new(3, 6, 1);
        let mut p = LbmParams::new(l, Rates::from_viscosity(0.1));
        p.faces[0] = Face::moving([0.08, 0.0, 0.0]).with_parabola(1, 0.5, 4.5);
        let cell = l.index(0, 2, 0);
        let (rho, u) = crate::lbm::boundary_fields(&p, cell_byte(CellKind::Inlet, 0), cell);
        // y = 2 is 1.5 cells from the wall plane at 0.5: 1 - (0.5 / 2)^2 of the peak.
        assert_eq!(rho, 1.0);
        assert!((u[0] - 0.08 * 0.9375).abs() < 1e-7, "{u:?}");
        let (rho, _) = crate::lbm::boundary_fields(&p, cell_byte(CellKind::Outlet, 1), cell);
        assert_eq!(rho, 1.0);
        p.faces[1] = Face::outlet(1.02);
        let (rho, _) = crate::lbm::boundary_fields(&p, cell_byte(CellKind::Outlet, 1), cell);
        assert_eq!(rho, 1.02);
    }

    #[test]
    fn resting_wall_bounces_back_unchanged() {
        for q in 0..Q {
            assert_eq!(moving_bounce_back(q, 0.037, [0.0; 3]), 0.037);
        }
    }

    #[test]
    fn moving_wall_adds_six_w_c_dot_u() {
        // q with c = (1, 0, 0): a face direction, weight 2/27 in D3Q27.
        let q = (0..Q).find(|&q| velocity(q) == [1, 0, 0]).unwrap();
        assert!((weight(q) - 2.0 / 27.0).abs() < 1e-7);
        let got = moving_bounce_back(q, 0.05, [0.1, 0.3, -0.2]);
        assert!(
            (got - (0.05 + 6.0 * 2.0 / 27.0 * 0.1)).abs() < 1e-7,
            "{got}"
        );
    }

    #[test]
    fn bounce_backs_return_the_equilibrium_of_the_boundary_state() {
        // For populations at equilibrium with the wall's state, the condition gives back the
        // equilibrium: f_q = f_eq,q from f_eq,opp(q) (the second-order equilibrium's odd part is
        // 6 w rho (c.u), its even part 2 w rho (1 + 4.5 (c.u)^2 - 1.5 u^2)).
        let uw = [0.04f32, -0.02, 0.03];
        let feq: [f32; Q] = core::array::from_fn(|q| equilibrium(q, 1.0, uw));
        let (rho_out, u_out) = (1.02f32, [0.05f32, 0.01, -0.02]);
        let feq_out: [f32; Q] = core::array::from_fn(|q| equilibrium(q, rho_out, u_out));
        for q in 0..Q {
            let moving = moving_bounce_back(q, feq[opposite(q)], uw);
            assert!((moving - feq[q]).abs() < 2e-7, "moving wall, q = {q}");
            let anti = anti_bounce_back(q, feq_out[opposite(q)], rho_out, u_out);
            assert!((anti - feq_out[q]).abs() < 2e-7, "outlet, q = {q}");
        }
    }

    #[test]
    fn near_boundary_marks_exactly_the_wall_neighbours() {
        // 6 x 5 x 1, wall column at x = 0: fluid cells at x = 1 and (periodic) x = 5 are near.
        let l = Lattice::new(6, 5, 1);
        let mut flags = [FLUID; 30];
        for y in 0..5 {
            flags[l.index(0, y, 0)] = CellKind::Wall as u8;
        }
        mark_near_boundary(&l, &mut flags);
        for (cell, &flag) in flags.iter().enumerate() {
            let (x, _, _) = l.coords(cell);
            let want = match x {
                0 => CellKind::Wall as u8,
                1 | 5 => FLUID | NEAR_BOUNDARY,
                _ => FLUID,
            };
            assert_eq!(flag, want, "x = {x}");
            assert_eq!(CellKind::from_u8(flag) as u8, want & KIND_MASK);
        }
    }
}
