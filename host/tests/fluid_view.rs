//! The fluid viewer's CPU rasteriser and smoke on known inputs: a slice of a linear field gives
//! the colour map's known gradient, a Gaussian blob of smoke in a uniform flow moves by `u t`
//! without spreading, the frames of CPU and CUDA agree byte for byte (where a GPU is present),
//! and the headless `murmur fluid render` command (its files, one-line errors).

#![allow(clippy::needless_range_loop)]

mod support;
use support::{assert_clean_failure, assert_one_line_failure, murmur};

use murmur::internals::fluid::scene::SceneFile;
use murmur::internals::fluid::SmokeSetup;
use murmur::internals::raster::fluid::{CpuFluidRaster, CpuSmoke, FrameInput};
use murmur::internals::view::fluid::Look;
use murmur_common::lbm::Lattice;
use murmur_common::render::fluid::{colour_map_rgba, FluidFrame, Quantity, ViewKind};
use murmur_common::render::smoke::SmokeParams;
use murmur_common::render::{Camera, BACKGROUND};
use murmur_common::Vec3;

const W: u32 = 96;
const H: u32 = 64;

/// Fields with density 1 and velocity `u(x, y, z)`.
fn fields_of(l: Lattice, u: impl Fn(u32, u32, u32) -> [f32; 3]) -> Vec<f32> {
    let n = l.cells();
    let mut f = vec![0.0; 4 * n];
    f[..n].fill(1.0);
    for c in 0..n {
        let (x, y, z) = l.coords(c);
        let v = u(x, y, z);
        for a in 0..3 {
            f[(a + 1) * n + c] = v[a];
        }
    }
    f
}

/// The camera on +z looking down -z at the lattice's centre (+x right, +y up).
fn front(l: Lattice, distance: f32) -> Camera {
    Camera {
        yaw: 0.0,
        pitch: 0.0,
        distance,
        target: Vec3::new(
            (l.nx - 1) as f32 / 2.0,
            (l.ny - 1) as f32 / 2.0,
            (l.nz - 1) as f32 / 2.0,
        ),
        fov_y: 0.7,
        width: W,
        height: H,
    }
}

fn slice_frame(l: Lattice, cam: &Camera, z: u32, lo: f32, hi: f32) -> FluidFrame {
    let look = Look {
        kind: ViewKind::Slice,
        quantity: Quantity::Ux,
        axis: 2,
        at: Some(z),
        range: Some((lo, hi)),
        ..Look::default()
    };
    look.frame(cam, l, (lo, hi), BACKGROUND)
}

#[test]
fn a_slice_of_a_linear_field_is_the_colour_maps_gradient() {
    // ux = a x on a 40 x 20 x 9 lattice, the slice z = 4 seen head-on: every pixel whose ray
    // meets the plane shows the colour of a x at the x where it meets it, computed here from
    // the pinhole geometry alone.
    let l = Lattice::new(40, 20, 9);
    let a = 0.002f32;
    let fields = fields_of(l, |x, _, _| [a * x as f32, 0.0, 0.0]);
    let flags = vec![0u8; l.cells()];
    let cam = front(l, 60.0);
    let (lo, hi) = (0.0, a * 39.0);
    let frame = slice_frame(l, &cam, 4, lo, hi);
    let mut rgba = vec![0u8; (W * H * 4) as usize];
    let input = FrameInput {
        fields: &fields,
        flags: &flags,
        smoke: &[],
        solids: &[],
        solid_radius: 0.5,
        points: murmur::internals::fluid::Points::NONE,
    };
    CpuFluidRaster::default()
        .draw(&frame, &input, &mut rgba)
        .unwrap();
    let focal = (H as f64 / 2.0) / (0.35f64).tan();
    let eye_z = 4.0 + 60.0;
    let depth = eye_z - 4.0;
    let (mut checked, mut inside) = (0, 0);
    let row = H / 2;
    let px = |x: u32| {
        let i = ((row * W + x) * 4) as usize;
        [rgba[i], rgba[i + 1], rgba[i + 2]]
    };
    for x in 0..W {
        let wx = 19.5 + (x as f64 + 0.5 - W as f64 / 2.0) / focal * depth;
        let got = px(x);
        if !(0.5..=38.5).contains(&wx) {
            // Off the plane's cells (or in the half cell of clamping at its rim): skip.
            if !(-0.5..=39.5).contains(&wx) {
                assert_eq!(got, BACKGROUND.to_le_bytes()[..3], "x {x}");
            }
            continue;
        }
        inside += 1;
        let want = colour_map_rgba(frame.map, (a as f64 * wx / hi as f64) as f32).to_le_bytes();
        for k in 0..3 {
            assert!(
                (got[k] as i32 - want[k] as i32).abs() <= 1,
                "pixel {x} (x = {wx:.3}): {got:?} vs {want:?}"
            );
        }
        checked += 1;
    }
    assert!(inside > W / 2 && checked == inside, "{checked} of {inside}");
    // Rising values: the left end is the map's start, the right end its top.
    assert_ne!(px(W / 4), px(3 * W / 4));
}

