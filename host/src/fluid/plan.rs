//! The stages of a fluid step and the step plan: the flat, ordered list of stages one step runs
//! for a given setup, built once per setup and walked by the CPU and CUDA backends alike.
//!
//! Every entry runs on a lane: the backend's own stream (`Compute`), a second stream for the
//! boundary kernel beside the interior kernel (`Side`), or the communicator's stream for a slab's
//! face exchange (`Exchange`). [`FluidStage::Fork`] orders a lane after the compute lane's work so
//! far, [`FluidStage::Join`] orders the compute lane's later work after the lane's. The CPU walker
//! runs every entry in order on its one thread pool, forks and joins being no-ops there.
//!
//! Stage names are the names of timings, bench columns and doc tables: a stage that is one kernel
//! is named after it; a stage with one kernel per model and storage (`stream_collide`, `boundary`)
//! by the kernels' family. The time of an entry that is not timed on its own (a fork, the outlet
//! layer's kernel, work beside the compute lane) counts into the next timed entry of the compute
//! lane: [`Planned::timed`] names it.

use murmur_common::lbm::abi::{IbBin, IbClear, IbForce, IbGather, IbMark, IbPlace, IbUpdate};
use murmur_common::lbm::ib::push::{PushPoints, PushSpread};
use murmur_common::Kernel;

/// Where an entry runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The backend's own stream (the CPU's thread pool).
    Compute,
    /// The boundary kernel's stream, beside the interior kernel.
    Side,
    /// The communicator's stream: a slab's faces packed, sent, received and unpacked.
    Exchange,
}

/// The z layers `z0..z1` of the lattice an entry updates (clamped to the lattice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layers {
    pub z0: u32,
    pub z1: u32,
}

impl Layers {
    /// Every layer.
    pub const ALL: Layers = Layers {
        z0: 0,
        z1: u32::MAX,
    };

    pub const fn new(z0: u32, z1: u32) -> Layers {
        Layers { z0, z1 }
    }
}

/// One stage of a fluid step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FluidStage {
    /// Fixed solids with interpolated bounce-back: every cut link's returning population
    /// written into its solid node's slot, each solid's force recorded.
    WallLinks,
    /// Immersed boundary: the band table, its counter and this step's force record cleared.
    IbClear,
    /// Immersed boundary: the band cells the samples' stencils reach claimed.
    IbMark,
    /// Immersed boundary, gather: each sample's bin and rank in it.
    IbBin,
    /// Immersed boundary, gather: the bins' counts scanned into starts.
    IbScan,
    /// Immersed boundary, gather: the samples placed in bin order.
    IbPlace,
    /// Immersed boundary: every band cell's density and velocity before forcing.
    IbVelocity,
    /// Immersed boundary on a slab: the band values of the face layers exchanged before a pass.
    IbBandHalo,
    /// Immersed boundary: forcing pass `pass` (interpolate, force, spread).
    IbForce { pass: u32 },
    /// Immersed boundary, gather: band cells gather the stored sample forces.
    IbGather,
    /// Immersed boundary, scatter: band cells' velocities updated by the spread force.
    IbUpdate,
    /// Pushes from a layer above the fluid: the bricks of their stencils claimed.
    PushMark,
    /// Pushes: their impulses spread into the band's sums (which the stream-collide step adds
    /// to the band's force).
    PushSpread,
    /// The outlet layer's interior cells, over its box in these layers (timed with the next
    /// `StreamCollide`).
    Sponge(Layers),
    /// The interior kernel (plain, or adding the band's force) over these layers.
    StreamCollide(Layers),
    /// The boundary kernel over the listed cells (next to non-fluid cells); repeated in parts
    /// beside the interior kernel.
    Boundary,
    /// A lane ordered after the compute lane's work so far.
    Fork(Lane),
    /// The compute lane's later work ordered after a lane's.
    Join(Lane),
    /// A slab's face layers packed and sent to the neighbours (exchange lane).
    HaloSend,
    /// A slab's received faces unpacked into its ghost layers (exchange lane).
    HaloReceive,
}

