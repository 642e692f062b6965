//! The viewer's rasteriser on the CPU backend (known pixels, nearest boid wins, order does not
//! matter), the GPU frame against the CPU frame (where a GPU is present), and the headless
//! `murmur flock render` command (K PNG files, one-line errors).

mod support;
use support::{assert_one_line_failure, murmur};

use murmur::internals::flock::config::FlockConfig;
use murmur::internals::flock::cpu::CpuFlock;
use murmur::internals::flock::{FlockBackend, FlockSettings, FlockState};
use murmur::internals::view::default_style;
use murmur_common::render::{Camera, ColourMode, View, BACKGROUND};
use murmur_common::Vec3;

const W: u32 = 64;
const H: u32 = 48;

fn settings() -> FlockSettings {
    FlockConfig::default().settings().unwrap()
}

/// Yaw 0, pitch 0: the eye sits on +z looking at the origin, +x right, +y up.
fn front_view(s: &FlockSettings) -> View {
    let cam = Camera {
        yaw: 0.0,
        pitch: 0.0,
        ..Camera::framing(s.params.scale, W, H)
    };
    cam.view(&default_style(&s.params, ColourMode::Heading))
}

fn state(boids: &[(Vec3, Vec3)]) -> FlockState {
    FlockState {
        pos: boids.iter().map(|b| b.0).collect(),
        vel: boids.iter().map(|b| b.1).collect(),
        id: (0..boids.len() as u32).collect(),
    }
}

fn draw(s: &FlockSettings, st: &FlockState, view: &View) -> Vec<u8> {
    let mut rgba = vec![0u8; (view.width * view.height * 4) as usize];
    CpuFlock::new(s, st)
        .render_into(view, BACKGROUND, &mut rgba)
        .unwrap();
    rgba
}

fn pixel(rgba: &[u8], x: u32, y: u32) -> [u8; 4] {
    let i = ((y * W + x) * 4) as usize;
    rgba[i..i + 4].try_into().unwrap()
}

#[test]
fn a_boid_at_the_target_lands_at_the_centre() {
    let s = settings();
    let view = front_view(&s);
    let east = Vec3::new(1.0, 0.0, 0.0);
    let rgba = draw(&s, &state(&[(Vec3::ZERO, east)]), &view);
    let bg = BACKGROUND.to_le_bytes();
    let centre = pixel(&rgba, W / 2, H / 2);
    let depth = view.project(Vec3::ZERO).unwrap().depth;
    assert_eq!(centre, view.colour(east, depth).to_le_bytes());
    // Heading +x is red.
    assert!(
        centre[0] > 2 * centre[1] && centre[0] > 2 * centre[2],
        "{centre:?}"
    );
    // One small disc, everything else background.
    let lit = rgba.chunks_exact(4).filter(|p| *p != bg).count();
    assert!((1..=9).contains(&lit), "{lit} pixels lit");
    assert_eq!(pixel(&rgba, 0, 0), bg);
    assert_eq!(pixel(&rgba, W - 1, H - 1), bg);
}

#[test]
fn the_nearer_boid_wins_in_any_order() {
    let s = settings();
    let view = front_view(&s);
    // On the view axis; +z is toward the eye. Red (east) in front of cyan-ish (west).
    let near = (Vec3::new(0.0, 0.0, 40.0), Vec3::new(1.0, 0.0, 0.0));
    let far = (Vec3::new(0.0, 0.0, -40.0), Vec3::new(-1.0, 0.0, 0.0));
    let a = draw(&s, &state(&[near, far]), &view);
    let b = draw(&s, &state(&[far, near]), &view);
    assert_eq!(a, b);
    let d = view.project(near.0).unwrap().depth;
    assert_eq!(
        pixel(&a, W / 2, H / 2),
        view.colour(near.1, d).to_le_bytes()
    );
    // Without the near boid the far one shows there.
    let c = draw(&s, &state(&[far]), &view);
    let d = view.project(far.0).unwrap().depth;
    assert_eq!(pixel(&c, W / 2, H / 2), view.colour(far.1, d).to_le_bytes());
}