#[test]
fn slices_of_walls_are_grey_and_other_axes_work() {
    let l = Lattice::new(12, 12, 12);
    let fields = fields_of(l, |_, y, _| [0.0, 0.01 * y as f32, 0.0]);
    let mut flags = vec![0u8; l.cells()];
    for c in 0..l.cells() {
        if l.coords(c).0 < 6 {
            flags[c] = 1; // a wall filling x < 6
        }
    }
    let cam = Camera {
        yaw: std::f32::consts::FRAC_PI_2,
        ..front(l, 40.0)
    };
    let look = Look {
        kind: ViewKind::Slice,
        quantity: Quantity::Speed,
        axis: 0,
        at: Some(8),
        ..Look::default()
    };
    let frame = look.frame(&cam, l, (0.0, 0.11), BACKGROUND);
    let mut rgba = vec![0u8; (W * H * 4) as usize];
    let input = FrameInput {
        fields: &fields,
        flags: &flags,
        smoke: &[],
        solids: &[],
        solid_radius: 0.5,
        points: murmur::internals::fluid::Points::NONE,
    };
    let mut r = CpuFluidRaster::default();
    r.draw(&frame, &input, &mut rgba).unwrap();
    let centre = ((H / 2 * W + W / 2) * 4) as usize;
    // The centre pixel's ray meets x = 8 half a pixel below the target (5.5, 5.5): depth 37.5,
    // focal length 32 / tan(0.35) pixels; the speed there is 0.01 y.
    let y = 5.5 - 0.5 / (32.0 / 0.35f64.tan()) * 37.5;
    let want = colour_map_rgba(frame.map, (0.01 * y / 0.11) as f32).to_le_bytes();
    for k in 0..3 {
        assert!(
            (rgba[centre + k] as i32 - want[k] as i32).abs() <= 1,
            "{:?} vs {want:?}",
            &rgba[centre..centre + 3]
        );
    }
    let frame = Look {
        at: Some(3),
        ..look
    }
    .frame(&cam, l, (0.0, 0.11), BACKGROUND);
    r.draw(&frame, &input, &mut rgba).unwrap();
    assert_eq!(rgba[centre..centre + 3], [107, 107, 107]);
}

/// A swirling velocity (Taylor-Green-like cells of `2 pi / k` cells) with a wall block in it:
/// vorticity and Q of both signs.
fn swirl(l: Lattice) -> (Vec<f32>, Vec<u8>) {
    let k = 2.0 * std::f32::consts::PI / 12.0;
    let fields = fields_of(l, |x, y, z| {
        let (x, y, z) = (k * x as f32, k * y as f32, k * z as f32);
        [
            0.05 * x.sin() * y.cos() * z.cos(),
            -0.05 * x.cos() * y.sin() * z.cos(),
            0.02 * (x + y).sin(),
        ]
    });
    let flags = (0..l.cells())
        .map(|c| {
            let (x, y, z) = l.coords(c);
            u8::from((9..13).contains(&x) && (4..8).contains(&y) && z < 6)
        })
        .collect();
    (fields, flags)
}

