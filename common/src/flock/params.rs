//! The rule parameters of one flock (CIS 565 names and defaults).

/// Rule distances and weights, speed limit, domain half-width and time step.
///
/// Lengths are in scene units (boids live in `[-scale, scale]^3`), `dt` in simulation time units,
/// velocities in scene units per time unit. `#[repr(C)]`: passed by value to the kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct FlockParams {
    /// Cohesion radius: boids closer than this pull the boid toward their mean position.
    pub rule1_distance: f32,
    /// Separation radius: boids closer than this push the boid away.
    pub rule2_distance: f32,
    /// Alignment radius: boids closer than this contribute their velocity.
    pub rule3_distance: f32,
    /// Cohesion weight (per step).
    pub rule1_scale: f32,
    /// Separation weight (per step, applied to the unaveraged sum).
    pub rule2_scale: f32,
    /// Alignment weight (per step, applied to the neighbours' mean velocity).
    pub rule3_scale: f32,
    /// Speed limit: longer velocities are rescaled to this length.
    pub max_speed: f32,
    /// Half-width of the cubic domain `[-scale, scale]^3`.
    pub scale: f32,
    /// Time step: `pos += vel * dt`.
    pub dt: f32,
}

impl FlockParams {
    /// The CIS 565 starter-code defaults.
    pub const CIS565: FlockParams = FlockParams {
        rule1_distance: 5.0,
        rule2_distance: 3.0,
        rule3_distance: 5.0,
        rule1_scale: 0.01,
        rule2_scale: 0.1,
        rule3_scale: 0.1,
        max_speed: 1.0,
        scale: 100.0,
        dt: 0.2,
    };

    /// Names of the fields, in declaration order (for `--set key=value` and error messages).
    pub const NAMES: [&'static str; 9] = [
        "rule1_distance",
        "rule2_distance",
        "rule3_distance",
        "rule1_scale",
        "rule2_scale",
        "rule3_scale",
        "max_speed",
        "scale",
        "dt",
    ];

    /// True when cohesion and alignment share their radius and separation's is no larger (the
    /// CIS 565 defaults): one distance test then decides all three rules.
    #[inline(always)]
    pub fn radii_nested(&self) -> bool {
        self.rule1_distance == self.rule3_distance && self.rule2_distance <= self.rule1_distance
    }

    /// The largest of the three rule radii: the neighbour search radius.
    #[inline(always)]
    pub fn max_distance(&self) -> f32 {
        let m = if self.rule1_distance > self.rule2_distance {
            self.rule1_distance
        } else {
            self.rule2_distance
        };
        if m > self.rule3_distance {
            m
        } else {
            self.rule3_distance
        }
    }

    /// Mutable access to a field by its name, `None` for an unknown name.
    pub fn field_mut(&mut self, name: &str) -> Option<&mut f32> {
        Some(match name {
            "rule1_distance" => &mut self.rule1_distance,
            "rule2_distance" => &mut self.rule2_distance,
            "rule3_distance" => &mut self.rule3_distance,
            "rule1_scale" => &mut self.rule1_scale,
            "rule2_scale" => &mut self.rule2_scale,
            "rule3_scale" => &mut self.rule3_scale,
            "max_speed" => &mut self.max_speed,
            "scale" => &mut self.scale,
            "dt" => &mut self.dt,
            _ => return None,
        })
    }
}

impl Default for FlockParams {
    fn default() -> Self {
        FlockParams::CIS565
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_cis565() {
        let p = FlockParams::default();
        assert_eq!(p.max_distance(), 5.0);
        assert_eq!(p.scale, 100.0);
        assert_eq!(p.dt, 0.2);
    }

    #[test]
    fn every_name_is_a_field() {
        let mut p = FlockParams::default();
        for (i, n) in FlockParams::NAMES.iter().enumerate() {
            *p.field_mut(n).unwrap() = 1000.0 + i as f32;
        }
        assert_eq!(p.rule1_distance, 1000.0);
        assert_eq!(p.dt, 1008.0);
        assert!(p.field_mut("rule4_scale").is_none());
    }
}
