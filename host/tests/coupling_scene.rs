//! A scene's `[[flocks]]` under `fluid run` on the CPU, through the binary: the flock's files
//! beside the fields (a snapshot that reads back, in the domain, and a `.vtp`), the same bytes
//! from a second run, a flock riding through the outlet back in at the inlet, and one-line
//! refusals of bad flocks and of what does not hold flocks yet; the flock on two CPU ranks.

mod support;

use ndarray::{Array1, Array2};
use std::path::Path;
use support::{assert_one_line_failure, murmur_text as murmur};

/// A 0.24 x 0.12 x 0.12 m channel (24 x 12 x 12 cells) with a sphere, an inlet and an outlet,
/// and `flock` as its `[[flocks]]` table.
fn scene(flock: &str) -> String {
    format!(
        r##"name = "flock-test"
collision = "acm-mrt"

[physical]
length = 0.04
velocity = 1.0
viscosity = 4e-3
density = 1.0

[lattice]
resolution = 4
velocity = 0.05

[domain]
size = [0.24, 0.12, 0.12]

[faces]
x_min = {{ type = "inlet", ramp = 0.01 }}
x_max = {{ type = "outlet" }}
y_min = {{ type = "free-slip" }}
y_max = {{ type = "free-slip" }}
z_min = {{ type = "free-slip" }}
z_max = {{ type = "free-slip" }}

[[solids]]
name = "sphere"
shape = {{ type = "sphere", radius = 0.02 }}
position = [0.1, 0.06, 0.06]

[[flocks]]
{flock}
"##
    )
}

const FLOCK: &str = r##"count = 400
spawn = { box = { lo = [0.01, 0.03, 0.03], hi = [0.06, 0.09, 0.09] } }
seed = 5
rates = [2.0, 40.0, 8.0]
radii = [0.02, 0.01, 0.02]
max_speed = 0.3
tau_p = 0.002
avoid = 0.02
avoid_rate = 60.0
substeps = 2"##;

fn write_scene(dir: &Path, name: &str, flock: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, scene(flock)).unwrap();
    p.to_str().unwrap().to_string()
}

fn read(path: &Path) -> (Array2<f32>, Array2<f32>, Array1<u32>) {
    let mut npz = ndarray_npy::NpzReader::new(std::fs::File::open(path).unwrap()).unwrap();
    (
        npz.by_name("pos").unwrap(),
        npz.by_name("vel").unwrap(),
        npz.by_name("id").unwrap(),
    )
}

