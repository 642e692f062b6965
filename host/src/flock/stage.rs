//! The stages of a flock step, shared by the CPU and CUDA backends (their names are the names in
//! timings, benches and docs), and the step plan: the flat, ordered list of stages a step runs
//! for given settings, built once per settings.

use super::{FlockSettings, Method, SortArg};
use murmur_common::flock::abi as k;
use murmur_common::sort::abi::ScanCells;
use murmur_common::Kernel;

/// How `update_boids_*` finds a boid's neighbours: one update kernel each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    Naive,
    Scattered,
    Coherent,
    /// `Coherent` with predicated sums (small flocks on the GPU).
    CoherentPredicated,
    /// `Coherent` staging candidates in shared memory (GPU).
    CoherentShared,
}

impl Search {
    /// The update stage's name: its kernel's name.
    pub const fn name(self) -> &'static str {
        match self {
            Search::Naive => k::UpdateNaive::NAME,
            Search::Scattered => k::UpdateScattered::NAME,
            Search::Coherent => k::UpdateCoherent::NAME,
            Search::CoherentPredicated => k::UpdateCoherentPredicated::NAME,
            Search::CoherentShared => k::UpdateCoherentShared::NAME,
        }
    }
}

/// One stage of a flock step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Counting sort: the per-cell counts scanned into the cell table.
    ScanCells,
    /// Counting sort, `coherent`: the state scattered into cell order.
    ScatterCells,
    /// Counting sort, `scattered`: the sorted index array.
    ScatterIndex,
    /// Sort binning: each boid's cell key and index.
    ComputeKeys,
    /// Sort binning: (key, index) pairs sorted by key.
    Sort,
    /// Sort binning: the cell table from the sorted keys.
    CellBounds,
    /// Sort binning, `coherent`: the state gathered into cell order.
    Gather,
    /// New velocities and positions (and, counting, the next step's cell counts).
    Update(Search),
}

impl Stage {
    /// The stage's name (a kernel's name where the stage is one kernel).
    pub const fn name(self) -> &'static str {
        match self {
            Stage::ScanCells => ScanCells::NAME,
            Stage::ScatterCells => k::ScatterCells::NAME,
            Stage::ScatterIndex => k::ScatterIndex::NAME,
            Stage::ComputeKeys => k::ComputeKeys::NAME,
            Stage::Sort => "sort",
            Stage::CellBounds => k::CellBounds::NAME,
            Stage::Gather => k::Gather::NAME,
            Stage::Update(s) => s.name(),
        }
    }
}

/// Where a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cpu,
    /// The GPU, with the update's search already chosen (the flock's size picks between
    /// `Coherent` and `CoherentPredicated`).
    Cuda {
        coherent: Search,
    },
}

/// The stages of one step, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepPlan {
    pub stages: Vec<Stage>,
    /// The GPU's counting sort: the update counts boids into their next cells, the scan and the
    /// scatter bin them, and these three may overlap through programmatic dependent launch.
    pub counting: bool,
}

impl StepPlan {
    pub fn new(settings: &FlockSettings, target: Target) -> StepPlan {
        let method = settings.method;
        let update = match (method, target) {
            (Method::Naive, _) => Search::Naive,
            (Method::Scattered, _) => Search::Scattered,
            (Method::Coherent | Method::CoherentShared, Target::Cpu) => Search::Coherent,
            (Method::Coherent, Target::Cuda { coherent }) => coherent,
            (Method::CoherentShared, Target::Cuda { .. }) => Search::CoherentShared,
        };
        let reorder = matches!(method, Method::Coherent | Method::CoherentShared);
        let counting = matches!(target, Target::Cuda { .. })
            && settings.sort == SortArg::Counting
            && method != Method::Naive;
        let mut stages = Vec::new();
        if method != Method::Naive {
            if counting {
                stages.push(Stage::ScanCells);
                stages.push(if reorder {
                    Stage::ScatterCells
                } else {
                    Stage::ScatterIndex
                });
            } else {
                stages.extend([Stage::ComputeKeys, Stage::Sort, Stage::CellBounds]);
                if reorder {
                    stages.push(Stage::Gather);
                }
            }
        }
        stages.push(Stage::Update(update));
        StepPlan { stages, counting }
    }
}