impl FluidStage {
    /// The stage's name (its kernel's where it is one kernel).
    pub const fn name(self) -> &'static str {
        match self {
            FluidStage::WallLinks => "wall_links",
            FluidStage::IbClear => IbClear::NAME,
            FluidStage::IbMark => IbMark::NAME,
            FluidStage::IbBin => IbBin::NAME,
            FluidStage::IbScan => "ib_scan",
            FluidStage::IbPlace => IbPlace::NAME,
            FluidStage::IbVelocity => "ib_velocity",
            FluidStage::IbBandHalo => "ib_band_halo",
            FluidStage::IbForce { .. } => IbForce::NAME,
            FluidStage::IbGather => IbGather::NAME,
            FluidStage::IbUpdate => IbUpdate::NAME,
            FluidStage::PushMark => PushPoints::NAME,
            FluidStage::PushSpread => PushSpread::NAME,
            FluidStage::Sponge(_) => "stream_collide_sponge",
            FluidStage::StreamCollide(_) => "stream_collide",
            FluidStage::Boundary => "boundary",
            FluidStage::Fork(_) => "fork",
            FluidStage::Join(Lane::Side) => "boundary",
            FluidStage::Join(_) => "halo",
            FluidStage::HaloSend => "halo_send",
            FluidStage::HaloReceive => "halo_receive",
        }
    }

    /// The stages a bench or a table reports, in step order: every name a timing can carry.
    pub const TIMED: [FluidStage; 16] = [
        FluidStage::WallLinks,
        FluidStage::IbClear,
        FluidStage::IbMark,
        FluidStage::IbBin,
        FluidStage::IbScan,
        FluidStage::IbPlace,
        FluidStage::IbVelocity,
        FluidStage::IbBandHalo,
        FluidStage::IbForce { pass: 0 },
        FluidStage::IbUpdate,
        FluidStage::IbGather,
        FluidStage::PushMark,
        FluidStage::PushSpread,
        FluidStage::StreamCollide(Layers::ALL),
        FluidStage::Boundary,
        FluidStage::Join(Lane::Exchange),
    ];

    /// The names of the immersed boundary's timed stages, in step order.
    pub fn immersed_names() -> impl Iterator<Item = &'static str> {
        FluidStage::TIMED
            .into_iter()
            .filter(|s| s.is_immersed())
            .map(FluidStage::name)
    }

    /// Whether a timing's name is an immersed-boundary stage's.
    pub fn names_immersed(name: &str) -> bool {
        FluidStage::immersed_names().any(|n| n == name)
    }

    /// Whether the stage belongs to the immersed boundary.
    pub const fn is_immersed(self) -> bool {
        matches!(
            self,
            FluidStage::IbClear
                | FluidStage::IbMark
                | FluidStage::IbBin
                | FluidStage::IbScan
                | FluidStage::IbPlace
                | FluidStage::IbVelocity
                | FluidStage::IbBandHalo
                | FluidStage::IbForce { .. }
                | FluidStage::IbGather
                | FluidStage::IbUpdate
                | FluidStage::PushMark
                | FluidStage::PushSpread
        )
    }
}

/// A stage in a plan: where it runs, and how many times in a row (the boundary kernel beside the
/// interior kernel runs in parts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub stage: FluidStage,
    pub lane: Lane,
    pub repeat: u32,
}

impl Planned {
    const fn on(stage: FluidStage, lane: Lane) -> Planned {
        Planned {
            stage,
            lane,
            repeat: 1,
        }
    }

    /// The timing this entry ends, if any: the time since the previous timed entry counts into
    /// it (entries beside the compute lane, forks and the outlet layer's kernel end none).
    pub const fn timed(&self) -> Option<&'static str> {
        match (self.stage, self.lane) {
            (FluidStage::Fork(_) | FluidStage::Sponge(_), _) => None,
            (FluidStage::Join(_), _) => Some(self.stage.name()),
            (_, Lane::Compute) => Some(self.stage.name()),
            _ => None,
        }
    }
}

/// Where the boundary kernel runs with respect to the interior kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundaryLane {
    /// No listed cells: no boundary kernel.
    None,
    /// After the interior kernel on the compute lane.
    After,
    /// On the side lane, launched after the interior kernel at the same priority.
    SideAfter,
    /// On the side lane, launched first at high priority, in `parts` launches.
    SideFirst { parts: u32 },
}

