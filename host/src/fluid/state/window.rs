//! The parts of a population buffer that hold a range of cells' populations, for a backend
//! whose buffer lives elsewhere (the GPU): copy these index ranges to the host, convert there
//! ([`super::gather`], [`super::scatter`] with [`Window::at`]), copy them back.
//!
//! In the pull scheme a cell's populations lie in its own CSoA group (or, for the structure of
//! arrays, at its number in each of the 27 arrays). In place, `f*_q` of a positive direction
//! lies at the neighbour `x + c_q`; with periodic wrap that neighbour's number differs from
//! the cell's by less than `2 nx ny` modulo the cell count, so the cells
//! `start - 2 nx ny .. end + 2 nx ny` (modulo the count) hold every slot of `start..end`.

use murmur_common::lbm::{Populations, Storage, Q};
use std::ops::Range;

/// Index ranges of a population buffer, sorted and disjoint, and where each starts in a host
/// copy holding them one after the other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// `(buffer indices, offset in the host copy)`.
    pub ranges: Vec<(Range<usize>, usize)>,
    /// Values the host copy holds.
    pub len: usize,
}

impl Window {
    /// The buffer ranges holding every slot of `cells` in `pops`.
    pub fn of<S: Storage>(pops: &Populations<S>, cells: Range<usize>) -> Window {
        let n = pops.lattice.cells();
        let mut spans: Vec<Range<usize>> = Vec::new();
        if !cells.is_empty() {
            let reach = if S::IN_PLACE {
                2 * pops.lattice.nx as usize * pops.lattice.ny as usize
            } else {
                0
            };
            if cells.len() + 2 * reach >= n {
                spans.push(0..n);
            } else {
                // A cyclic range of cells: at most two plain ones.
                let lo = (cells.start + n - reach) % n;
                let hi = (cells.end + reach) % n;
                if lo < hi {
                    spans.push(lo..hi);
                } else {
                    spans.push(lo..n);
                    if hi > 0 {
                        spans.push(0..hi);
                    }
                }
            }
        }
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for span in spans {
            if pops.lo == u32::MAX {
                // The structure of arrays: the span in each direction's array.
                ranges.extend((0..Q).map(|q| q * n + span.start..q * n + span.end));
            } else {
                let alpha = pops.stride as usize;
                let (g0, g1) = (span.start / alpha, span.end.div_ceil(alpha));
                ranges.push(g0 * Q * alpha..g1 * Q * alpha);
            }
        }
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<usize>> = Vec::new();
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        let mut len = 0;
        let ranges = merged
            .into_iter()
            .map(|r| {
                let at = len;
                len += r.len();
                (r, at)
            })
            .collect();
        Window { ranges, len }
    }

    /// Where buffer index `i` lies in the host copy (`None` outside the window).
    pub fn at(&self, i: usize) -> Option<usize> {
        let k = self.ranges.partition_point(|(r, _)| r.end <= i);
        let (r, at) = self.ranges.get(k)?;
        r.contains(&i).then(|| at + (i - r.start))
    }
}
