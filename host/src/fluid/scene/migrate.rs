//! Scenes written for the first format: the keys it had that the current one lacks, each
//! refused with one line naming what replaced it (computed from the scene's own figures where
//! they are there), and the table of docs/fluid/scenes.md#migrating.

/// Where the docs' migration table is.
pub const MIGRATING: &str = "docs/fluid/scenes.md#migrating";

/// The line for a scene `text` that uses a key of the first format (`[flow]`), `None` when it
/// uses none (or is not TOML: the parser's own error says where).
pub fn old_format(text: &str) -> Option<String> {
    let scene: toml::Table = toml::from_str(text).ok()?;
    let flow = scene.get("flow")?;
    let line = line_of(text, "flow")
        .map(|l| format!(" (line {l})"))
        .unwrap_or_default();
    let get = |table: &str, key: &str| -> Option<f64> {
        let v = scene.get(table)?.get(key)?;
        v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
    };
    let flow_num = |key: &str| -> Option<f64> {
        let v = flow.get(key)?;
        v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
    };
    let n = get("lattice", "resolution").map(num);
    let n = n.as_deref().unwrap_or("N");
    let u = get("physical", "velocity");
    let l = get("physical", "length");
    let depth = flow_num("depth_cells").map_or("1".into(), num);
    let kind = flow.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let known = ["cavity", "taylor-green", "poiseuille", "obstacle"].contains(&kind);
    let instead = match kind {
        "cavity" => format!(
            "domain.cells = [{n}, {n}, {depth}], faces.y_max = {{ type = \"moving-wall\", \
             velocity = [{}, 0, 0] }} (the lid), faces.z_min and z_max periodic",
            u.map_or("U".into(), num)
        ),
        "taylor-green" => format!(
            "domain.cells = [{n}, {n}, {depth}], all six faces periodic, \
             initial.taylor_green = {{ amplitude = {} }}",
            u.map_or("U".into(), num)
        ),
        "poiseuille" => {
            let nu = get("physical", "viscosity");
            let g = match (nu, u, l) {
                (Some(nu), Some(u), Some(l)) => num(8.0 * nu * u / (l * l)),
                _ => "8 nu U / L^2".into(),
            };
            format!(
                "domain.cells = [1, {n}, 1], faces x_min, x_max, z_min, z_max periodic, \
                 body_force.acceleration = [{g}, 0, 0]"
            )
        }
        "obstacle" => {
            let times_l = |key: &str| match (flow_num(key), l) {
                (Some(k), Some(l)) => num(k * l),
                _ => format!("{key} L"),
            };
            let centre = match (flow.get("center").and_then(|c| c.as_array()), l) {
                (Some(c), Some(l)) if c.len() == 3 => {
                    let c: Vec<String> = c
                        .iter()
                        .map(|v| {
                            v.as_float()
                                .or_else(|| v.as_integer().map(|i| i as f64))
                                .map_or("?".into(), |x| num(x * l))
                        })
                        .collect();
                    format!("[{}]", c.join(", "))
                }
                _ => "center L".into(),
            };
            format!(
                "domain.size = [{}, {}, {}] (m), faces.x_min = {{ type = \"inlet\" }}, \
                 faces.x_max = {{ type = \"outlet\" }}, and a [[solids]] entry with \
                 shape = {{ type = \"sphere\", radius = {} }} at position = {centre} (m)",
                times_l("length"),
                times_l("width"),
                times_l("height"),
                l.map_or("L / 2".into(), |l| num(l / 2.0)),
            )
        }
        _ => "[domain] (the box), [faces] (each face's boundary), [initial], \
              [body_force] and [[solids]]"
            .into(),
    };
    let kind = if known {
        format!(": flow.kind = \"{kind}\" is now")
    } else {
        ": use".into()
    };
    Some(format!(
        "[flow]{line} is the first scene format's table; it was replaced by [domain] and \
         [faces]{kind} {instead} ([physical] and [lattice] stay as they are; see {MIGRATING})"
    ))
}

