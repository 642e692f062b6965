//! A scene's identity in a checkpoint: its canonical text (the scene file as murmur read it,
//! command-line overrides applied, written back as TOML) and the SHA-256 of its physics and
//! geometry only: the same text without the tables that do not change the flow (`[run]`: run
//! length and output cadence; `[health]`; `[smoke]` and `[view]`: the viewer's) and without its
//! `name` and its `collision` model (a field of its own in the header, checked by name).

use crate::checkpoint::CheckpointReader;
use crate::fluid::scene::SceneFile;
use crate::fluid::FluidError;
use sha2::{Digest, Sha256};

/// The top-level keys left out of the physics hash.
const NOT_PHYSICS: [&str; 6] = ["name", "collision", "run", "health", "smoke", "view"];

/// A scene's canonical text and physics hash.
#[derive(Clone, Debug, PartialEq)]
pub struct Identity {
    /// The scene's name.
    pub name: String,
    /// The whole scene as TOML.
    pub text: String,
    /// SHA-256 (hex) of [`physics`] of it.
    pub hash: String,
    /// The physics table itself, to name the first key that differs.
    physics: toml::Table,
}

impl Identity {
    /// The identity of `file` (after its overrides).
    pub fn of(file: &SceneFile) -> Result<Identity, FluidError> {
        let text = toml::to_string(file)
            .map_err(|e| FluidError::Invalid(format!("the scene as TOML: {e}")))?;
        Identity::of_text(&file.name, &text)
    }

    /// The identity of a scene's canonical `text`.
    pub fn of_text(name: &str, text: &str) -> Result<Identity, FluidError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e| FluidError::Invalid(format!("a scene's canonical text: {e}")))?;
        let p = physics(table);
        let canonical = toml::to_string(&p)
            .map_err(|e| FluidError::Invalid(format!("the scene's physics as TOML: {e}")))?;
        Ok(Identity {
            name: name.into(),
            text: text.into(),
            hash: hex(&Sha256::digest(canonical.as_bytes())),
            physics: p,
        })
    }
}

/// The scene table without [`NOT_PHYSICS`].
fn physics(mut t: toml::Table) -> toml::Table {
    for k in NOT_PHYSICS {
        t.remove(k);
    }
    t
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuses `r` unless it was written for a scene of `want`'s physics: by hash, naming the first
/// key that differs (from the scene text the checkpoint holds).
pub(super) fn check(r: &CheckpointReader, want: &Identity) -> Result<(), FluidError> {
    let fields = &r.header().fields;
    let found = fields.get("scene_hash").and_then(|v| v.as_str());
    if found == Some(want.hash.as_str()) {
        return Ok(());
    }
    let path = r.path().display();
    let Some(found) = found else {
        return Err(FluidError::Invalid(format!(
            "checkpoint {path} has no scene_hash: it is not a fluid run's checkpoint"
        )));
    };
    let theirs = fields
        .get("scene")
        .and_then(|v| v.as_str())
        .and_then(|t| Identity::of_text("", t).ok());
    let key = theirs.and_then(|t| first_difference(&t.physics, &want.physics, ""));
    Err(FluidError::Invalid(match key {
        Some((k, a, b)) => format!(
            "checkpoint {path} was written for another scene: {k} is {a} there, {b} here \
             (scene hash {}, this run's {})",
            short(found),
            short(&want.hash)
        ),
        None => format!(
            "checkpoint {path} was written for another scene (scene hash {}, this run's {})",
            short(found),
            short(&want.hash)
        ),
    }))
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

/// The first dotted key whose values differ between `a` and `b`, with both values (`absent`
/// where one lacks it).
fn first_difference(
    a: &toml::Table,
    b: &toml::Table,
    prefix: &str,
) -> Option<(String, String, String)> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(toml::Value::Table(x)), Some(toml::Value::Table(y))) => {
                if let Some(d) = first_difference(x, y, &path) {
                    return Some(d);
                }
            }
            (x, y) => {
                let show = |v: Option<&toml::Value>| v.map_or("absent".into(), |v| v.to_string());
                return Some((path, show(x), show(y)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENE: &str =
        "name = \"a\"\n[physical]\nlength = 1.0\nviscosity = 1e-3\n[run]\nsteps = 10\n";

    #[test]
    fn run_length_and_name_leave_the_hash_alone_and_physics_does_not() {
        let a = Identity::of_text("a", SCENE).unwrap();
        let b = Identity::of_text(
            "b",
            &SCENE
                .replace("steps = 10", "steps = 99")
                .replace("\"a\"", "\"b\""),
        )
        .unwrap();
        assert_eq!(a.hash, b.hash);
        let c = Identity::of_text("a", &SCENE.replace("1e-3", "2e-3")).unwrap();
        assert_ne!(a.hash, c.hash);
        let d = first_difference(&a.physics, &c.physics, "").unwrap();
        assert_eq!(
            d,
            ("physical.viscosity".into(), "0.001".into(), "0.002".into())
        );
    }

    #[test]
    fn the_wale_constant_at_its_default_leaves_the_hash_as_before_the_model() {
        // The canonical text of a scene that names no WALE constant, or its default, is that of
        // the builds before the model: their checkpoints still resume.
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../assets/fluid/channel-180.toml"
        ))
        .unwrap();
        let hash = |t: &str| Identity::of(&SceneFile::parse(t).unwrap()).unwrap();
        let plain = hash(&text);
        assert!(!plain.text.contains("wale"), "{}", plain.text);
        let named = hash(&text.replace("[lattice]", "[lattice]\nwale = 0.5"));
        assert_eq!(plain.hash, named.hash);
        let other = hash(&text.replace("[lattice]", "[lattice]\nwale = 0.6"));
        assert_ne!(plain.hash, other.hash);
    }
}
