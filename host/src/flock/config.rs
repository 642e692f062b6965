//! Typed flock configuration: `assets/flock/*.toml`, overridden by CLI flags and `--set key=value`.
//! Validation lives here, so every entry point (CLI, viewer, tests) rejects the same bad input.

use super::{CellOrder, FlockSettings, Method, SortArg};
use murmur_common::flock::{grid::MORTON_MAX_DIMS, FlockParams};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Largest grid (cells per axis) for linear keys: `dims^3` must fit the key type with room.
pub const LINEAR_MAX_DIMS: u32 = 1290;

/// Largest `x_split`.
pub const MAX_X_SPLIT: u32 = 16;

/// A flock configuration file: `[params]` (rules) and `[sim]` (method, grid, size).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlockConfig {
    pub params: FlockParams,
    pub sim: SimConfig,
}

/// Simulation settings of a configuration file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    pub n: u64,
    pub seed: u64,
    pub method: Method,
    pub cell_width_factor: f32,
    pub x_split: u32,
    pub block_size: u32,
    pub cell_order: CellOrder,
    pub sort: SortArg,
    pub cuda_graph: bool,
    pub pdl: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            n: 100_000,
            seed: 1,
            method: Method::Coherent,
            cell_width_factor: 1.0,
            x_split: 4,
            block_size: 256,
            cell_order: CellOrder::Linear,
            sort: SortArg::Counting,
            cuda_graph: true,
            pdl: true,
        }
    }
}

/// Bad configuration or input, with a message fit for one line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Parse { path: String, message: String },
    #[error("unknown parameter {0:?}; known: {known}", known = FlockParams::NAMES.join(", "))]
    UnknownParam(String),
    #[error("--set expects key=value, got {0:?}")]
    SetSyntax(String),
    #[error("{name} must be a number, got {value:?}")]
    NotANumber { name: String, value: String },
    #[error("{0}")]
    Invalid(String),
}

impl FlockConfig {
    /// Reads a TOML file (unknown keys are errors).
    pub fn load(path: &Path) -> Result<FlockConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.message().to_string(),
        })
    }

    /// Whether the file at `path` sets `sim.cell_width_factor` or `sim.x_split` (when it sets
    /// neither, runs pick the grid from the density).
    pub fn sets_grid(path: &Path) -> Result<bool, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.message().to_string(),
        })?;
        Ok(table
            .get("sim")
            .and_then(|s| s.as_table())
            .is_some_and(|s| s.contains_key("cell_width_factor") || s.contains_key("x_split")))
    }

    /// Applies one `key=value` to the rule parameters.
    pub fn set(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| ConfigError::SetSyntax(assignment.to_string()))?;
        let (key, value) = (key.trim(), value.trim());
        let field = self
            .params
            .field_mut(key)
            .ok_or_else(|| ConfigError::UnknownParam(key.to_string()))?;
        *field = value.parse().map_err(|_| ConfigError::NotANumber {
            name: key.to_string(),
            value: value.to_string(),
        })?;
        Ok(())
    }

    /// Checks everything and returns the settings a backend runs with.
    pub fn settings(&self) -> Result<FlockSettings, ConfigError> {
        self.settings_for(1)
    }

    /// [`FlockConfig::settings`] for a flock split across `ranks` ranks: each rank holds at
    /// most `u32::MAX / 2` boids, and ids stay below `u32::MAX` (the slabs' hole marker).
    pub fn settings_for(&self, ranks: usize) -> Result<FlockSettings, ConfigError> {
        validate_params(&self.params)?;
        let s = &self.sim;
        if s.n == 0 {
            return Err(ConfigError::Invalid(
                "the flock needs at least one boid (n = 0)".into(),
            ));
        }
        let most = if ranks <= 1 {
            u32::MAX as u64 / 2
        } else {
            (ranks as u64 * (u32::MAX as u64 / 2)).min(u32::MAX as u64 - 1)
        };
        if s.n > most {
            return Err(ConfigError::Invalid(format!(
                "n = {} is too large (at most {most}{})",
                s.n,
                if ranks > 1 {
                    format!(" on {ranks} ranks")
                } else {
                    String::new()
                }
            )));
        }
        let f = s.cell_width_factor;
        if !(f.is_finite() && f > 0.0) {
            return Err(ConfigError::Invalid(format!(
                "cell-width-factor must be a finite number > 0, got {f}"
            )));
        }
        if !(32..=1024).contains(&s.block_size) || !s.block_size.is_multiple_of(32) {
            return Err(ConfigError::Invalid(format!(
                "block-size must be a multiple of 32 from 32 to 1024, got {}",
                s.block_size
            )));
        }
        if !(1..=MAX_X_SPLIT).contains(&s.x_split) {
            return Err(ConfigError::Invalid(format!(
                "x-split must be a whole number from 1 to {MAX_X_SPLIT}, got {}",
                s.x_split
            )));
        }
        let width = f as f64 * self.params.max_distance() as f64;
        let scale = self.params.scale as f64;
        // Cells per axis along y and z (x has x_split times more), and the most the key type
        // allows at a given x-split.
        let dims = (2.0 * scale / width).ceil().max(1.0);
        let max_dims = |x_split: u32| -> f64 {
            match s.cell_order {
                // The keys' range, dims_x * dims^2, as for a cube of LINEAR_MAX_DIMS cells a side.
                CellOrder::Linear => {
                    (LINEAR_MAX_DIMS as f64 / (x_split as f64).cbrt() + 1e-9).floor()
                }
                CellOrder::Morton => (MORTON_MAX_DIMS / x_split) as f64,
            }
        };
        if dims > max_dims(s.x_split) {
            let limit = match s.cell_order {
                CellOrder::Linear => format!("{LINEAR_MAX_DIMS}^3 cells with linear keys"),
                CellOrder::Morton => {
                    format!("{MORTON_MAX_DIMS} cells per axis with Morton keys")
                }
            };
            let mut fixes = Vec::new();
            if s.x_split > 1 && dims <= max_dims(1) {
                fixes.push("a smaller --x-split".to_string());
            }
            let most = max_dims(s.x_split);
            fixes.push(format!("--scale {} or less", short(most * width / 2.0)));
            fixes.push(format!(
                "--cell-width-factor {} or more",
                short(2.0 * scale / (most * self.params.max_distance() as f64))
            ));
            return Err(ConfigError::Invalid(format!(
                "the grid at scale {} (cell width {}, x-split {}) would need {} x {} x {} cells, \
                 more than the {limit}: use {}",
                short(scale),
                short(width),
                s.x_split,
                short(dims * s.x_split as f64),
                short(dims),
                short(dims),
                fixes.join(" or ")
            )));
        }
        Ok(FlockSettings {
            params: self.params,
            method: s.method,
            cell_width_factor: f,
            x_split: s.x_split,
            block_size: s.block_size,
            cell_order: s.cell_order,
            sort: s.sort,
            cuda_graph: s.cuda_graph,
            pdl: s.pdl,
            gpu_timer: true,
        })
    }
}

