//! A slab's face exchange on the CPU: the face layers packed, one message to each neighbour
//! through any [`Comm`], unpacked into the ghost layers.

use crate::fluid::FluidError;
use crate::ranks::Comm;
use murmur_common::lbm::abi::{BandHalo, Halo};
use murmur_common::lbm::halo::{self, face_cells, BAND_VALUES, CROSSING};
use murmur_common::lbm::ib::band::BandMut;
use murmur_common::lbm::{Populations, Storage};
use std::sync::Arc;

use super::*;

/// What arrives for the lower and the upper ghost layer (`None`: that face took no part).
type FaceMessages = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The CPU's exchange: pack the face layers, one message to each neighbour, unpack into the
/// ghost layers.
pub struct CpuHalo {
    pub comm: Arc<dyn Comm>,
    pub axis: u32,
}

impl CpuHalo {
    /// Sends `up` (this slab's upper face) to the next rank and `down` to the previous one;
    /// returns what arrives for the lower and the upper ghost layer, each checked to hold
    /// `len` bytes.
    /// `faces` says which of the lower and upper face take part (the neighbour across a face
    /// must say the same of it); a face left out sends and receives nothing (`None`).
    fn swap_faces(
        &self,
        up: &[u8],
        down: &[u8],
        len: usize,
        faces: [bool; 2],
    ) -> Result<FaceMessages, FluidError> {
        let (prev, next) = crate::ranks::ring(self.comm.rank(), self.comm.size());
        let [lower, upper] = faces;
        let mut sends = Vec::new();
        let mut from = Vec::new();
        if upper {
            sends.push((next, up));
        }
        if lower {
            sends.push((prev, down));
            from.push(prev);
        }
        if upper {
            from.push(next);
        }
        let mut got = self
            .comm
            .send_recv(&sends, &from)
            .map_err(FluidError::from)?;
        if got.len() != from.len() || got.iter().any(|m| m.len() != len) {
            return Err(FluidError::WrongSize {
                what: "a slab message".into(),
            });
        }
        let hi = if upper { got.pop() } else { None };
        let lo = if lower { got.pop() } else { None };
        Ok((lo, hi))
    }

    /// Exchanges the band values (`rho, u*`) of the face layers into the ghost layers' band
    /// cells, before a multi-direct-forcing pass ([`halo::band_pack`]), across the faces a
    /// solid reaches (`faces`: lower, upper; [`crate::fluid::ib::plan::IbPlan::faces_reached`]).
    pub fn exchange_band(&self, band: BandMut, faces: [bool; 2]) -> Result<(), FluidError> {
        if faces == [false; 2] {
            return Ok(());
        }
        let l = band.bricks.lattice;
        let n = face_cells(&l, self.axis);
        let owned = extent(&l, self.axis as usize) - 2;
        let args = |buf: &mut [f32], layer: u32| BandHalo {
            band,
            buf: crate::fluid::cpu::view_mut(buf),
            axis: self.axis,
            layer,
        };
        let mut up = vec![0.0f32; BAND_VALUES * n];
        let mut down = vec![0.0f32; BAND_VALUES * n];
        {
            let (a, b) = (args(&mut up, owned), args(&mut down, 1));
            for i in 0..n {
                // SAFETY: the buffers hold `4 n` values, the band its plan's sizes.
                unsafe {
                    halo::band_pack(&a, i);
                    halo::band_pack(&b, i);
                }
            }
        }
        let bytes = BAND_VALUES * n * 4;
        let got = self.swap_faces(as_bytes(&up), as_bytes(&down), bytes, faces)?;
        for (m, layer) in [(got.0, 0), (got.1, owned + 1)] {
            let Some(m) = m else { continue };
            let mut v: Vec<f32> =
                from_bytes(&m, BAND_VALUES * n).ok_or_else(|| FluidError::WrongSize {
                    what: "a slab message".into(),
                })?;
            let a = args(&mut v, layer);
            for i in 0..n {
                // SAFETY: as above.
                unsafe { halo::band_unpack(&a, i) };
            }
        }
        Ok(())
    }

    /// Exchanges the crossing populations of `f` (the copy the next step reads).
    pub fn exchange<S: Storage>(
        &self,
        pops: &Populations<S>,
        f: &mut [S::Elem],
    ) -> Result<(), FluidError> {
        let packed = self.pack(pops, f);
        self.receive(packed, pops, f)
    }

    /// The face layers' crossing populations of `f`, packed for the neighbours (stage
    /// `halo_send`).
    pub fn pack<S: Storage>(&self, pops: &Populations<S>, f: &mut [S::Elem]) -> Packed {
        let l = pops.lattice;
        let n = face_cells(&l, self.axis);
        let owned = extent(&l, self.axis as usize) - 2;
        let mut up = vec![S::Elem::default(); CROSSING * n];
        let mut down = vec![S::Elem::default(); CROSSING * n];
        {
            let (a, b) = (
                self.halo(pops, f, &mut up, owned, 1),
                self.halo(pops, f, &mut down, 1, -1),
            );
            for i in 0..n {
                // SAFETY: the buffers hold `9 n` values, `f` the lattice's populations.
                unsafe {
                    halo::pack(&a, i);
                    halo::pack(&b, i);
                }
            }
        }
        Packed {
            up: as_bytes(&up).to_vec(),
            down: as_bytes(&down).to_vec(),
        }
    }

    /// Sends `packed` to the neighbours and unpacks what they sent into the ghost layers of
    /// `f` (stage `halo_receive`).
    pub fn receive<S: Storage>(
        &self,
        packed: Packed,
        pops: &Populations<S>,
        f: &mut [S::Elem],
    ) -> Result<(), FluidError> {
        let l = pops.lattice;
        let n = face_cells(&l, self.axis);
        let owned = extent(&l, self.axis as usize) - 2;
        let bytes = packed.up.len();
        let (lo, hi) = self.swap_faces(&packed.up, &packed.down, bytes, [true; 2])?;
        let bad = || FluidError::WrongSize {
            what: "a slab message".into(),
        };
        let mut lo: Vec<S::Elem> =
            from_bytes(&lo.unwrap_or_default(), CROSSING * n).ok_or_else(bad)?;
        let mut hi: Vec<S::Elem> =
            from_bytes(&hi.unwrap_or_default(), CROSSING * n).ok_or_else(bad)?;
        let (a, b) = (
            self.halo(pops, f, &mut lo, 0, 1),
            self.halo(pops, f, &mut hi, owned + 1, -1),
        );
        for i in 0..n {
            // SAFETY: the buffers hold `9 n` values, `f` the lattice's populations.
            unsafe {
                halo::unpack(&a, i);
                halo::unpack(&b, i);
            }
        }
        Ok(())
    }

    /// The halo kernels' arguments for face `layer` of `f` and `buf`.
    fn halo<S: Storage>(
        &self,
        pops: &Populations<S>,
        f: &mut [S::Elem],
        buf: &mut [S::Elem],
        layer: u32,
        sign: i32,
    ) -> Halo<S> {
        Halo {
            pops: *pops,
            f: crate::fluid::cpu::view_mut(f),
            buf: crate::fluid::cpu::view_mut(buf),
            axis: self.axis,
            layer,
            sign,
            _pad: 0,
        }
    }
}

/// A slab's two packed faces (the upper one for the next rank, the lower one for the previous),
/// between stages `halo_send` and `halo_receive`.
pub struct Packed {
    up: Vec<u8>,
    down: Vec<u8>,
}