/// The immersed boundary's shape of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbShape {
    /// Solids' samples force the band (their stages run).
    pub samples: bool,
    /// Pushes from a layer above the fluid join the band (their stages run).
    pub pushes: bool,
    /// Multi-direct forcing passes.
    pub passes: u32,
    /// Samples sorted into bins every step (`IbBin`, `IbScan`, `IbPlace`): the gather's and the
    /// binned scatter's.
    pub bins: bool,
    /// Band cells gather the samples' forces (`IbGather`) instead of `IbUpdate` after a pass.
    pub gather: bool,
}

/// A slab of several ranks: the axis it is cut along and the layers it owns along it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabShape {
    pub axis: u32,
    pub owned: u32,
}

/// Where a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// One stage function per cell over every cell (the boundary cells too), in order.
    Cpu,
    /// The interior, outlet-layer and boundary kernels, and the lanes.
    Cuda,
}

/// What a plan depends on: the parts of a setup that change which stages a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanInputs {
    pub target: Target,
    pub ib: Option<IbShape>,
    pub slab: Option<SlabShape>,
    pub boundary: BoundaryLane,
    /// Whether the outlet layer has interior cells (their own kernel on the GPU).
    pub sponge: bool,
    /// Whether fixed solids have cut links (interpolated bounce-back).
    pub walls: bool,
}

/// The stages of one step, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FluidPlan {
    pub stages: Vec<Planned>,
}

impl FluidPlan {
    pub fn new(inputs: &PlanInputs) -> FluidPlan {
        let mut p = FluidPlan { stages: Vec::new() };
        if inputs.walls {
            p.compute(FluidStage::WallLinks);
        }
        if let Some(ib) = inputs.ib {
            p.immersed(ib, inputs.slab.is_some());
        }
        match (inputs.target, inputs.slab) {
            (Target::Cpu, None) => p.compute(FluidStage::StreamCollide(Layers::ALL)),
            (Target::Cpu, Some(_)) => {
                p.compute(FluidStage::StreamCollide(Layers::ALL));
                p.exchange_faces();
            }
            (Target::Cuda, None) => p.cuda_lattice(inputs),
            (Target::Cuda, Some(slab)) => p.cuda_slab(inputs, slab),
        }
        p
    }

