//! The stages of a flock step, shared by the CPU and CUDA backends (their names are the names in
//! timings, benches and docs), and the step plan: the flat, ordered list of stages a step runs
//! for given settings, each with its repeat count (the radix sort's pass runs once per digit),
//! built once per settings. Every stage of a plan runs on the backend's one stream, in order; a
//! stage that overlaps another (a halo exchange beside the interior update) needs a second one.

use super::{FlockSettings, Method, SortArg};
use murmur_common::flock::abi as k;
use murmur_common::sort::abi::{RadixCounts, RadixOnesweep, ScanCells};
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
    /// Sort binning on the CPU: (key, index) pairs sorted by key.
    Sort,
    /// Sort binning on the GPU: every radix pass's digit counts.
    RadixCounts,
    /// Sort binning on the GPU: one stable pass over one 8-bit digit (repeated per digit).
    RadixPass,
    /// Sort binning: the cell table from the sorted keys.
    CellBounds,
    /// Sort binning, `coherent`: the state gathered into cell order.
    Gather,
    /// `WithinCell::ById` on the GPU: each cell's entries sorted by id (after binning).
    OrderCells,
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
            Stage::RadixCounts => RadixCounts::NAME,
            Stage::RadixPass => RadixOnesweep::NAME,
            Stage::CellBounds => k::CellBounds::NAME,
            Stage::Gather => k::Gather::NAME,
            Stage::OrderCells => k::OrderCells::NAME,
            Stage::Update(s) => s.name(),
        }
    }
}

/// Where a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cpu,
    /// The GPU, with the update's search already chosen (the flock's size picks between
    /// `Coherent` and `CoherentPredicated`) and the radix sort's passes (the keys' bytes).
    Cuda {
        coherent: Search,
        radix_passes: u32,
    },
}

/// A stage in a plan, with how many times in a row it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub stage: Stage,
    pub repeat: u32,
}

/// The stages of one step, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepPlan {
    pub stages: Vec<Planned>,
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
            (Method::Coherent, Target::Cuda { coherent, .. }) => coherent,
            (Method::CoherentShared, Target::Cuda { .. }) => Search::CoherentShared,
        };
        let reorder = matches!(method, Method::Coherent | Method::CoherentShared);
        let counting = matches!(target, Target::Cuda { .. })
            && settings.sort == SortArg::Counting
            && method != Method::Naive;
        let once = |stage| Planned { stage, repeat: 1 };
        let mut stages = Vec::new();
        if method != Method::Naive {
            if counting {
                stages.push(once(Stage::ScanCells));
                stages.push(once(if reorder {
                    Stage::ScatterCells
                } else {
                    Stage::ScatterIndex
                }));
            } else {
                stages.push(once(Stage::ComputeKeys));
                match target {
                    Target::Cpu => stages.push(once(Stage::Sort)),
                    Target::Cuda { radix_passes, .. } => {
                        stages.push(once(Stage::RadixCounts));
                        stages.push(Planned {
                            stage: Stage::RadixPass,
                            repeat: radix_passes,
                        });
                    }
                }
                stages.push(once(Stage::CellBounds));
                if reorder {
                    stages.push(once(Stage::Gather));
                }
            }
        }
        stages.push(once(Stage::Update(update)));
        StepPlan { stages, counting }
    }

    /// This plan with each cell's boids put in id order before the update
    /// ([`super::WithinCell::ById`]); only where the update reads the state in cell order
    /// (`coherent`, `coherent-shared`), else unchanged.
    pub fn with_cells_by_id(mut self, settings: &FlockSettings) -> StepPlan {
        if matches!(settings.method, Method::Coherent | Method::CoherentShared) {
            let at = self.stages.len() - 1;
            self.stages.insert(
                at,
                Planned {
                    stage: Stage::OrderCells,
                    repeat: 1,
                },
            );
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flock::config::FlockConfig;

    fn names(plan: &StepPlan) -> Vec<(&'static str, u32)> {
        plan.stages
            .iter()
            .map(|p| (p.stage.name(), p.repeat))
            .collect()
    }

    #[test]
    fn plans_follow_method_binning_and_target() {
        let mut s = FlockConfig::default().settings().unwrap();
        let gpu = Target::Cuda {
            coherent: Search::CoherentPredicated,
            radix_passes: 3,
        };
        assert_eq!(
            names(&StepPlan::new(&s, gpu)),
            [
                ("scan_cells", 1),
                ("scatter_cells", 1),
                ("update_boids_coherent_predicated", 1)
            ]
        );
        assert!(StepPlan::new(&s, gpu).counting);
        s.sort = SortArg::Radix;
        assert_eq!(
            names(&StepPlan::new(&s, gpu)),
            [
                ("compute_keys", 1),
                ("radix_counts", 1),
                ("radix_onesweep", 3),
                ("cell_bounds", 1),
                ("gather", 1),
                ("update_boids_coherent_predicated", 1)
            ]
        );
        assert_eq!(
            names(&StepPlan::new(&s, Target::Cpu)),
            [
                ("compute_keys", 1),
                ("sort", 1),
                ("cell_bounds", 1),
                ("gather", 1),
                ("update_boids_coherent", 1)
            ]
        );
        s.sort = SortArg::Counting;
        assert_eq!(
            names(&StepPlan::new(&s, gpu).with_cells_by_id(&s)),
            [
                ("scan_cells", 1),
                ("scatter_cells", 1),
                ("order_cells_by_id", 1),
                ("update_boids_coherent_predicated", 1)
            ]
        );
        s.method = Method::Naive;
        assert_eq!(names(&StepPlan::new(&s, gpu)), [("update_boids_naive", 1)]);
        assert_eq!(
            names(&StepPlan::new(&s, gpu).with_cells_by_id(&s)),
            [("update_boids_naive", 1)]
        );
        assert!(!StepPlan::new(&s, gpu).counting);
    }
}
