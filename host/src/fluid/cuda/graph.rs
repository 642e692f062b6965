//! A step replayed as one CUDA graph: the plan's launches of a step captured once and launched
//! as one unit, so a small lattice stops paying a launch gap per stage.
//!
//! A graph holds its launches' arguments by value, so one is replayed only while everything a
//! step passes by value is the same: the kernel parameters (the inlet ramp's scale, the rates
//! the viewer may change), the model, the step's parity (in place, where each population
//! lies) and which of the pull scheme's two buffers is the current one. That is the key of a
//! captured step. A key is captured the second time it comes (a ramp, whose scale changes every
//! step, never is), and a few keys are kept (the two parities of a steady run). Steps with
//! immersed solids (their stages read the solids' pose of the step from the host) and a
//! rank's slab (its exchange goes through NCCL) are launched stage by stage. A replayed step
//! runs the very launches of a step launched stage by stage, so it stores the same bits (a GPU
//! test compares them).

use cudarc::driver::CudaGraph;
use murmur_common::lbm::{CollisionModel, LbmParams};

/// What a step's launches take by value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct GraphKey {
    pub params: LbmParams,
    pub model: CollisionModel,
    /// The step's parity.
    pub odd: bool,
    /// Whether the pull scheme's buffers are swapped against their first order.
    pub swapped: bool,
}

/// Keys kept at most (a steady run uses two).
const KEPT: usize = 4;

/// The captured steps of a lattice and the keys seen once.
#[derive(Default)]
pub(super) struct StepGraphs {
    captured: Vec<(GraphKey, CudaGraph)>,
    seen: Vec<GraphKey>,
}

impl StepGraphs {
    /// The graph of `key`, if captured.
    pub fn get(&self, key: &GraphKey) -> Option<&CudaGraph> {
        self.captured.iter().find(|(k, _)| k == key).map(|(_, g)| g)
    }

    /// Whether `key` came before (then it is worth capturing); notes it otherwise.
    pub fn seen_before(&mut self, key: &GraphKey) -> bool {
        if self.seen.contains(key) {
            return true;
        }
        if self.seen.len() == 2 * KEPT {
            self.seen.remove(0);
        }
        self.seen.push(*key);
        false
    }

    /// Keeps `graph` for `key` (the oldest goes beyond [`KEPT`]).
    pub fn insert(&mut self, key: GraphKey, graph: CudaGraph) -> &CudaGraph {
        if self.captured.len() == KEPT {
            self.captured.remove(0);
        }
        self.captured.push((key, graph));
        &self.captured.last().expect("just pushed").1
    }
}