#[test]
fn slices_read_only_their_planes() {
    // Fields that are NaN outside the planes a slice says it reads: the same bytes as with
    // every cell's fields, for each axis, planes at the faces (the gradients wrap) and inside,
    // plain and derived quantities.
    let l = Lattice::new(24, 14, 11);
    let (fields, flags) = swirl(l);
    for axis in 0..3usize {
        let n = [l.nx, l.ny, l.nz][axis];
        for at in [0, 1, n / 2, n - 1] {
            for quantity in [Quantity::Speed, Quantity::Vorticity, Quantity::Q] {
                let look = Look {
                    kind: ViewKind::Slice,
                    quantity,
                    axis,
                    at: Some(at),
                    ..Look::default()
                };
                let cam = look.camera(l, W, H);
                let range = if quantity == Quantity::Speed {
                    (0.0, 0.08)
                } else {
                    (-0.002, 0.002)
                };
                let frame = look.frame(&cam, l, range, BACKGROUND);
                let planes = frame.field_planes().unwrap();
                let mut poisoned = fields.clone();
                let cells = l.cells();
                for c in 0..cells {
                    let (x, y, z) = l.coords(c);
                    if !planes.contains(&l, x, y, z) {
                        for a in 0..4 {
                            poisoned[a * cells + c] = f32::NAN;
                        }
                    }
                }
                let draw = |f: &[f32]| {
                    let mut rgba = vec![0u8; (W * H * 4) as usize];
                    let input = FrameInput {
                        fields: f,
                        flags: &flags,
                        smoke: &[],
                        solids: &[],
                        solid_radius: 0.5,
                        points: murmur::internals::fluid::Points::NONE,
                    };
                    CpuFluidRaster::default()
                        .draw(&frame, &input, &mut rgba)
                        .unwrap();
                    rgba
                };
                let full = draw(&fields);
                assert!(
                    full == draw(&poisoned),
                    "axis {axis} at {at} {quantity:?}: the slice reads cells off its planes"
                );
                // Not all background: the slice is on screen.
                assert!(full.chunks_exact(4).any(|p| p != BACKGROUND.to_le_bytes()));
            }
        }
    }
}

#[test]
fn marches_skip_only_what_they_would_not_draw() {
    // Volumes and smoke drawn with and without the empty-space skipping: the same bytes, from
    // a corner (the volumes' camera) and head-on, with a range whose bottom is not zero.
    let l = Lattice::new(37, 26, 21);
    let (fields, flags) = swirl(l);
    let smoke: Vec<f32> = (0..l.cells())
        .map(|c| {
            let (x, y, z) = l.coords(c);
            let r2 =
                (x as f32 - 8.0).powi(2) + (y as f32 - 13.0).powi(2) + (z as f32 - 5.0).powi(2);
            // A dense block from brick boundary to brick boundary: any sample skipped in it
            // shows.
            let block = (16..24).contains(&x) && (8..16).contains(&y) && (8..16).contains(&z);
            let plume = if block { 0.6 } else { 0.0 };
            (1.2 * (-r2 / 10.0).exp() - 0.05).max(0.0) + plume
        })
        .collect();
    let views = [
        (ViewKind::Volume, Quantity::Q, None),
        (ViewKind::Volume, Quantity::Vorticity, None),
        (ViewKind::Volume, Quantity::Ux, Some((-0.01, 0.05))),
        (ViewKind::Smoke, Quantity::Smoke, None),
    ];
    let mut skipped_some = false;
    for (kind, quantity, range) in views {
        for yaw in [0.0f32, 0.55, 2.4] {
            let look = Look {
                kind,
                quantity,
                range,
                ..Look::default()
            };
            let mut cam = look.camera(l, W, H);
            cam.yaw = yaw;
            let range = range.unwrap_or(if quantity == Quantity::Q {
                (0.0, 1e-4)
            } else {
                (0.0, 0.01)
            });
            let frame = look.frame(&cam, l, range, BACKGROUND);
            let input = FrameInput {
                fields: &fields,
                flags: &flags,
                smoke: &smoke,
                solids: &[[12.0, 13.0, 10.0], [20.0, 5.0, 3.0]],
                solid_radius: 0.8,
                points: murmur::internals::fluid::Points::NONE,
            };
            let draw = |no_skipping: bool| {
                let mut rgba = vec![0u8; (W * H * 4) as usize];
                let mut r = CpuFluidRaster::default();
                r.no_skipping = no_skipping;
                r.draw(&frame, &input, &mut rgba).unwrap();
                rgba
            };
            let (skipping, marching) = (draw(false), draw(true));
            assert!(skipping == marching, "{kind:?} {quantity:?} yaw {yaw}");
            skipped_some |= skipping
                .chunks_exact(4)
                .any(|p| p != BACKGROUND.to_le_bytes());
        }
    }
    assert!(skipped_some);
}