#[test]
fn a_boid_right_and_above_lands_right_and_above() {
    let s = settings();
    let view = front_view(&s);
    let rgba = draw(
        &s,
        &state(&[(Vec3::new(30.0, 20.0, 0.0), Vec3::new(0.0, 0.0, 1.0))]),
        &view,
    );
    let bg = BACKGROUND.to_le_bytes();
    let lit: Vec<(u32, u32)> = (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .filter(|&(x, y)| pixel(&rgba, x, y) != bg)
        .collect();
    assert!(!lit.is_empty());
    assert!(lit.iter().all(|&(x, y)| x > W / 2 && y < H / 2), "{lit:?}");
}

#[test]
fn a_stepped_flock_draws_the_same_in_any_boid_order() {
    // The coherent method keeps boids in cell order; the frame must not depend on it.
    let s = settings();
    let start = FlockState::random(3000, s.params.scale, 7);
    let mut f = CpuFlock::new(&s, &start);
    for _ in 0..5 {
        f.step().unwrap();
    }
    let sorted = f.state().unwrap();
    let mut reversed = sorted.clone();
    reversed.pos.reverse();
    reversed.vel.reverse();
    reversed.id.reverse();
    let view =
        Camera::framing(s.params.scale, W, H).view(&default_style(&s.params, ColourMode::Speed));
    let mut direct = vec![0u8; (W * H * 4) as usize];
    f.render_into(&view, BACKGROUND, &mut direct).unwrap();
    assert_eq!(direct, draw(&s, &sorted, &view));
    assert_eq!(direct, draw(&s, &reversed, &view));
}

#[test]
fn a_wrong_buffer_size_is_an_error() {
    let s = settings();
    let view = front_view(&s);
    let mut rgba = vec![0u8; 10];
    let e = CpuFlock::new(&s, &state(&[(Vec3::ZERO, Vec3::ZERO)]))
        .render_into(&view, BACKGROUND, &mut rgba)
        .unwrap_err();
    assert!(e.to_string().contains("64x48"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn gpu_frame_equals_cpu_frame() {
    let s = settings();
    let mut start = FlockState::random(20_000, s.params.scale, 3);
    // Give the boids headings so colours vary.
    for (i, v) in start.vel.iter_mut().enumerate() {
        let t = i as f32 * 0.37;
        *v = Vec3::new(t.cos(), 0.3 * (t * 0.5).sin(), t.sin()) * 0.8;
    }
    let mut gpu = murmur::internals::flock::cuda::open(&s, &start, 0).unwrap();
    let view = Camera::framing(s.params.scale, 320, 200)
        .view(&default_style(&s.params, ColourMode::Heading));
    let mut a = vec![0u8; 320 * 200 * 4];
    let mut b = vec![0u8; 320 * 200 * 4];
    gpu.render_into(&view, BACKGROUND, &mut a).unwrap();
    CpuFlock::new(&s, &start)
        .render_into(&view, BACKGROUND, &mut b)
        .unwrap();
    let differ = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(p, q)| p != q)
        .count();
    assert_eq!(differ, 0, "{differ} of {} pixels differ", 320 * 200);
}

#[test]
fn render_writes_k_png_frames_and_a_gif() {
    let out = support::tmp("view", "frames");
    let gif = support::tmp("view", "flock.gif");
    let o = murmur(&[
        "flock",
        "render",
        "--backend",
        "cpu",
        "--n",
        "2000",
        "--frames",
        "3",
        "--every",
        "2",
        "--width",
        "96",
        "--height",
        "64",
        "--out",
        out.to_str().unwrap(),
        "--gif",
        gif.to_str().unwrap(),
        "--spin",
        "5",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("rendered 3 frames of 2000 boids"),
        "{stdout}"
    );
    assert!(stdout.contains("render+copy"), "{stdout}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["frame_00000.png", "frame_00001.png", "frame_00002.png"]
    );
    for n in &names {
        let img = image::open(out.join(n)).unwrap().to_rgba8();
        assert_eq!(img.dimensions(), (96, 64));
        let bg = BACKGROUND.to_le_bytes();
        assert!(img.pixels().any(|p| p.0 != bg), "{n} is empty");
    }
    let g = std::fs::read(&gif).unwrap();
    assert_eq!(&g[..6], b"GIF89a");
}

#[test]
fn render_rejects_bad_input_on_one_line() {
    let file = support::tmp("view", "not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let f = file.to_str().unwrap();
    let dir = support::tmp("view", "d");
    let d = dir.to_str().unwrap();
    assert_one_line_failure(
        &["flock", "render", "--frames", "0", "--out", d],
        "--frames must be at least 1",
    );
    assert_one_line_failure(
        &["flock", "render", "--frames", "2", "--out", f],
        "is a file, not a folder",
    );
    assert_one_line_failure(
        &[
            "flock", "render", "--frames", "1", "--out", d, "--width", "5",
        ],
        "out of range",
    );
    assert_one_line_failure(
        &[
            "flock", "render", "--frames", "1", "--out", d, "--every", "0",
        ],
        "--every",
    );
    assert_one_line_failure(
        &[
            "flock",
            "render",
            "--frames",
            "1",
            "--out",
            d,
            "--backend",
            "cpu",
            "--n",
            "0",
        ],
        "at least one boid",
    );
    let missing = murmur(&["flock", "render", "--frames", "2"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--out"));
}

#[test]
fn view_without_a_display_points_to_render() {
    assert_one_line_failure(
        &["flock", "view", "--backend", "cpu", "--n", "100"],
        "murmur flock render",
    );
}