/// A number for a message: plain below a million, else 3 significant digits (`1.60e30`).
fn short(x: f64) -> String {
    if x.abs() < 1e6 {
        let r = (x * 1e3).round() / 1e3;
        format!("{r}")
    } else {
        format!("{x:.2e}")
    }
}

/// Checks every rule parameter against its bounds in `murmur_common::flock::PARAMS`.
pub fn validate_params(p: &FlockParams) -> Result<(), ConfigError> {
    p.validate()
        .map_err(|e| ConfigError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_default_is_cis565() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/flock/default.toml");
        let c = FlockConfig::load(&path).unwrap();
        assert_eq!(c.params, FlockParams::CIS565);
        assert_eq!(c, FlockConfig::default());
    }

    #[test]
    fn set_and_errors() {
        let mut c = FlockConfig::default();
        c.set("rule1_scale=0.02").unwrap();
        assert_eq!(c.params.rule1_scale, 0.02);
        assert!(matches!(
            c.set("rule9=1"),
            Err(ConfigError::UnknownParam(_))
        ));
        assert!(matches!(c.set("dt"), Err(ConfigError::SetSyntax(_))));
        assert!(matches!(
            c.set("dt=fast"),
            Err(ConfigError::NotANumber { .. })
        ));
        c.set("rule2_distance=NaN").unwrap();
        assert!(c.settings().is_err());
        let mut c = FlockConfig::default();
        c.set("scale=-1").unwrap();
        assert!(c.settings().is_err());
        let mut c = FlockConfig::default();
        c.set("rule3_distance=inf").unwrap();
        assert!(c.settings().is_err());
        let mut c = FlockConfig::default();
        c.sim.cell_width_factor = 0.0;
        assert!(c.settings().is_err());
        c.sim.cell_width_factor = 0.001;
        assert!(c.settings().unwrap_err().to_string().contains("would need"));
        let mut c = FlockConfig::default();
        for bad in [0, MAX_X_SPLIT + 1] {
            c.sim.x_split = bad;
            assert!(c.settings().unwrap_err().to_string().contains("x-split"));
        }
        // 1000 cells a side fit linear keys; split 4 times along x they do not.
        c.params.scale = 2500.0;
        c.sim.x_split = 1;
        assert_eq!(c.settings().unwrap().grid().dims, 1000);
        c.sim.x_split = 4;
        assert!(c.settings().unwrap_err().to_string().contains("x-split 4"));
        let mut c = FlockConfig::default();
        c.sim.n = 0;
        assert!(c.settings().is_err());
    }
}
