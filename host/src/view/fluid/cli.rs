//! `murmur fluid view` and `murmur fluid render`: their arguments and the commands. What a frame
//! shows layers as everywhere else: defaults < the scene's `[view]` table < flags.

use super::headless::{self, FluidRenderOptions, Pane, Stepping};
use super::{check_range, parse_axis, window, Look};
use crate::backend::BackendChoice;
use crate::fluid::riders::OpenRider;
use crate::fluid::scene::{Scene, SceneFile, SceneOverrides};
use crate::fluid::FluidError;
use crate::preflight;
use anyhow::{bail, Result};
use clap::Args;
use murmur_common::lbm::CollisionModel;
use murmur_common::render::fluid::{Quantity, ViewKind};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// What a frame shows (both commands).
#[derive(Args, Clone, Debug)]
pub struct LookArgs {
    /// slice, volume (vorticity or Q, ray-marched) or smoke [default: the scene's view.view, or
    /// slice].
    #[arg(long, value_enum)]
    pub view: Option<ViewKind>,
    /// What a slice or volume shows [default: the scene's, or speed; q for a volume].
    #[arg(long, value_enum)]
    pub quantity: Option<Quantity>,
    /// The slice's axis: x, y or z [default: z].
    #[arg(long, value_parser = |s: &str| s.chars().next().ok_or("empty").map_err(String::from).and_then(parse_axis))]
    pub axis: Option<usize>,
    /// The slice's cell index along its axis [default: the middle].
    #[arg(long, value_name = "CELL")]
    pub at: Option<u32>,
    /// Colour range LO,HI in lattice units of the quantity [default: from the scene's velocity
    /// and length].
    #[arg(long, value_name = "LO,HI", allow_hyphen_values = true)]
    pub range: Option<String>,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Collision model [default: the scene's].
    #[arg(long, value_enum)]
    pub model: Option<CollisionModel>,
}

impl LookArgs {
    /// The look for `scene`: defaults, the scene's `[view]`, then these flags, checked.
    pub fn look(&self, scene: &Scene) -> Result<Look> {
        let mut look = Look::default()
            .with_scene(scene)
            .map_err(|e| in_scene(scene, e))?;
        if let Some(v) = self.view {
            look.kind = v;
            if v == ViewKind::Volume
                && self.quantity.is_none()
                && scene.file.view.quantity.is_none()
            {
                look.quantity = Quantity::Q;
            }
        }
        if let Some(q) = self.quantity {
            look.quantity = q;
        }
        if let Some(a) = self.axis {
            look.axis = a;
        }
        let l = scene.setup.lattice();
        if let Some(at) = self.at {
            let n = [l.nx, l.ny, l.nz][look.axis];
            if at >= n {
                bail!(
                    "--at {at} is outside the lattice: {} has cells 0..{} along {}",
                    scene.file.name,
                    n - 1,
                    ["x", "y", "z"][look.axis]
                );
            }
            look.at = Some(at);
        }
        if let Some(r) = &self.range {
            let parsed = r
                .split_once(',')
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
            let Some((lo, hi)) = parsed else {
                bail!("--range {r}: expected LO,HI (two numbers)");
            };
            look.range = Some(check_range(lo, hi).map_err(|e| anyhow::anyhow!("--range: {e}"))?);
        }
        Ok(look)
    }
}

fn in_scene(scene: &Scene, e: FluidError) -> FluidError {
    match e {
        FluidError::Invalid(m) => FluidError::Invalid(format!("scene {}: {m}", scene.file.name)),
        e => e,
    }
}

#[derive(Args)]
pub struct FluidViewArgs {
    /// Scene file, e.g. assets/fluid/rotating-torus.toml (reloaded when saved).
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    #[command(flatten)]
    pub look: LookArgs,
    /// Window width in pixels (the frame follows the window when resized).
    #[arg(long, default_value_t = 1280)]
    pub width: u32,
    /// Window height in pixels.
    #[arg(long, default_value_t = 720)]
    pub height: u32,
    /// Close the window after this many frames (scripted runs, screenshots).
    #[arg(long, value_name = "FRAMES")]
    pub quit_after: Option<u64>,
    /// Steps run before the window opens (with a progress bar).
    #[arg(long, value_name = "STEPS", default_value_t = 0)]
    pub skip: u64,
    #[command(flatten)]
    pub overrides: SceneOverrides,
}

#[derive(Args)]
pub struct FluidRenderArgs {
    /// Scene file, e.g. assets/fluid/sphere-re10000.toml.
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    #[command(flatten)]
    pub look: LookArgs,
    /// Number of frames to write.
    #[arg(long, value_name = "K")]
    pub frames: u32,
    /// Folder for frame_00000.png, ... (created when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Simulation steps before each frame.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub every: u32,
    /// Steps run before frame 0 (not drawn).
    #[arg(long, value_name = "STEPS", default_value_t = 0)]
    pub skip: u64,
    /// Frame width in pixels (all panes together with --compare).
    #[arg(long, default_value_t = 1280)]
    pub width: u32,
    /// Frame height in pixels.
    #[arg(long, default_value_t = 720)]
    pub height: u32,
    /// Also write all frames as one animated GIF (25 frames per second).
    #[arg(long, value_name = "FILE.gif")]
    pub gif: Option<PathBuf>,
    /// Three panes: the same scene under BGK, RM-MRT and ACM-MRT (a model that gives up keeps
    /// its last frame, dimmed, with the step it gave up at).
    #[arg(long)]
    pub compare: bool,
    /// Draw each pane at 1/K of its size and scale it up.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub downsample: u32,
    /// Turn the camera about the vertical axis by this many degrees per frame.
    #[arg(long, value_name = "DEG", default_value_t = 0.0)]
    pub spin: f32,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub overrides: SceneOverrides,
}

/// Loads and builds a scene with an optional model override and the command line's scene
/// overrides (their warnings first among the scene's).
pub fn load_scene(
    path: &Path,
    model: Option<CollisionModel>,
    overrides: SceneOverrides,
) -> Result<Scene, FluidError> {
    let mut file = SceneFile::load(path)?;
    if let Some(m) = model {
        file.collision = m;
    }
    let in_scene = crate::fluid::scene::in_scene(path);
    let warnings = overrides.apply(&mut file).map_err(in_scene)?;
    let mut scene = file.build().map_err(in_scene)?;
    scene.warnings.splice(0..0, warnings);
    Ok(scene)
}

/// `murmur fluid render`; `open_rider` opens what rides each pane's flow (the scene's flocks,
/// drawn over it).
pub fn render(a: &FluidRenderArgs, open_rider: OpenRider) -> Result<()> {
    preflight::check_output_dir(&a.out)?;
    if let Some(gif) = &a.gif {
        preflight::check_output_file(gif)?;
    }
    let scene = load_scene(&a.scene, a.look.model, a.overrides)?;
    let look = a.look.look(&scene)?;
    let opts = FluidRenderOptions {
        frames: a.frames,
        every: a.every,
        width: a.width,
        height: a.height,
        out: a.out.clone(),
        gif: a.gif.clone(),
        look,
        spin_deg: a.spin,
        downsample: a.downsample,
        skip: a.skip,
        progress: !a.quiet && std::io::stderr().is_terminal(),
    };
    opts.prepare()?;
    if a.compare && a.width < 48 {
        bail!("--compare needs --width of at least 48 (three panes)");
    }
    for w in &scene.warnings {
        eprintln!("murmur: warning: {w}");
    }
    let stepping = Stepping::of(&scene)?;
    let models: Vec<CollisionModel> = if a.compare {
        CollisionModel::ALL.to_vec()
    } else {
        vec![scene.file.collision]
    };
    let mut panes = Vec::new();
    let mut what = String::new();
    for m in models {
        let mut setup_scene = scene.clone();
        setup_scene.setup.model = m;
        let (mut b, line) = super::open(a.look.backend, &mut setup_scene, &a.scene)?;
        if what.is_empty() {
            what = b.describe();
            println!("{line}");
        }
        let rider = open_rider(&a.scene, &setup_scene, b.as_mut())?;
        if panes.is_empty() {
            for line in rider.iter().flat_map(|r| r.header()) {
                println!("{line}");
            }
        }
        panes.push(Pane::new(b, rider, m.name().to_string()));
    }
    let report = headless::render(&mut panes, &scene, &stepping, &opts)?;
    let l = scene.setup.lattice();
    let models = panes
        .iter()
        .map(|p| p.label.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let what = format!(
        "{} {} x {} x {}, {models}, {what}, {}, {}x{}{}",
        scene.file.name,
        l.nx,
        l.ny,
        l.nz,
        look.describe(l),
        a.width,
        a.height,
        if a.downsample > 1 {
            format!(" drawn at 1/{}", a.downsample)
        } else {
            String::new()
        }
    );
    println!("{}", report.summary(&what, &a.out));
    if let Some(gif) = &a.gif {
        println!("wrote {}", gif.display());
    }
    Ok(())
}

/// `murmur fluid view`; `open_rider` as [`render`]'s.
pub fn view(a: &FluidViewArgs, open_rider: OpenRider) -> Result<()> {
    crate::view::frames::check_size(a.width, a.height)?;
    window::check_display()?;
    let mut scene = load_scene(&a.scene, a.look.model, a.overrides)?;
    for w in &scene.warnings {
        eprintln!("murmur: warning: {w}");
    }
    let look = a.look.look(&scene)?;
    let (mut backend, line) = super::open(a.look.backend, &mut scene, &a.scene)?;
    println!("{line}");
    if a.skip > 0 {
        // The skipped steps leave the flocks out: the window opens them on the flow it shows.
        let stepping = Stepping::of(&scene)?;
        let bar = crate::backend::step_bar(a.skip, std::io::stderr().is_terminal());
        for _ in 0..a.skip {
            stepping.advance(backend.as_mut(), None, 1, None)?;
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let args = a.look.clone();
    let path = a.scene.clone();
    let overrides = a.overrides;
    let reload: window::Reload = Box::new(move || {
        let scene = load_scene(&path, args.model, overrides).map_err(|e| e.to_string())?;
        let look = args
            .look(&scene)
            .map_err(|e| e.to_string().replace('\n', " "))?;
        Stepping::of(&scene).map_err(|e| format!("scene {}: {e}", path.display()))?;
        Ok((scene, look))
    });
    window::run(
        backend,
        scene,
        look,
        window::FluidWindowOptions {
            width: a.width,
            height: a.height,
            backend: a.look.backend,
            scene_path: a.scene.clone(),
            reload,
            quit_after: a.quit_after,
            open_rider,
        },
    )?;
    Ok(())
}