#[test]
fn fluid_run_rides_a_scenes_flock_and_writes_its_files() {
    let dir = support::tmp("coupling-scene", "");
    let path = write_scene(&dir, "flock.toml", FLOCK);
    let run = |out: &str| {
        let out = dir.join(out);
        let o = out.to_str().unwrap();
        let args = ["fluid", "run", &path, "--backend", "cpu", "--steps", "60"];
        let (ok, stdout, stderr) = murmur(&[&args[..], &["--out", o, "--quiet"]].concat());
        assert!(ok, "{stdout}{stderr}");
        (out, stdout)
    };
    let (a, stdout) = run("a");
    assert!(
        stdout.contains("flock boids: 400 boids, 2 substep(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("flocks: 400 boids in 1 flock(s)"),
        "{stdout}"
    );
    let npz = a.join("flock-test_0000060_boids.npz");
    let vtp = a.join("flock-test_0000060_boids.vtp");
    assert!(vtp.exists() && npz.exists(), "{stdout}");
    let (pos, vel, id) = read(&npz);
    assert_eq!(pos.dim(), (400, 3));
    assert_eq!(id.to_vec(), (0..400).collect::<Vec<u32>>(), "ordered by id");
    // In the domain (m), outside the sphere, and carried downstream by the air.
    let extent = [0.24f32, 0.12, 0.12];
    for row in pos.rows() {
        assert!((0..3).all(|a| (0.0..=extent[a]).contains(&row[a])), "{row}");
        let d = ((row[0] - 0.1).powi(2) + (row[1] - 0.06).powi(2) + (row[2] - 0.06).powi(2)).sqrt();
        assert!(
            d >= 0.02 * 0.999,
            "a boid inside the sphere at {row} ({d} m)"
        );
    }
    let mean_u = vel.column(0).mean().unwrap();
    assert!(mean_u > 0.05, "the flock drifts downstream at {mean_u} m/s");
    let text = std::fs::read(&vtp).unwrap();
    let head = String::from_utf8_lossy(&text[..text.len().min(2000)]);
    assert!(head.contains("NumberOfPoints=\"400\"") && head.contains("Name=\"relative_velocity\""));
    // The same run, the same bytes.
    let (b, _) = run("b");
    let again = std::fs::read(b.join("flock-test_0000060_boids.npz")).unwrap();
    assert_eq!(std::fs::read(&npz).unwrap(), again, "two runs differ");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fluid_run_on_two_cpu_ranks_writes_the_flock_of_one_lattice() {
    let dir = support::tmp("coupling-ranks", "");
    let path = write_scene(&dir, "flock.toml", FLOCK);
    let run = |out: &str, extra: &[&str]| {
        let out = dir.join(out);
        let o = out.to_str().unwrap();
        let args = ["fluid", "run", &path, "--backend", "cpu", "--steps", "60"];
        let (ok, stdout, stderr) = murmur(&[&args[..], extra, &["--out", o, "--quiet"]].concat());
        assert!(ok, "{stdout}{stderr}");
        (out.join("flock-test_0000060_boids.npz"), stdout)
    };
    let (one, _) = run("one", &[]);
    let (two, stdout) = run("two", &["--ranks", "2"]);
    assert!(stdout.contains("flocks: on 2 ranks"), "{stdout}");
    let (p1, v1, id1) = read(&one);
    let (p2, v2, id2) = read(&two);
    // Every rank's boids, gathered in id order by rank 0.
    assert_eq!(id2.to_vec(), (0..400).collect::<Vec<u32>>());
    assert_eq!(id1, id2);
    // As on one lattice up to the order of the rules' sums: 1e-4 cells (1e-6 m here).
    let most = |a: &Array2<f32>, b: &Array2<f32>| {
        a.iter()
            .zip(b.iter())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max)
    };
    assert!(
        most(&p1, &p2) <= 1e-6,
        "positions differ by {} m",
        most(&p1, &p2)
    );
    assert!(
        most(&v1, &v2) <= 1e-4,
        "velocities differ by {} m/s",
        most(&v1, &v2)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_resumed_from_a_checkpoint_goes_on_with_its_boids_bit_for_bit() {
    resumes_bit_for_bit("coupling-resume", FLOCK, &[]);
}

#[test]
fn a_two_way_run_on_two_cpu_ranks_resumes_bit_for_bit() {
    let two_way = format!("{FLOCK}\nmass = 1e-7\ncoupling = \"two-way\"");
    resumes_bit_for_bit("coupling-ranks-resume", &two_way, &["--ranks", "2"]);
}

/// `flock` run 40 steps, and 20 steps with a checkpoint then resumed to 40 (with `world`'s
/// options): the same boids at step 40, byte for byte.
fn resumes_bit_for_bit(tag: &str, flock: &str, world: &[&str]) {
    let dir = support::tmp(tag, "");
    let path = write_scene(&dir, "flock.toml", flock);
    let go = |extra: &[&str]| {
        let args = ["fluid", "run", &path, "--backend", "cpu", "--quiet"];
        let extra = [extra, world].concat();
        let extra = &extra[..];
        let (ok, stdout, stderr) = murmur(&[&args[..], extra].concat());
        assert!(ok, "{extra:?}: {stdout}{stderr}");
        stdout
    };
    let (whole, first, ck) = (dir.join("whole"), dir.join("first"), dir.join("ck"));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    go(&["--steps", "40", "--out", &s(&whole)]);
    go(&[
        "--steps",
        "20",
        "--out",
        &s(&first),
        "--checkpoint-every",
        "20",
        "--checkpoint-dir",
        &s(&ck),
    ]);
    let resumed = dir.join("resumed");
    let stdout = go(&["--steps", "40", "--out", &s(&resumed), "--resume", &s(&ck)]);
    assert!(stdout.contains("resumed from step 20"), "{stdout}");
    let name = "flock-test_0000040_boids.npz";
    let a = std::fs::read(whole.join(name)).unwrap();
    assert_eq!(
        a,
        std::fs::read(resumed.join(name)).unwrap(),
        "the boids differ"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_two_way_flock_pushes_the_air_and_resumes_bit_for_bit() {
    let dir = support::tmp("coupling-two-way", "");
    // A tenth of a cell's air per boid: a mass loading of about 0.2 where they start.
    let two_way = format!("{FLOCK}\nmass = 1e-7\ncoupling = \"two-way\"");
    let path = write_scene(&dir, "two-way.toml", &two_way);
    let one = write_scene(&dir, "one-way.toml", FLOCK);
    let go = |scene: &str, extra: &[&str]| {
        let args = ["fluid", "run", scene, "--backend", "cpu", "--quiet"];
        let (ok, stdout, stderr) = murmur(&[&args[..], extra].concat());
        assert!(ok, "{extra:?}: {stdout}{stderr}");
        stdout
    };
    let (whole, first, ck) = (dir.join("whole"), dir.join("first"), dir.join("ck"));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    go(&path, &["--steps", "40", "--out", &s(&whole)]);
    go(
        &path,
        &[
            "--steps",
            "20",
            "--out",
            &s(&first),
            "--checkpoint-every",
            "20",
            "--checkpoint-dir",
            &s(&ck),
        ],
    );
    let resumed = dir.join("resumed");
    go(
        &path,
        &["--steps", "40", "--out", &s(&resumed), "--resume", &s(&ck)],
    );
    for name in ["flock-test_0000040_boids.npz", "flock-test_0000040.npz"] {
        let same =
            std::fs::read(whole.join(name)).unwrap() == std::fs::read(resumed.join(name)).unwrap();
        assert!(same, "{name} differs after the resume");
    }
    // The boids push the air: the fluid differs from the one-way run's.
    let oneway = dir.join("one");
    go(&one, &["--steps", "40", "--out", &s(&oneway)]);
    let fields = "flock-test_0000040.npz";
    let same =
        std::fs::read(whole.join(fields)).unwrap() == std::fs::read(oneway.join(fields)).unwrap();
    assert!(!same, "two-way left the fluid as one-way does");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flock_leaving_through_the_outlet_comes_back_in_at_the_inlet() {
    let dir = support::tmp("coupling-through", "");
    // Tracers (no rules to speak of, no inertia) started next to the outlet.
    let tracers = r##"count = 50
spawn = { box = { lo = [0.22, 0.02, 0.02], hi = [0.235, 0.04, 0.04] } }
rates = [0.0, 0.0, 0.0]
radii = [0.005, 0.005, 0.005]
max_speed = 0.1"##;
    let path = write_scene(&dir, "through.toml", tracers);
    let out = dir.join("out.npz");
    let (ok, stdout, stderr) = murmur(&[
        "fluid",
        "run",
        &path,
        "--backend",
        "cpu",
        "--steps",
        "80",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(ok, "{stdout}{stderr}");
    let (pos, _, _) = read(&dir.join("out_boids.npz"));
    let back = pos.column(0).iter().filter(|&&x| x < 0.05).count();
    assert!(back > 0, "no boid came back in at the inlet: {pos}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flocks_and_what_does_not_hold_them_yet_are_refused_in_one_line() {
    let dir = support::tmp("coupling-refusals", "");
    let run = |name: &str, flock: &str, extra: &[&str], expect: &str| {
        let path = write_scene(&dir, name, flock);
        let args = ["fluid", "run", &path, "--backend", "cpu", "--steps", "2"];
        assert_one_line_failure(&[&args[..], extra].concat(), expect);
    };
    run(
        "typo.toml",
        &format!("{FLOCK}\nspeed = 1.0"),
        &[],
        "unknown field `speed`",
    );
    run(
        "typo-line.toml",
        &format!("{FLOCK}\nspeed = 1.0"),
        &[],
        "line 41",
    );
    run(
        "negative.toml",
        &FLOCK.replace("tau_p = 0.002", "tau_p = -1.0"),
        &[],
        "flock 0: tau_p must be",
    );
    run(
        "outside.toml",
        &FLOCK.replace("hi = [0.06, 0.09, 0.09]", "hi = [0.06, 0.09, 0.5]"),
        &[],
        "reaches outside the domain",
    );
    let inside = FLOCK.replace(
        "spawn = { box = { lo = [0.01, 0.03, 0.03], hi = [0.06, 0.09, 0.09] } }",
        "spawn = { sphere = { center = [0.1, 0.06, 0.06], radius = 0.01 } }",
    );
    run("inside.toml", &inside, &[], "inside a solid");
    let tracers = FLOCK.replace("tau_p = 0.002", "tau_p = 0.0");
    let two_way = format!("{tracers}\nmass = 1e-6\ncoupling = \"two-way\"");
    run(
        "two-way.toml",
        &two_way,
        &[],
        "two-way coupling needs tau_p > 0",
    );
    let heavy = format!("{FLOCK}\nmass = 1.0\ncoupling = \"two-way\"");
    run("heavy.toml", &heavy, &[], "unstable");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fluid_render_draws_the_flock_in_its_colour() {
    let dir = support::tmp("coupling-render", "");
    let flock = format!("{FLOCK}\ncolour = \"#ff00ff\"");
    let path = write_scene(&dir, "flock.toml", &flock);
    let out = dir.join("frames");
    let (ok, stdout, stderr) = murmur(&[
        "fluid",
        "render",
        &path,
        "--backend",
        "cpu",
        "--frames",
        "1",
        "--width",
        "240",
        "--height",
        "120",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("flock boids: 400 boids"), "{stdout}");
    let frame = image::open(out.join("frame_00000.png")).unwrap().to_rgba8();
    // Magenta (dimmed with depth at most): no field colour map has it.
    let magenta = frame
        .pixels()
        .filter(|p| p[0] > 100 && p[2] > 100 && p[1] < 40 && p[0].abs_diff(p[2]) < 30)
        .count();
    assert!(magenta > 100, "{magenta} boid pixels");
    std::fs::remove_dir_all(&dir).unwrap();
}
