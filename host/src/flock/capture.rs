//! A flock backend's exact internal state ([`FlockCapture`]), in memory: what a checkpoint of the
//! flock holds. A backend restored from a capture steps on bit for bit where its runs are
//! reproducible (the CPU backend; CUDA with the radix sort): run N + M steps equals run N,
//! capture, restore on a new backend, run M.
//!
//! [`FlockBackend::state`](super::FlockBackend::state) gives the boids by id, and a state set
//! from it steps on with the neighbour sums added in another order (they follow the boids' order
//! in memory), so its bits differ by rounding; a capture keeps the internal order.

use super::{FlockSettings, FlockState, SimError, WithinCell};

/// Everything a flock backend's next step reads besides its settings.
///
/// Not in it, because the next step derives it exactly: the cell table and sorted pairs (rebuilt
/// every step), and the CUDA counting sort's per-cell counts (`count_cells` recounts them after
/// a restore: integer counts of the same positions on the same grid). No random state: the
/// flock draws random numbers only for its start (a hash of the seed and the index).
#[derive(Clone, Debug, PartialEq)]
pub struct FlockCapture {
    /// Positions, velocities and ids in the backend's internal order (not by id); scene units.
    pub state: FlockState,
    /// Which buffer of each double-buffered pair held the state (0 or 1; 0 on the CPU). The
    /// bits do not depend on it; a restore puts the state back there.
    pub buffer: u8,
    /// The order inside a cell after binning.
    pub within: WithinCell,
    /// The settings the flock was stepped with: a restore refuses other rules or another grid.
    pub settings: FlockSettings,
}

impl FlockCapture {
    /// Checks the capture before a restore: `pos`, `vel` and `id` of one length (>= 1), ids a
    /// permutation of `0..n`, a buffer index of 0 or 1, and `settings` (the restoring backend's)
    /// equal to the captured ones in what a step computes with: the rules, the method and the
    /// grid (cell width, x-split, cell order). The first field that differs is named.
    pub fn check(&self, settings: &FlockSettings) -> Result<(), SimError> {
        let s = &self.state;
        let n = s.pos.len();
        if n == 0 || s.vel.len() != n || s.id.len() != n {
            return Err(SimError::Invalid(format!(
                "the captured flock has {} positions, {} velocities and {} ids (one each per \
                 boid, at least one)",
                n,
                s.vel.len(),
                s.id.len()
            )));
        }
        let mut seen = vec![false; n];
        for &i in &s.id {
            match seen.get_mut(i as usize) {
                Some(b) if !*b => *b = true,
                _ => {
                    return Err(SimError::Invalid(format!(
                        "the captured flock's ids are not a permutation of 0..{n} (id {i})"
                    )))
                }
            }
        }
        if self.buffer > 1 {
            return Err(SimError::Invalid(format!(
                "the captured flock's buffer index is {} (0 or 1)",
                self.buffer
            )));
        }
        match settings_differ(&self.settings, settings) {
            Some((field, there, here)) => Err(SimError::Invalid(format!(
                "the captured flock was stepped with {field} {there}, this one steps with {here}"
            ))),
            None => Ok(()),
        }
    }
}

/// The first setting a step computes with that differs between `a` and `b`: its name and both
/// values (floats compared by bits).
pub fn settings_differ(
    a: &FlockSettings,
    b: &FlockSettings,
) -> Option<(&'static str, String, String)> {
    let (p, q) = (&a.params, &b.params);
    let floats = [
        ("rule1_distance", p.rule1_distance, q.rule1_distance),
        ("rule2_distance", p.rule2_distance, q.rule2_distance),
        ("rule3_distance", p.rule3_distance, q.rule3_distance),
        ("rule1_scale", p.rule1_scale, q.rule1_scale),
        ("rule2_scale", p.rule2_scale, q.rule2_scale),
        ("rule3_scale", p.rule3_scale, q.rule3_scale),
        ("max_speed", p.max_speed, q.max_speed),
        ("scale", p.scale, q.scale),
        ("dt", p.dt, q.dt),
        (
            "cell width factor",
            a.cell_width_factor,
            b.cell_width_factor,
        ),
    ];
    if let Some((name, x, y)) = floats.iter().find(|(_, x, y)| x.to_bits() != y.to_bits()) {
        return Some((name, x.to_string(), y.to_string()));
    }
    if a.method != b.method {
        return Some(("method", a.method.name().into(), b.method.name().into()));
    }
    if a.x_split != b.x_split {
        return Some(("x-split", a.x_split.to_string(), b.x_split.to_string()));
    }
    if a.cell_order != b.cell_order {
        let name = |o| format!("{o:?}").to_lowercase();
        return Some(("cell order", name(a.cell_order), name(b.cell_order)));
    }
    None
}
