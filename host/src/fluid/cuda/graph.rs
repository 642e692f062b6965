//! A step launched as one CUDA graph: the plan's launches of a step captured from the stream and
//! launched as one unit, so a small lattice stops paying a launch gap per stage.
//!
//! A graph holds its launches' arguments by value. What a step passes by value is its key
//! ([`GraphKey`]): the kernel parameters (the inlet ramp's scale, the rates the viewer may
//! change), the model, the step's parity (in place, where each population lies), which of the
//! pull scheme's two buffers is the current one, and with immersed solids the slot of the
//! step's force record in the ring and the solids' states of the step (their poses and
//! velocities, [`IbKey`]), and with fixed solids of cut links the slot of their record. With `--graph`, every step of one lattice is one graph launch:
//!
//! - A key met before whose executable graph is kept is a hit: that graph is launched, with no
//!   capture.
//! - Otherwise the step's launches are captured from the stream into a graph (stream capture
//!   records them without running them). A key that came before (the two parities of a steady
//!   run) gets an executable graph of its own, kept for its later hits (a few keys at most).
//!   Any other key (each step of an inlet ramp, each step with immersed solids: their record
//!   slot and poses change every step) updates the parameters of one kept executable graph in
//!   place (`cuGraphExecUpdate`), which is far cheaper than instantiating one; when the update
//!   is refused (the graph's shape differs, e.g. another model's kernels), a new executable
//!   graph replaces it. The captured graph is destroyed either way and the executable graph
//!   launched. An update takes effect for the launches after it, never for one already queued.
//!
//! What must happen on the host around a step stays outside the capture: the immersed
//! boundary's [`begin`](super::ib::CudaIb::begin) (fixing the step's record slot and the solids'
//! states; draining a full force ring, a device-to-host copy that waits for the stream) before
//! it, and [`end`](super::ib::CudaIb::end) (the record becomes pending) after it. Every stage
//! a step issues, the immersed boundary's included (clear, mark, bin, scan, place, velocity,
//! the forcing passes, gather, update), is a kernel launch on the GPU's streams, with no copy
//! from the host and no wait for the device, so each one can be captured; the band's overflow
//! check and the force ring's download run when forces, samples or the state are read, not
//! during a step. A rank's slab is launched stage by stage (its exchange goes through NCCL).
//!
//! A step launched as a graph runs the very launches of a step launched stage by stage, with
//! the same arguments, so it stores the same bits (the `fluid_graph` GPU tests compare the
//! populations and the solids' force records). The stage times then hold one stage, `step
//! (CUDA graph)`: events between the stages of a captured step would become part of the graph.

use super::{CudaFluid, FluidError};
use crate::gpu::{DriverContext, GpuError};
use cudarc::driver::{result, sys, CudaStream, DriverError};
use murmur_common::lbm::abi::{
    Boundary, IbVelocity, Solids, StreamCollide, StreamCollideBand, StreamCollideLayer,
    StreamCollideSponge,
};
use murmur_common::lbm::ib::solid::SolidState;
use murmur_common::lbm::{CollisionModel, LbmParams, Model, Storage};
use std::sync::Arc;

/// What a step's launches take by value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct GraphKey {
    pub params: LbmParams,
    pub model: CollisionModel,
    /// The step's parity.
    pub odd: bool,
    /// Whether the pull scheme's buffers are swapped against their first order.
    pub swapped: bool,
    /// The immersed boundary's part (`None` without immersed solids).
    pub ib: Option<IbKey>,
    /// The slot of the step's force record of the fixed solids with cut links (`None`:
    /// none).
    pub walls: Option<u64>,
}

/// What the immersed boundary's stages of a step take by value: the slot of the step's force
/// record in the ring and the solids' states. Equal when every bit is.
#[derive(Clone, Copy, Debug)]
pub(super) struct IbKey {
    pub slot: u64,
    pub solids: Solids,
    /// Pushes the step applies (their launches' sizes).
    pub pushes: u32,
}

impl PartialEq for IbKey {
    fn eq(&self, other: &IbKey) -> bool {
        self.slot == other.slot
            && self.pushes == other.pushes
            && self
                .solids
                .states
                .iter()
                .zip(&other.solids.states)
                .all(|(a, b)| state_bits(a) == state_bits(b))
    }
}

// `state_bits` reads every word of a state.
const _: () = assert!(std::mem::size_of::<SolidState>() == 21 * 4);

