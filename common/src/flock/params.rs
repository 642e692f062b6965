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

    /// Names of the fields, in declaration order (for `--set key=value` and error messages):
    /// those of [`PARAMS`].
    pub const NAMES: [&'static str; PARAM_COUNT] = {
        let mut names = [""; PARAM_COUNT];
        let mut i = 0;
        while i < PARAM_COUNT {
            names[i] = PARAMS[i].name;
            i += 1;
        }
        names
    };

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
        let spec = PARAMS.iter().find(|p| p.name == name)?;
        Some((spec.field)(self))
    }

    /// The value of parameter `spec`.
    pub fn get(&self, spec: &ParamSpec) -> f32 {
        let mut copy = *self;
        *(spec.field)(&mut copy)
    }

    /// Checks every parameter against its [`ParamSpec`] bounds, and that some rule distance is
    /// positive (the neighbour search needs a radius).
    pub fn validate(&self) -> Result<(), InvalidParam> {
        for spec in &PARAMS {
            let value = self.get(spec);
            let problem = if !value.is_finite() {
                Some("must be finite")
            } else if value < 0.0 {
                Some("must not be negative")
            } else if spec.positive && value == 0.0 {
                Some("must be > 0")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(InvalidParam {
                    name: spec.name,
                    value,
                    problem,
                });
            }
        }
        if self.max_distance() <= 0.0 {
            return Err(InvalidParam {
                name: "rule1_distance, rule2_distance, rule3_distance",
                value: self.max_distance(),
                problem: "at least one rule distance must be > 0",
            });
        }
        Ok(())
    }
}

/// One rule parameter: its name (the field's, in TOML and `--set`), its bounds and the viewer's
/// slider range. Every list of parameters (names, validation, sliders) comes from [`PARAMS`].
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    /// Must be strictly positive (all parameters must be finite and not negative).
    pub positive: bool,
    /// The viewer's slider range.
    pub slider: (f32, f32),
    /// The field itself.
    pub field: fn(&mut FlockParams) -> &mut f32,
}

/// Number of rule parameters.
pub const PARAM_COUNT: usize = 9;

/// Every rule parameter, in declaration order.
pub const PARAMS: [ParamSpec; PARAM_COUNT] = [
    spec("rule1_distance", false, (0.0, 20.0), |p| {
        &mut p.rule1_distance
    }),
    spec("rule2_distance", false, (0.0, 20.0), |p| {
        &mut p.rule2_distance
    }),
    spec("rule3_distance", false, (0.0, 20.0), |p| {
        &mut p.rule3_distance
    }),
    spec("rule1_scale", false, (0.0, 0.1), |p| &mut p.rule1_scale),
    spec("rule2_scale", false, (0.0, 0.5), |p| &mut p.rule2_scale),
    spec("rule3_scale", false, (0.0, 0.5), |p| &mut p.rule3_scale),
    spec("max_speed", false, (0.05, 5.0), |p| &mut p.max_speed),
    spec("scale", true, (10.0, 500.0), |p| &mut p.scale),
    spec("dt", true, (0.01, 1.0), |p| &mut p.dt),
];

const fn spec(
    name: &'static str,
    positive: bool,
    slider: (f32, f32),
    field: fn(&mut FlockParams) -> &mut f32,
) -> ParamSpec {
    ParamSpec {
        name,
        positive,
        slider,
        field,
    }
}

/// A parameter outside its bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InvalidParam {
    pub name: &'static str,
    pub value: f32,
    pub problem: &'static str,
}

impl core::fmt::Display for InvalidParam {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.problem.starts_with("must") {
            write!(f, "{} {}, got {}", self.name, self.problem, self.value)
        } else {
            f.write_str(self.problem)
        }
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

    #[test]
    fn validation_follows_the_table() {
        assert_eq!(FlockParams::default().validate(), Ok(()));
        let p = FlockParams {
            dt: 0.0,
            ..FlockParams::default()
        };
        let e = p.validate().unwrap_err();
        assert_eq!((e.name, e.problem), ("dt", "must be > 0"));
        let p = FlockParams {
            rule2_scale: -1.0,
            ..FlockParams::default()
        };
        assert_eq!(p.validate().unwrap_err().name, "rule2_scale");
        let p = FlockParams {
            max_speed: f32::NAN,
            ..FlockParams::default()
        };
        assert_eq!(p.validate().unwrap_err().problem, "must be finite");
        let p = FlockParams {
            rule1_distance: 0.0,
            rule2_distance: 0.0,
            rule3_distance: 0.0,
            ..FlockParams::default()
        };
        assert!(p.validate().is_err());
        for spec in &PARAMS {
            assert!(spec.slider.0 < spec.slider.1, "{}", spec.name);
        }
    }
}
