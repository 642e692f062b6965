//! How the samples' forces reach the band ([`IbSpread`]): scatter with atomics (per sample, or
//! per bin of samples sorted by their nodes), or a gather over samples binned per band cell or
//! per block of cells; the scene's `spread` and `block` keys.

use murmur_common::lbm::abi::Bins;
use murmur_common::lbm::Lattice;

/// How `ib_force`'s forces reach the band ([`murmur_common::lbm::ib::gather`],
/// [`murmur_common::lbm::ib::binned`]). All four give the same band force and solid forces bit
/// for bit (fixed-point sums of the same terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IbSpread {
    /// Each sample adds into its stencil's cells with atomic fixed-point adds.
    Scatter,
    /// Samples binned per band cell of their bin node (counting sort every step, as the
    /// gather's); one thread per bin looks its nodes up once and adds the summed terms of its
    /// samples with one atomic per node and component.
    Binned,
    /// Samples binned per band cell (counting sort every step); each band cell sums the
    /// samples of the 2 x 2 x 2 bins at and below it.
    Gather,
    /// Samples sorted by blocks of `l^3` cells (counting sort every step); `ib_force` runs
    /// over them in block order and each band cell sums the samples of its block and of the
    /// blocks below it that its support reaches.
    Blocks { l: u32 },
}

/// Block sides `ib-bench` times by default.
pub const BLOCK_SIDES: [u32; 3] = [2, 4, 8];
/// Largest block side a scene or the bench may set.
pub const MAX_BLOCK: u32 = 64;

impl Default for IbSpread {
    /// The method taken when a scene does not say: the fastest on the H200 by a wide margin
    /// (`murmur fluid ib-bench assets/fluid/torus-channel.toml`, docs/fluid/performance.md).
    fn default() -> Self {
        IbSpread::Scatter
    }
}

impl IbSpread {
    /// The name in scenes, tables and messages.
    pub fn name(&self) -> &'static str {
        match self {
            IbSpread::Scatter => "scatter",
            IbSpread::Binned => "binned",
            IbSpread::Gather => "gather",
            IbSpread::Blocks { .. } => "blocks",
        }
    }

    /// The method of a scene's `spread` name and `block` side, or a one-line error.
    pub fn parse(name: &str, block: Option<u32>) -> Result<IbSpread, String> {
        let l = block.unwrap_or(4);
        if !(1..=MAX_BLOCK).contains(&l) {
            return Err(format!(
                "the block side must be within 1..={MAX_BLOCK}, got {l}"
            ));
        }
        match name {
            "scatter" | "binned" | "gather" if block.is_some() => Err(format!(
                "a block side is only used with spread = \"blocks\", not \"{name}\""
            )),
            "scatter" => Ok(IbSpread::Scatter),
            "binned" => Ok(IbSpread::Binned),
            "gather" => Ok(IbSpread::Gather),
            "blocks" => Ok(IbSpread::Blocks { l }),
            _ => Err(format!(
                "unknown spread \"{name}\": expected \"scatter\", \"binned\", \"gather\" or \"blocks\""
            )),
        }
    }

    /// The bins of a binned or gather method on `lattice` with a band of `capacity` slots.
    pub fn bins(&self, lattice: Lattice, capacity: u32) -> Option<Bins> {
        match *self {
            IbSpread::Scatter => None,
            IbSpread::Binned | IbSpread::Gather => Some(Bins::cells(capacity)),
            IbSpread::Blocks { l } => Some(Bins::blocks(lattice, l)),
        }
    }

    /// Whether band cells sum the samples' forces (`ib_gather`) rather than the samples
    /// adding them (`ib_update` after each pass).
    pub fn gathers(&self) -> bool {
        matches!(self, IbSpread::Gather | IbSpread::Blocks { .. })
    }
}