/// The bits of a solid's state, padding included.
fn state_bits(s: &SolidState) -> [u32; 21] {
    let mut out = [0; 21];
    let r = &s.rotation;
    let words = s.center.iter().map(|x| x.to_bits()).chain([s._pad0]);
    let words = words.chain(r.iter().flatten().map(|x| x.to_bits()));
    let words = words.chain(s.velocity.iter().map(|x| x.to_bits()).chain([s._pad1]));
    let words = words.chain(s.omega.iter().map(|x| x.to_bits()).chain([s._pad2]));
    for (o, w) in out.iter_mut().zip(words) {
        *o = w;
    }
    out
}

/// Keys whose executable graphs are kept at most (a steady run uses two).
const KEPT: usize = 4;

/// A graph ended from a stream capture, destroyed on drop.
struct Captured {
    graph: sys::CUgraph,
    stream: Arc<CudaStream>,
}

impl Captured {
    /// Ends `stream`'s capture: the graph of the launches captured, `None` when there were
    /// none.
    fn end(stream: &Arc<CudaStream>) -> Result<Option<Captured>, DriverError> {
        stream.context().bind_to_thread()?;
        // SAFETY: `stream` is a live stream of the bound context; ending a capture it is not in
        // is an error the driver reports.
        let graph = unsafe { result::stream::end_capture(stream.cu_stream()) }?;
        Ok((!graph.is_null()).then(|| Captured {
            graph,
            stream: stream.clone(),
        }))
    }
}

impl Drop for Captured {
    fn drop(&mut self) {
        let ctx = self.stream.context();
        ctx.record_err(ctx.bind_to_thread());
        // SAFETY: the graph came from `end` and is destroyed once, here; executable graphs made
        // from it do not depend on it.
        ctx.record_err(unsafe { result::graph::destroy(self.graph) });
    }
}

/// An executable step graph, launched on the stream it was captured from; destroyed on drop.
pub(super) struct StepExec {
    exec: sys::CUgraphExec,
    stream: Arc<CudaStream>,
}

impl StepExec {
    /// An executable graph of `graph`.
    fn instantiate(graph: &Captured) -> Result<StepExec, DriverError> {
        graph.stream.context().bind_to_thread()?;
        // SAFETY: `graph.graph` is a live graph of the bound context.
        let exec =
            unsafe { result::graph::instantiate(graph.graph, sys::CUgraphInstantiate_flags(0)) }?;
        Ok(StepExec {
            exec,
            stream: graph.stream.clone(),
        })
    }

    /// Takes the node parameters of `graph` in place: `false` when the driver refuses the
    /// update (`graph` is not this graph's shape: other nodes, edges, kernels or launch
    /// attributes), after which this graph is not launched again.
    fn update(&mut self, graph: &Captured) -> Result<bool, DriverError> {
        self.stream.context().bind_to_thread()?;
        let mut info = sys::CUgraphExecUpdateResultInfo {
            result: sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
            errorNode: std::ptr::null_mut(),
            errorFromNode: std::ptr::null_mut(),
        };
        // SAFETY: both handles are live and of the bound context; `info` is written by the call.
        match unsafe { sys::cuGraphExecUpdate_v2(self.exec, graph.graph, &mut info) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => Ok(false),
            other => Err(DriverError(other)),
        }
    }

    /// Queues the graph's launches on its stream.
    pub fn launch(&self) -> Result<(), DriverError> {
        self.stream.context().bind_to_thread()?;
        // SAFETY: the executable graph and its stream are live and of the bound context.
        unsafe { result::graph::launch(self.exec, self.stream.cu_stream()) }
    }
}

impl Drop for StepExec {
    fn drop(&mut self) {
        let ctx = self.stream.context();
        ctx.record_err(ctx.bind_to_thread());
        // SAFETY: the executable graph is destroyed once, here; launches already queued keep
        // what they use until they finish.
        ctx.record_err(unsafe { result::graph::exec_destroy(self.exec) });
    }
}

/// A lattice's executable step graphs: those of keys that came more than once, and the one
/// the other keys update in place.
#[derive(Default)]
pub(super) struct StepGraphs {
    kept: Vec<(GraphKey, StepExec)>,
    /// Keys seen recently (a key seen again gets a graph of its own).
    seen: Vec<GraphKey>,
    /// The graph updated in place on a miss, with the key it holds now.
    updated: Option<(GraphKey, StepExec)>,
}