/// Mean and standard deviation along x of a density.
fn moments(l: Lattice, s: &[f32]) -> (f64, f64) {
    let (mut m0, mut m1, mut m2) = (0f64, 0f64, 0f64);
    for c in 0..l.cells() {
        let x = l.coords(c).0 as f64;
        let v = s[c] as f64;
        m0 += v;
        m1 += v * x;
        m2 += v * x * x;
    }
    let mean = m1 / m0;
    (mean, (m2 / m0 - mean * mean).sqrt())
}

#[test]
fn a_gaussian_blob_moves_by_u_t_without_spreading() {
    // u = 0.05 along x for 1,000 steps, advected every 8 steps (the default): 125 MacCormack
    // advections of 0.4 cells. The blob (sigma 3 cells) must move by u t = 50 cells within half
    // a cell and widen by at most one cell.
    let l = Lattice::new(96, 4, 4);
    let (x0, sigma) = (20.0f64, 3.0f64);
    let fields = fields_of(l, |_, _, _| [0.05, 0.0, 0.0]);
    let flags = vec![0u8; l.cells()];
    let mut smoke = CpuSmoke::new(l.cells(), Vec::new());
    for c in 0..l.cells() {
        let x = l.coords(c).0 as f64;
        smoke.s[c] = (-(x - x0) * (x - x0) / (2.0 * sigma * sigma)).exp() as f32;
    }
    let (m_start, w_start) = moments(l, &smoke.s);
    let every = SmokeSetup::DEFAULT_EVERY;
    let p = SmokeParams {
        lattice: l,
        periodic: 0b111,
        dt: every as f32,
        keep: 1.0,
        sources: 0,
    };
    for _ in 0..1000 / every {
        smoke.advect(&p, &fields, &flags);
    }
    let (m_end, w_end) = moments(l, &smoke.s);
    let moved = m_end - m_start;
    assert!((moved - 50.0).abs() <= 0.5, "moved {moved:.4} cells");
    assert!(
        w_end - w_start <= 1.0,
        "width {w_start:.4} -> {w_end:.4} cells"
    );
    assert!(smoke.s.iter().all(|&v| (0.0..=1.0 + 1e-6).contains(&v)));
    eprintln!("moved {moved:.4} cells, width {w_start:.4} -> {w_end:.4}");
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn gpu_frames_equal_cpu_frames() {
    // The same scene stepped 24 times with smoke on both backends: the smoke and every kind of
    // frame must be the same bytes.
    let file = SceneFile::parse(VIEW_SCENE).unwrap();
    let scene = file.build().unwrap();
    let mut cuda = murmur::internals::fluid::cuda::open(&scene.setup).expect("a usable CUDA GPU");
    let mut cpu = murmur::internals::fluid::cpu::open(&scene.setup).unwrap();
    let smoke = murmur::internals::view::fluid::smoke_setup(&scene).unwrap();
    for b in [&mut cpu, &mut cuda] {
        for k in 1..=24u32 {
            b.step().unwrap();
            if k.is_multiple_of(smoke.every) {
                b.view().unwrap().advect_smoke(&smoke).unwrap();
            }
        }
    }
    assert_eq!(
        cpu.view().unwrap().smoke().unwrap(),
        cuda.view().unwrap().smoke().unwrap(),
        "smoke differs"
    );
    let l = scene.setup.lattice();
    // Every kind of frame, slices across each axis (at the faces too: the gradients wrap),
    // each drawn twice on CUDA (the second from what the first left: derived arrays, light,
    // occupancy), then again after one more step and advection.
    let looks = [
        (ViewKind::Slice, Quantity::Speed, 2, None, None),
        (ViewKind::Slice, Quantity::Vorticity, 2, None, None),
        (ViewKind::Slice, Quantity::Vorticity, 0, Some(0), None),
        (ViewKind::Slice, Quantity::Q, 1, Some(15), None),
        (ViewKind::Slice, Quantity::Ux, 2, Some(1), None),
        (ViewKind::Slice, Quantity::Smoke, 1, Some(8), None),
        (ViewKind::Volume, Quantity::Q, 2, None, None),
        (
            ViewKind::Volume,
            Quantity::Vorticity,
            2,
            None,
            Some((0.001, 0.02)),
        ),
        (ViewKind::Volume, Quantity::Speed, 2, None, None),
        (ViewKind::Smoke, Quantity::Smoke, 2, None, None),
    ];
    // 2,000 points spread through the box, each its own colour.
    let boids: Vec<[f32; 3]> = (0..2000u32)
        .map(|i| {
            let f = |k: u32| ((i.wrapping_mul(2654435761).rotate_left(k) % 1000) as f32) / 1000.0;
            [f(0) * l.nx as f32, f(11) * l.ny as f32, f(22) * l.nz as f32]
        })
        .collect();
    let colours: Vec<u32> = (0..2000u32)
        .map(|i| 0xff00_0000 | i.wrapping_mul(0x9e37_79b9) >> 8)
        .collect();
    for round in 0..2 {
        if round == 1 {
            for b in [&mut cpu, &mut cuda] {
                for _ in 0..smoke.every {
                    b.step().unwrap();
                }
                b.view().unwrap().advect_smoke(&smoke).unwrap();
            }
        }
        for (kind, quantity, axis, at, range) in looks {
            let look = Look {
                kind,
                quantity,
                axis,
                at,
                range,
                ..Look::default()
            };
            let cam = look.camera(l, W, H);
            let range = look.range_for(&scene);
            let frame = look.frame(&cam, l, range, BACKGROUND);
            let mut a = vec![0u8; (W * H * 4) as usize];
            let mut b = a.clone();
            // Coloured points over the fluid (a flock's boids), in every other look.
            let points = match round {
                0 => murmur::internals::fluid::Points::NONE,
                _ => murmur::internals::fluid::Points {
                    pos: &boids,
                    colour: &colours,
                    radius: 0.3,
                },
            };
            cpu.view()
                .unwrap()
                .render_into(&frame, 0.5, points, &mut a)
                .unwrap();
            for pass in 0..2 {
                b.fill(0);
                cuda.view()
                    .unwrap()
                    .render_into(&frame, 0.5, points, &mut b)
                    .unwrap();
                assert!(
                    a == b,
                    "round {round} pass {pass}, {kind:?} {quantity:?} axis {axis} at {at:?}: \
                     CPU and CUDA frames differ"
                );
            }
        }
    }
    let stages = cuda
        .view()
        .unwrap()
        .render_times()
        .expect("the frames' GPU stages are timed");
    assert!(stages.steps >= 40, "{} frames timed", stages.steps);
}

/// A small scene with a sphere, an inlet and two smoke sources.
const VIEW_SCENE: &str = r#"
name = "view-test"
collision = "acm-mrt"
[physical]
length = 0.1
velocity = 1.0
viscosity = 1e-3
density = 1.0
[lattice]
resolution = 8
velocity = 0.05
[domain]
cells = [40, 16, 16]
[faces]
x_min = { type = "inlet", ramp = 0.01 }
x_max = { type = "outlet" }
y_min = { type = "free-slip" }
y_max = { type = "free-slip" }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[[solids]]
shape = { type = "sphere", radius = 0.03 }
position = [0.12, 0.1, 0.1]
[smoke]
every = 4
sources = [
  { type = "inlet", spacing = 0.03, radius = 0.01 },
  { type = "point", position = [0.05, 0.1, 0.1], radius = 0.012 },
]
"#;

/// A scratch folder with the test scene in it.
fn scratch(tag: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("murmur-fluid-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("s.toml");
    std::fs::write(&scene, VIEW_SCENE).unwrap();
    (dir, scene.display().to_string())
}

#[test]
fn render_writes_frames_and_a_gif() {
    let (dir, scene) = scratch("render");
    let out = dir.join("frames");
    let gif = dir.join("a.gif");
    let (out_s, gif_s) = (out.display().to_string(), gif.display().to_string());
    let o = murmur(&[
        "fluid",
        "render",
        &scene,
        "--backend",
        "cpu",
        "--frames",
        "3",
        "--every",
        "4",
        "--width",
        "64",
        "--height",
        "48",
        "--view",
        "smoke",
        "--quiet",
        "--out",
        &out_s,
        "--gif",
        &gif_s,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for k in 0..3 {
        let p = out.join(format!("frame_{k:05}.png"));
        let img = image::open(&p).unwrap();
        assert_eq!((img.width(), img.height()), (64, 48));
    }
    assert!(!out.join("frame_00003.png").exists());
    assert!(std::fs::metadata(&gif).unwrap().len() > 0);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("rendered 3 frames"), "{stdout}");
    assert!(stdout.contains("smoke:"), "{stdout}");
    // The three models side by side: one frame three panes wide.
    let cmp = dir.join("compare");
    let cmp_s = cmp.display().to_string();
    let o = murmur(&[
        "fluid",
        "render",
        &scene,
        "--backend",
        "cpu",
        "--frames",
        "2",
        "--every",
        "2",
        "--compare",
        "--width",
        "96",
        "--height",
        "32",
        "--quiet",
        "--out",
        &cmp_s,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let img = image::open(cmp.join("frame_00001.png")).unwrap();
    assert_eq!((img.width(), img.height()), (96, 32));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("bgk, rm-mrt, acm-mrt"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn render_rejects_bad_input_in_one_line() {
    let (dir, scene) = scratch("bad");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let frames = dir.join("f").display().to_string();
    let file = file.display().to_string();
    let base = [
        "fluid",
        "render",
        scene.as_str(),
        "--backend",
        "cpu",
        "--quiet",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let check = |extra: &[&str], expect: &str| {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_one_line_failure(&args, expect);
    };
    check(&["--frames", "0", "--out", &frames], "--frames");
    check(&["--frames", "1", "--out", &file], "a-file");
    check(
        &["--frames", "1", "--out", "/proc/murmur/x"],
        "/proc/murmur/x",
    );
    check(
        &["--frames", "1", "--range", "3,1", "--out", &frames],
        "--range",
    );
    check(&["--frames", "1", "--at", "900", "--out", &frames], "--at");
    check(
        &["--frames", "1", "--width", "4", "--out", &frames],
        "frame size",
    );
    let args = with(&["--frames", "1", "--view", "sideways", "--out", &frames]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_clean_failure(&args, "sideways");
    assert!(!dir.join("f").join("frame_00000.png").exists());
    // No display: the viewer says so in one line and names the headless command.
    assert_one_line_failure(&["fluid", "view", &scene], "murmur fluid render");
    let _ = std::fs::remove_dir_all(&dir);
}