/// The line of the table or dotted key `key` at the top level of `text`.
fn line_of(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix('[')
                .map(|r| r.trim_start().starts_with(key))
                .unwrap_or(false)
                || l.strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with(['=', '.']))
        })
        .map(|i| i + 1)
}

/// A figure with at most six significant digits and no trailing zeros.
fn num(x: f64) -> String {
    if x != 0.0 && !(1e-3..1e6).contains(&x.abs()) {
        let s = format!("{x:.3e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::scene::SceneFile;

    /// The first format's cavity (as `assets/fluid/cavity-re100.toml` was written then).
    const OLD_CAVITY: &str = r#"name = "cavity-re100"
collision = "bgk"

[flow]
kind = "cavity"
depth_cells = 1

[physical]
length = 1.0
velocity = 1.0
viscosity = 0.01
density = 1000.0

[lattice]
resolution = 128
velocity = 0.1
"#;

    const OLD_POISEUILLE: &str = r#"name = "poiseuille"
[flow]
kind = "poiseuille"
[physical]
length = 0.01
velocity = 0.01
viscosity = 1e-6
[lattice]
resolution = 32
"#;

    const OLD_OBSTACLE: &str = r#"name = "obstacle"
[flow]
kind = "obstacle"
length = 8.0
width = 3.0
height = 3.0
center = [2.0, 1.5, 1.55]
[physical]
length = 0.1
velocity = 1.0
viscosity = 5e-4
[lattice]
resolution = 24
"#;

    fn shipped(name: &str) -> SceneFile {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../assets/fluid")
            .join(name);
        SceneFile::load(&path).unwrap()
    }

    #[test]
    fn an_old_cavity_is_told_what_replaced_flow() {
        let e = SceneFile::parse(OLD_CAVITY).unwrap_err();
        assert!(
            e.starts_with("[flow] (line 4) is the first scene format's table; it was replaced by [domain] and [faces]: flow.kind = \"cavity\" is now domain.cells = [128, 128, 1], faces.y_max = { type = \"moving-wall\", velocity = [1, 0, 0] }"),
            "{e}"
        );
        assert!(e.ends_with("see docs/fluid/scenes.md#migrating)"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        // What it names is what the shipped scene has.
        let now = shipped("cavity-re100.toml");
        assert_eq!(now.domain.cells, Some([128, 128, 1]));
        assert!(e.contains(&format!(
            "velocity = [{}, 0, 0]",
            num(now.physical.velocity)
        )));
    }

    #[test]
    fn the_replacements_carry_the_scenes_figures() {
        let e = old_format(OLD_POISEUILLE).unwrap();
        let now = shipped("poiseuille.toml");
        assert_eq!(now.domain.cells, Some([1, 32, 1]));
        let g = now.body_force.acceleration[0];
        assert!(
            e.contains(&format!("body_force.acceleration = [{}, 0, 0]", num(g))),
            "{e} (the shipped scene's {g})"
        );
        let e = old_format(OLD_OBSTACLE).unwrap();
        assert!(e.contains("domain.size = [0.8, 0.3, 0.3] (m)"), "{e}");
        assert!(
            e.contains("radius = 0.05 } at position = [0.2, 0.15, 0.155] (m)"),
            "{e}"
        );
        assert_eq!(shipped("obstacle.toml").domain.size, Some([0.8, 0.3, 0.3]));
    }

    #[test]
    fn other_scenes_are_left_to_the_parser() {
        assert_eq!(
            old_format("name = \"x\"\n[domain]\ncells = [4, 4, 4]\n"),
            None
        );
        assert_eq!(old_format("not toml ["), None);
        let e = old_format("name = \"x\"\nflow = { kind = \"jet\" }\n").unwrap();
        assert!(e.starts_with("[flow] (line 2) is the first"), "{e}");
        assert!(e.contains(": use [domain] (the box)"), "{e}");
        assert_eq!(num(8e-4), "8e-4");
        assert_eq!(num(0.15000000000000002), "0.15");
        assert_eq!(num(1e-9), "1e-9");
        assert_eq!(num(128.0), "128");
    }
}