    /// The stages' names in order, repeats written out (what the tests compare).
    pub fn names(&self) -> Vec<&'static str> {
        self.stages
            .iter()
            .flat_map(|s| std::iter::repeat_n(s.stage.name(), s.repeat as usize))
            .collect()
    }

    fn push(&mut self, stage: FluidStage, lane: Lane) {
        self.stages.push(Planned::on(stage, lane));
    }

    fn compute(&mut self, stage: FluidStage) {
        self.push(stage, Lane::Compute);
    }

    fn immersed(&mut self, ib: IbShape, slab: bool) {
        self.compute(FluidStage::IbClear);
        if ib.samples {
            self.compute(FluidStage::IbMark);
        }
        if ib.pushes {
            self.compute(FluidStage::PushMark);
        }
        if ib.samples {
            if ib.bins {
                self.compute(FluidStage::IbBin);
                self.compute(FluidStage::IbScan);
                self.compute(FluidStage::IbPlace);
            }
            self.compute(FluidStage::IbVelocity);
            for pass in 0..ib.passes {
                if slab {
                    self.compute(FluidStage::IbBandHalo);
                }
                self.compute(FluidStage::IbForce { pass });
                self.compute(if ib.gather {
                    FluidStage::IbGather
                } else {
                    FluidStage::IbUpdate
                });
            }
        }
        if ib.pushes {
            self.compute(FluidStage::PushSpread);
        }
    }

    /// The outlet layer's kernel (where it has interior cells) and the interior kernel over
    /// `layers`.
    fn interior(&mut self, inputs: &PlanInputs, layers: Layers) {
        if inputs.sponge {
            self.compute(FluidStage::Sponge(layers));
        }
        self.compute(FluidStage::StreamCollide(layers));
    }

    /// A whole lattice on the GPU: the interior kernel, and the boundary kernel after it or
    /// beside it.
    fn cuda_lattice(&mut self, inputs: &PlanInputs) {
        match inputs.boundary {
            BoundaryLane::None => self.interior(inputs, Layers::ALL),
            BoundaryLane::After => {
                self.interior(inputs, Layers::ALL);
                self.compute(FluidStage::Boundary);
            }
            BoundaryLane::SideAfter => {
                self.compute(FluidStage::Fork(Lane::Side));
                self.interior(inputs, Layers::ALL);
                self.push(FluidStage::Boundary, Lane::Side);
                self.compute(FluidStage::Join(Lane::Side));
            }
            BoundaryLane::SideFirst { parts } => {
                self.compute(FluidStage::Fork(Lane::Side));
                self.stages.push(Planned {
                    stage: FluidStage::Boundary,
                    lane: Lane::Side,
                    repeat: parts.max(1),
                });
                self.interior(inputs, Layers::ALL);
                self.compute(FluidStage::Join(Lane::Side));
            }
        }
    }

    /// A rank's slab on the GPU: the face layers first, their crossing populations then travel
    /// on the exchange lane while the middle updates. Slabs along z have contiguous face layers,
    /// updated as layer ranges of the interior kernel; other axes list the face cells for the
    /// boundary kernel.
    fn cuda_slab(&mut self, inputs: &PlanInputs, slab: SlabShape) {
        let owned = slab.owned;
        if slab.axis == 2 {
            self.interior(inputs, Layers::new(1, 2));
            if owned > 1 {
                self.interior(inputs, Layers::new(owned, owned + 1));
            }
        }
        if inputs.boundary != BoundaryLane::None {
            self.compute(FluidStage::Boundary);
        }
        self.push(FluidStage::Fork(Lane::Exchange), Lane::Compute);
        self.push(FluidStage::HaloSend, Lane::Exchange);
        if slab.axis == 2 {
            if owned > 2 {
                self.interior(inputs, Layers::new(2, owned));
            }
        } else {
            self.interior(inputs, Layers::ALL);
        }
        self.push(FluidStage::HaloReceive, Lane::Exchange);
        self.compute(FluidStage::Join(Lane::Exchange));
    }

    /// The CPU's face exchange after the update, in order.
    fn exchange_faces(&mut self) {
        self.compute(FluidStage::Fork(Lane::Exchange));
        self.push(FluidStage::HaloSend, Lane::Exchange);
        self.push(FluidStage::HaloReceive, Lane::Exchange);
        self.compute(FluidStage::Join(Lane::Exchange));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(target: Target) -> PlanInputs {
        PlanInputs {
            target,
            ib: None,
            slab: None,
            boundary: BoundaryLane::None,
            sponge: false,
            walls: false,
        }
    }

    fn timed(plan: &FluidPlan) -> Vec<&'static str> {
        plan.stages.iter().filter_map(|s| s.timed()).collect()
    }

    #[test]
    fn a_periodic_box_is_one_stage() {
        for target in [Target::Cpu, Target::Cuda] {
            let plan = FluidPlan::new(&inputs(target));
            assert_eq!(plan.names(), ["stream_collide"]);
            assert_eq!(timed(&plan), ["stream_collide"]);
        }
    }

    #[test]
    fn walls_on_the_gpu_add_the_boundary_kernel_after_or_beside() {
        let mut i = inputs(Target::Cuda);
        i.boundary = BoundaryLane::After;
        assert_eq!(FluidPlan::new(&i).names(), ["stream_collide", "boundary"]);
        i.boundary = BoundaryLane::SideAfter;
        let plan = FluidPlan::new(&i);
        assert_eq!(
            plan.names(),
            ["fork", "stream_collide", "boundary", "boundary"]
        );
        assert_eq!(plan.stages[2].lane, Lane::Side);
        assert_eq!(timed(&plan), ["stream_collide", "boundary"]);
        i.boundary = BoundaryLane::SideFirst { parts: 3 };
        i.sponge = true;
        let plan = FluidPlan::new(&i);
        assert_eq!(
            plan.names(),
            [
                "fork",
                "boundary",
                "boundary",
                "boundary",
                "stream_collide_sponge",
                "stream_collide",
                "boundary"
            ]
        );
        // The side lane's launches and the outlet layer's kernel end no timing of their own.
        assert_eq!(timed(&plan), ["stream_collide", "boundary"]);
    }

    #[test]
    fn the_cpu_updates_walls_in_its_one_pass() {
        let mut i = inputs(Target::Cpu);
        i.boundary = BoundaryLane::SideFirst { parts: 2 };
        i.sponge = true;
        assert_eq!(FluidPlan::new(&i).names(), ["stream_collide"]);
    }

    #[test]
    fn solids_come_first_with_their_passes() {
        let mut i = inputs(Target::Cuda);
        i.ib = Some(IbShape {
            samples: true,
            pushes: false,
            passes: 2,
            bins: false,
            gather: false,
        });
        assert_eq!(
            FluidPlan::new(&i).names(),
            [
                "ib_clear",
                "ib_mark",
                "ib_velocity",
                "ib_force",
                "ib_update",
                "ib_force",
                "ib_update",
                "stream_collide"
            ]
        );
        i.ib = Some(IbShape {
            samples: true,
            pushes: false,
            passes: 1,
            bins: true,
            gather: true,
        });
        let plan = FluidPlan::new(&i);
        assert_eq!(
            plan.names(),
            [
                "ib_clear",
                "ib_mark",
                "ib_bin",
                "ib_scan",
                "ib_place",
                "ib_velocity",
                "ib_force",
                "ib_gather",
                "stream_collide"
            ]
        );
        assert!(plan.stages[..8].iter().all(|s| s.stage.is_immersed()));
        let passes: Vec<u32> = plan
            .stages
            .iter()
            .filter_map(|s| match s.stage {
                FluidStage::IbForce { pass } => Some(pass),
                _ => None,
            })
            .collect();
        assert_eq!(passes, [0]);
        // The binned scatter: the bins of the gather, the update of the scatter.
        i.ib = Some(IbShape {
            samples: true,
            pushes: false,
            passes: 2,
            bins: true,
            gather: false,
        });
        assert_eq!(
            FluidPlan::new(&i).names(),
            [
                "ib_clear",
                "ib_mark",
                "ib_bin",
                "ib_scan",
                "ib_place",
                "ib_velocity",
                "ib_force",
                "ib_update",
                "ib_force",
                "ib_update",
                "stream_collide"
            ]
        );
    }

    #[test]
    fn a_slab_along_z_updates_its_faces_before_sending_them() {
        let mut i = inputs(Target::Cuda);
        i.slab = Some(SlabShape { axis: 2, owned: 8 });
        i.sponge = true;
        let plan = FluidPlan::new(&i);
        let layers: Vec<(FluidStage, Lane)> =
            plan.stages.iter().map(|s| (s.stage, s.lane)).collect();
        use FluidStage::*;
        assert_eq!(
            layers,
            [
                (Sponge(Layers::new(1, 2)), Lane::Compute),
                (StreamCollide(Layers::new(1, 2)), Lane::Compute),
                (Sponge(Layers::new(8, 9)), Lane::Compute),
                (StreamCollide(Layers::new(8, 9)), Lane::Compute),
                (Fork(Lane::Exchange), Lane::Compute),
                (HaloSend, Lane::Exchange),
                (Sponge(Layers::new(2, 8)), Lane::Compute),
                (StreamCollide(Layers::new(2, 8)), Lane::Compute),
                (HaloReceive, Lane::Exchange),
                (Join(Lane::Exchange), Lane::Compute),
            ]
        );
        assert_eq!(
            timed(&plan),
            ["stream_collide", "stream_collide", "stream_collide", "halo"]
        );
    }

    #[test]
    fn a_slab_of_one_layer_or_two_skips_the_empty_ranges() {
        let mut i = inputs(Target::Cuda);
        i.slab = Some(SlabShape { axis: 2, owned: 1 });
        assert_eq!(
            FluidPlan::new(&i).names(),
            [
                "stream_collide",
                "fork",
                "halo_send",
                "halo_receive",
                "halo"
            ]
        );
        i.slab = Some(SlabShape { axis: 2, owned: 2 });
        assert_eq!(
            FluidPlan::new(&i).names(),
            [
                "stream_collide",
                "stream_collide",
                "fork",
                "halo_send",
                "halo_receive",
                "halo"
            ]
        );
    }

    #[test]
    fn a_slab_along_x_lists_its_faces_for_the_boundary_kernel() {
        let mut i = inputs(Target::Cuda);
        i.slab = Some(SlabShape { axis: 0, owned: 8 });
        i.boundary = BoundaryLane::After;
        i.ib = Some(IbShape {
            samples: true,
            pushes: false,
            passes: 1,
            bins: false,
            gather: false,
        });
        let plan = FluidPlan::new(&i);
        assert_eq!(
            plan.names(),
            [
                "ib_clear",
                "ib_mark",
                "ib_velocity",
                "ib_band_halo",
                "ib_force",
                "ib_update",
                "boundary",
                "fork",
                "halo_send",
                "stream_collide",
                "halo_receive",
                "halo"
            ]
        );
        assert_eq!(plan.stages[9].stage, FluidStage::StreamCollide(Layers::ALL));
    }

    #[test]
    fn cpu_ranks_exchange_after_the_update_in_order() {
        let mut i = inputs(Target::Cpu);
        i.slab = Some(SlabShape { axis: 1, owned: 4 });
        let plan = FluidPlan::new(&i);
        assert_eq!(
            plan.names(),
            [
                "stream_collide",
                "fork",
                "halo_send",
                "halo_receive",
                "halo"
            ]
        );
        assert_eq!(timed(&plan), ["stream_collide", "halo"]);
    }

    #[test]
    fn pushes_join_the_band_after_the_samples_or_alone() {
        let mut i = inputs(Target::Cpu);
        let shape = |samples, pushes| IbShape {
            samples,
            pushes,
            passes: 1,
            bins: false,
            gather: false,
        };
        i.ib = Some(shape(false, true));
        assert_eq!(
            FluidPlan::new(&i).names(),
            ["ib_clear", "push_mark", "push_spread", "stream_collide"]
        );
        i.ib = Some(shape(true, true));
        assert_eq!(
            FluidPlan::new(&i).names(),
            [
                "ib_clear",
                "ib_mark",
                "push_mark",
                "ib_velocity",
                "ib_force",
                "ib_update",
                "push_spread",
                "stream_collide"
            ]
        );
    }

    #[test]
    fn cut_links_are_filled_before_anything_reads_the_populations() {
        for target in [Target::Cpu, Target::Cuda] {
            let mut i = inputs(target);
            i.walls = true;
            i.ib = Some(IbShape {
                samples: true,
                pushes: false,
                passes: 1,
                bins: false,
                gather: false,
            });
            let plan = FluidPlan::new(&i);
            assert_eq!(plan.names()[0], "wall_links");
            assert_eq!(timed(&plan)[0], "wall_links");
            assert_eq!(
                plan.names().iter().filter(|n| **n == "wall_links").count(),
                1
            );
        }
    }

    #[test]
    fn every_timed_name_is_listed() {
        let all: Vec<&str> = FluidStage::TIMED.iter().map(|s| s.name()).collect();
        for target in [Target::Cpu, Target::Cuda] {
            for slab in [None, Some(SlabShape { axis: 2, owned: 4 })] {
                for boundary in [
                    BoundaryLane::None,
                    BoundaryLane::After,
                    BoundaryLane::SideAfter,
                    BoundaryLane::SideFirst { parts: 2 },
                ] {
                    for (bins, gather) in [(false, false), (true, false), (true, true)] {
                        let plan = FluidPlan::new(&PlanInputs {
                            target,
                            ib: Some(IbShape {
                                samples: true,
                                pushes: bins,
                                passes: 2,
                                bins,
                                gather,
                            }),
                            slab,
                            boundary,
                            sponge: true,
                            walls: true,
                        });
                        for name in timed(&plan) {
                            assert!(all.contains(&name), "{name} is not in FluidStage::TIMED");
                        }
                    }
                }
            }
        }
    }
}