impl StepGraphs {
    /// The executable graph holding `key`'s parameters, if any.
    fn get(&self, key: &GraphKey) -> Option<&StepExec> {
        self.kept
            .iter()
            .chain(self.updated.as_ref())
            .find(|(k, _)| k == key)
            .map(|(_, g)| g)
    }

    /// Whether `key` came before; notes it otherwise.
    fn seen_before(&mut self, key: &GraphKey) -> bool {
        if self.seen.contains(key) {
            return true;
        }
        if self.seen.len() == 2 * KEPT {
            self.seen.remove(0);
        }
        self.seen.push(*key);
        false
    }

    /// Turns `graph`, the captured step of `key`, into the executable graph that holds it: a
    /// new one kept for `key` when the key came before, else the updated graph.
    fn take(&mut self, key: GraphKey, graph: &Captured) -> Result<(), GpuError> {
        if self.seen_before(&key) {
            let exec = StepExec::instantiate(graph).ctx("instantiating a step graph")?;
            if self.kept.len() == KEPT {
                self.kept.remove(0);
            }
            self.kept.push((key, exec));
            return Ok(());
        }
        let updated = match self.updated.take() {
            Some((_, mut exec)) => exec
                .update(graph)
                .ctx("updating a step graph")?
                .then_some(exec),
            None => None,
        };
        let exec = match updated {
            Some(exec) => exec,
            None => StepExec::instantiate(graph).ctx("instantiating a step graph")?,
        };
        self.updated = Some((key, exec));
        Ok(())
    }
}

impl<S: Storage> CudaFluid<S>
where
    IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    murmur_common::lbm::links::WallLinks<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    /// What step `step` passes by value (after the immersed boundary's `begin`).
    fn graph_key(&self, step: u64) -> GraphKey {
        GraphKey {
            params: self.params,
            model: self.model,
            odd: step & 1 == 1,
            swapped: self.swapped,
            ib: self.ib.as_ref().map(|ib| super::graph::IbKey {
                pushes: self.pushes.as_ref().map_or(0, |p| p.count()),
                ..ib.graph_key()
            }),
            walls: self.walls.is_some().then_some(self.walls_slot),
        }
    }

    /// Step `step` (of one lattice, not a slab) launched as one CUDA graph (module docs).
    pub(super) fn graphed_step<M: Model>(&mut self, step: u64) -> Result<(), FluidError>
    where
        StreamCollide<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideSponge<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        Boundary<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideLayer<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        if let Some(ib) = self.ib.as_mut() {
            ib.begin(&self.gpu, step, None)?;
        }
        let key = self.graph_key(step);
        let stream = self.gpu.stream.clone();
        if self.graphs.get(&key).is_none() {
            stream
                .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .ctx("starting a step graph's capture")?;
            self.capturing = true;
            let issued = self.step_with::<M>(step);
            self.capturing = false;
            // The capture ends whatever happened, so the stream takes work again.
            let graph = Captured::end(&stream).ctx("capturing a step graph");
            issued?;
            let graph =
                graph?.ok_or_else(|| FluidError::Invalid("the step graph is empty".into()))?;
            self.graphs.take(key, &graph)?;
        }
        let Some(exec) = self.graphs.get(&key) else {
            unreachable!("taken above")
        };
        self.clock.begin(&stream)?;
        exec.launch().ctx("launching a step graph")?;
        self.clock.mark(&stream, "step (CUDA graph)")?;
        self.clock.end();
        if let Some(ib) = self.ib.as_mut() {
            ib.end(step);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immersed_keys_are_equal_when_every_bit_is() {
        let mut solids = Solids::default();
        solids.states[1].center = [3.0, 4.5, 0.0];
        solids.states[1].rotation[2] = [0.0, 0.0, 1.0];
        let a = IbKey {
            slot: 7,
            solids,
            pushes: 0,
        };
        assert_eq!(
            a,
            IbKey {
                slot: 7,
                solids,
                pushes: 0
            }
        );
        assert_ne!(a, IbKey { pushes: 3, ..a });
        assert_ne!(a, IbKey { slot: 8, ..a });
        let mut b = a;
        b.solids.states[1].omega[2] = 1e-9;
        assert_ne!(a, b);
        // -0.0 == 0.0 as floats, yet a kernel taking either may store other bits.
        let mut c = a;
        c.solids.states[1].center[2] = -0.0;
        assert_ne!(a, c);
        assert_eq!(state_bits(&a.solids.states[1])[4..13], {
            let mut r = [0; 9];
            r[8] = 1f32.to_bits();
            r
        });
    }
}
