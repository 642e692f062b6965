//! The device defaults: the layout, thread blocks and spreading a run takes where neither a flag
//! nor the tuning cache (`fluid tune`) sets them, one row per device class (the CPU, or a GPU's
//! compute capability) in [`TABLE`], and [`UNMEASURED`] for a class without a row. Where each
//! row was measured: docs/fluid/tuning.md (device defaults).

use super::driver::BackendChoice;
use super::ib::spread::IbSpread;
use super::tuning::{spread_name, Knobs};
use super::Block;
use murmur_common::lbm::Layout;

/// Devices taken to share their fastest knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceClass {
    /// The CPU backend.
    Cpu,
    /// A CUDA GPU of compute capability `(major, minor)` (`None`: the driver did not say).
    Cuda(Option<(u32, u32)>),
}

impl DeviceClass {
    /// The class of the backend `choice` opens, told before opening it: the CPU for `cpu`, GPU
    /// 0's compute capability otherwise (`auto` without a driver or a GPU: the CPU).
    pub fn expected(choice: BackendChoice) -> DeviceClass {
        let cc = || crate::gpu::compute_capability(0).ok();
        match choice {
            BackendChoice::Cpu => DeviceClass::Cpu,
            BackendChoice::Cuda => DeviceClass::Cuda(cc()),
            BackendChoice::Auto => cc().map_or(DeviceClass::Cpu, |c| DeviceClass::Cuda(Some(c))),
        }
    }

    /// The class of an opened backend from its description (`cuda (NAME)` or `cpu (...)`).
    pub fn of(describe: &str) -> DeviceClass {
        if describe.starts_with("cuda") {
            DeviceClass::Cuda(crate::gpu::compute_capability(0).ok())
        } else {
            DeviceClass::Cpu
        }
    }
}

impl std::fmt::Display for DeviceClass {
    /// `cpu`, `sm_90`, or `a GPU of unknown compute capability`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceClass::Cpu => write!(f, "cpu"),
            DeviceClass::Cuda(Some((major, minor))) => write!(f, "sm_{major}{minor}"),
            DeviceClass::Cuda(None) => write!(f, "a GPU of unknown compute capability"),
        }
    }
}

/// One row of [`TABLE`]: a device class and its knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub class: DeviceClass,
    pub layout: Layout,
    pub block: Block,
    /// The spreading method (scenes with solids; a scene's `[immersed] spread` beats it).
    pub spread: IbSpread,
}

const fn csoa(alpha: u32) -> Layout {
    match Layout::csoa(alpha) {
        Some(l) => l,
        None => panic!("alpha must be a power of two"),
    }
}

/// The measured device classes, one row each (docs/fluid/tuning.md names the command and the
/// day behind each row).
pub const TABLE: [Row; 2] = [
    // One NVIDIA H200.
    Row {
        class: DeviceClass::Cuda(Some((9, 0))),
        layout: csoa(128),
        block: Block::Flat,
        spread: IbSpread::Scatter,
    },
    // The CPU backend (rayon).
    Row {
        class: DeviceClass::Cpu,
        layout: csoa(32),
        block: Block::Flat,
        spread: IbSpread::Scatter,
    },
];

/// The knobs of a device class without a row in [`TABLE`].
pub const UNMEASURED: Row = Row {
    class: DeviceClass::Cuda(None),
    layout: csoa(128),
    block: Block::Flat,
    spread: IbSpread::Scatter,
};

/// The device defaults of one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    pub class: DeviceClass,
    /// Whether [`TABLE`] has a row for the class (else the knobs are [`UNMEASURED`]'s).
    pub measured: bool,
    /// The knobs, the spreading always set.
    pub knobs: Knobs,
}

impl Defaults {
    /// The row of `class`, or [`UNMEASURED`].
    pub fn of(class: DeviceClass) -> Defaults {
        let row = TABLE.iter().find(|r| r.class == class);
        let r = row.unwrap_or(&UNMEASURED);
        Defaults {
            class,
            measured: row.is_some(),
            knobs: Knobs {
                layout: r.layout,
                block: r.block,
                spread: Some(r.spread),
            },
        }
    }

    /// `device defaults for sm_90` (`..., not measured` without a row).
    pub fn name(&self) -> String {
        let mut s = format!("device defaults for {}", self.class);
        if !self.measured {
            s += ", not measured";
        }
        s
    }
}

/// `csoa-128, flat, scatter`: the knobs' values (the spreading when given).
pub fn values(layout: Layout, block: Block, spread: Option<IbSpread>) -> String {
    let mut s = format!("{}, {block}", layout.describe());
    if let Some(sp) = spread {
        s += &format!(", {}", spread_name(sp));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_has_one_row_or_the_unmeasured_defaults() {
        for (i, r) in TABLE.iter().enumerate() {
            assert!(
                TABLE[..i].iter().all(|o| o.class != r.class),
                "{:?}",
                r.class
            );
            let d = Defaults::of(r.class);
            assert!(d.measured);
            assert_eq!(
                (d.knobs.layout, d.knobs.block, d.knobs.spread),
                (r.layout, r.block, Some(r.spread))
            );
        }
        let h200 = Defaults::of(DeviceClass::Cuda(Some((9, 0))));
        assert_eq!(h200.name(), "device defaults for sm_90");
        assert_eq!(
            values(h200.knobs.layout, h200.knobs.block, h200.knobs.spread),
            "csoa-128, flat, scatter"
        );
        for class in [DeviceClass::Cuda(Some((7, 5))), DeviceClass::Cuda(None)] {
            let d = Defaults::of(class);
            assert!(!d.measured && d.name().ends_with(", not measured"));
            assert_eq!(
                (d.knobs.layout, d.knobs.block),
                (Layout::csoa(128).unwrap(), Block::Flat)
            );
        }
        assert_eq!(DeviceClass::Cuda(Some((12, 0))).to_string(), "sm_120");
        assert_eq!(DeviceClass::expected(BackendChoice::Cpu), DeviceClass::Cpu);
        assert_eq!(DeviceClass::of("cpu (rayon, 2 threads)"), DeviceClass::Cpu);
    }
}
