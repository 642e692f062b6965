//! The layering of a run's settings: defaults, device defaults, tuning cache, scene file, then
//! flags, last.
//!
//! Each layer sets only the keys of its row in [`Layer::keys`]:
//!
//! | key              | default           | device | cache | scene                  | flags                |
//! |------------------|-------------------|--------|-------|------------------------|----------------------|
//! | model            | bgk               |        |       | `collision`            | `--model`            |
//! | storage          | fp32              |        |       |                        | `--storage`          |
//! | layout           | soa               | yes    | yes   |                        | `--layout`           |
//! | block            | flat              | yes    | yes   |                        | `--block`            |
//! | streaming        | pull if it fits   |        |       |                        | `--streaming`        |
//! | boundary launch  | tail              |        |       |                        | `--boundary-launch`  |
//! | spreading        | the scene's build | yes    | yes   | `[immersed] spread`    |                      |
//! | steps            | 1000              |        |       | `run.steps`            | `--steps`            |
//!
//! The device defaults ([`crate::fluid::defaults`]) are the knobs of the device class the run
//! opens; the cache stands in for them where it has the scene's entry. Both come before the
//! scene, so a spreading method the scene names beats them, and the cache is left out whole
//! when the flags set the layout or the block (the tuned knobs were measured together). The
//! flags come last.

use crate::fluid::cli::RunArgs;
use crate::fluid::defaults::{self, Defaults, DeviceClass};
use crate::fluid::ib::spread::IbSpread;
use crate::fluid::scene::{RunConfig, Scene, SceneFile};
use crate::fluid::tuning::{self, Entry, Key as CacheKey, Knobs};
use crate::fluid::{Block, BoundaryLaunch, Setup};
use murmur_common::lbm::{CollisionModel, Layout, StorageKind, Streaming};
use std::path::Path;

/// A setting of a run that more than one layer may decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Model,
    Storage,
    Layout,
    Block,
    Streaming,
    BoundaryLaunch,
    Spread,
    Steps,
}

impl Key {
    pub const ALL: [Key; 8] = [
        Key::Model,
        Key::Storage,
        Key::Layout,
        Key::Block,
        Key::Streaming,
        Key::BoundaryLaunch,
        Key::Spread,
        Key::Steps,
    ];
}

/// Where a setting comes from, in the order the layers are applied: a later one wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    /// What a run takes where no layer says otherwise.
    Default,
    /// The device defaults of the device class the run opens.
    Device,
    /// The tuning cache's entry for the scene, device, storage and model (`fluid tune`).
    Cache,
    /// The scene file.
    Scene,
    /// The command line.
    Flags,
}

impl Layer {
    pub const ALL: [Layer; 5] = [
        Layer::Default,
        Layer::Device,
        Layer::Cache,
        Layer::Scene,
        Layer::Flags,
    ];

    /// The keys this layer may set; what it holds for any other key is ignored.
    pub const fn keys(self) -> &'static [Key] {
        match self {
            Layer::Default => &Key::ALL,
            Layer::Device | Layer::Cache => &[Key::Layout, Key::Block, Key::Spread],
            Layer::Scene => &[Key::Model, Key::Spread, Key::Steps],
            Layer::Flags => &[
                Key::Model,
                Key::Storage,
                Key::Layout,
                Key::Block,
                Key::Streaming,
                Key::BoundaryLaunch,
                Key::Steps,
            ],
        }
    }
}

/// What one layer says; `None` leaves a key to the layers before it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Partial {
    pub model: Option<CollisionModel>,
    pub storage: Option<StorageKind>,
    pub layout: Option<Layout>,
    pub block: Option<Block>,
    pub streaming: Option<Streaming>,
    pub boundary_launch: Option<BoundaryLaunch>,
    pub spread: Option<IbSpread>,
    pub steps: Option<u64>,
}

impl Partial {
    /// The flags of `fluid run`.
    pub fn flags(a: &RunArgs) -> Partial {
        Partial {
            model: a.model,
            storage: Some(a.storage.storage),
            layout: a.storage.layout,
            block: a.storage.block,
            streaming: a.storage.streaming,
            boundary_launch: Some(a.storage.boundary_launch),
            spread: None,
            steps: a.steps,
        }
    }

    /// What the scene file says before it is built: its model and steps.
    pub fn scene_file(file: &SceneFile) -> Partial {
        Partial {
            model: Some(file.collision),
            steps: Some(file.run.steps),
            ..Partial::default()
        }
    }

    /// What the built scene says: [`Partial::scene_file`] and, where `[immersed]` names a
    /// spreading method, the spreading it was built with.
    pub fn scene(scene: &Scene) -> Partial {
        Partial {
            spread: scene
                .file
                .immersed
                .spread
                .is_some()
                .then_some(scene.setup.immersed.spread),
            ..Partial::scene_file(&scene.file)
        }
    }

    /// The device defaults' knobs; their spreading only for a scene with `solids`.
    pub fn device(d: &Defaults, solids: bool) -> Partial {
        Partial::cache(d.knobs, solids)
    }

    /// A cache entry's knobs; its spreading only for a scene with `solids`.
    pub fn cache(knobs: Knobs, solids: bool) -> Partial {
        Partial {
            layout: Some(knobs.layout),
            block: Some(knobs.block),
            spread: knobs.spread.filter(|_| solids),
            ..Partial::default()
        }
    }

    /// Whether these (flags) set a knob the tuner chooses: then the cache is left out.
    pub fn sets_tuned_knobs(&self) -> bool {
        self.layout.is_some() || self.block.is_some()
    }

    fn has(&self, key: Key) -> bool {
        match key {
            Key::Model => self.model.is_some(),
            Key::Storage => self.storage.is_some(),
            Key::Layout => self.layout.is_some(),
            Key::Block => self.block.is_some(),
            Key::Streaming => self.streaming.is_some(),
            Key::BoundaryLaunch => self.boundary_launch.is_some(),
            Key::Spread => self.spread.is_some(),
            Key::Steps => self.steps.is_some(),
        }
    }
}

/// A run's settings after the layering, and which layer set each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub model: CollisionModel,
    pub storage: StorageKind,
    pub layout: Layout,
    pub block: Block,
    /// `None`: pull when both copies fit, else in place.
    pub streaming: Option<Streaming>,
    pub boundary_launch: BoundaryLaunch,
    /// `None`: the spreading the scene was built with.
    pub spread: Option<IbSpread>,
    pub steps: u64,
    from: [Layer; Key::ALL.len()],
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            model: CollisionModel::default(),
            storage: StorageKind::Fp32,
            layout: Layout::SOA,
            block: Block::default(),
            streaming: None,
            boundary_launch: BoundaryLaunch::default(),
            spread: None,
            steps: RunConfig::default().steps,
            from: [Layer::Default; Key::ALL.len()],
        }
    }
}

impl Settings {
    /// The defaults, then `device`, then `cache` (left out when `flags` set a tuned knob), then
    /// `scene`, then `flags`, each layer setting only its own keys.
    pub fn layered(
        device: Option<&Partial>,
        cache: Option<&Partial>,
        scene: &Partial,
        flags: &Partial,
    ) -> Settings {
        let mut s = Settings::default();
        if let Some(device) = device {
            s.layer(Layer::Device, device);
        }
        if let Some(cache) = cache.filter(|_| !flags.sets_tuned_knobs()) {
            s.layer(Layer::Cache, cache);
        }
        s.layer(Layer::Scene, scene);
        s.layer(Layer::Flags, flags);
        s
    }

    /// The layer that set `key`.
    pub fn from(&self, key: Key) -> Layer {
        self.from[key as usize]
    }

    fn layer(&mut self, layer: Layer, p: &Partial) {
        for &key in layer.keys() {
            if !p.has(key) {
                continue;
            }
            self.from[key as usize] = layer;
            match key {
                Key::Model => self.model = p.model.unwrap_or(self.model),
                Key::Storage => self.storage = p.storage.unwrap_or(self.storage),
                Key::Layout => self.layout = p.layout.unwrap_or(self.layout),
                Key::Block => self.block = p.block.unwrap_or(self.block),
                Key::Streaming => self.streaming = p.streaming.or(self.streaming),
                Key::BoundaryLaunch => {
                    self.boundary_launch = p.boundary_launch.unwrap_or(self.boundary_launch)
                }
                Key::Spread => self.spread = p.spread.or(self.spread),
                Key::Steps => self.steps = p.steps.unwrap_or(self.steps),
            }
        }
    }

    /// Sets the knobs on `setup`, which was built with [`Settings::model`] (the build takes
    /// the model: it decides the relaxation rates and the stability check).
    pub fn apply(&self, setup: &mut Setup) {
        setup.storage = self.storage;
        setup.layout = self.layout;
        setup.block = self.block;
        setup.streaming = self.streaming;
        setup.boundary_launch = self.boundary_launch;
        if let Some(s) = self.spread {
            setup.immersed.spread = s;
        }
    }

    /// The settings of `scene` (built from the file at `scene_path`, with these settings'
    /// storage and model) on a backend of device class `class`: its device defaults, the
    /// tuning cache's entry as `cache` says, the scene and `flags` layered; and the line that
    /// says where the tuned knobs came from. An unusable cache file is reported on stderr in
    /// one line.
    pub fn picked(
        scene: &Scene,
        scene_path: &Path,
        class: DeviceClass,
        cache: CacheUse,
        flags: &Partial,
    ) -> (Settings, String) {
        let setup = &scene.setup;
        let solids = !setup.immersed.is_empty();
        let d = Defaults::of(class);
        let found = match cache {
            CacheUse::Device(device) if !flags.sets_tuned_knobs() => {
                let key = CacheKey::new(device, &bytes_of(scene_path), setup.storage, setup.model);
                tuning::lookup(&key)
            }
            _ => None,
        };
        let cached = found.as_ref().map(|(_, k)| Partial::cache(*k, solids));
        let device = Partial::device(&d, solids);
        let settings = Settings::layered(
            Some(&device),
            cached.as_ref(),
            &Partial::scene(scene),
            flags,
        );
        let line = match &found {
            Some((entry, knobs)) => settings.cache_line(entry, knobs.spread.is_some()),
            None => {
                let why = match cache {
                    _ if flags.sets_tuned_knobs() => {
                        "the tuning cache is left out with --layout or --block".to_string()
                    }
                    CacheUse::Device(_) => {
                        format!("run murmur fluid tune {} to tune", scene_path.display())
                    }
                    CacheUse::Off(why) => why.to_string(),
                };
                settings.defaults_line(&d, solids, &why)
            }
        };
        (settings, line)
    }

    /// The knobs of these settings (the spreading where the scene has `solids`).
    pub fn knobs(&self, solids: bool) -> Knobs {
        Knobs {
            layout: self.layout,
            block: self.block,
            spread: self.spread.filter(|_| solids),
        }
    }

    /// Without a cache entry: `tuning: device defaults for sm_90 (csoa-128, flat, scatter;
    /// WHY)` when the device defaults set every knob (a spreading the scene names said so),
    /// else each knob with where it came from, then `WHY`.
    fn defaults_line(&self, d: &Defaults, solids: bool, why: &str) -> String {
        let from_device = |k| self.from(k) == Layer::Device;
        let spread_ok = !solids || matches!(self.from(Key::Spread), Layer::Device | Layer::Scene);
        if from_device(Key::Layout) && from_device(Key::Block) && spread_ok {
            let mut what = defaults::values(self.layout, self.block, None);
            match (solids, self.from(Key::Spread), self.spread) {
                (true, Layer::Scene, Some(s)) => {
                    what += &format!(", spread {} as the scene names it", tuning::spread_name(s))
                }
                (true, _, Some(s)) => what += &format!(", {}", tuning::spread_name(s)),
                _ => {}
            }
            return format!("tuning: {} ({what}; {why})", d.name());
        }
        let source = |k: Key| match self.from(k) {
            Layer::Device => d.name(),
            Layer::Flags if k == Key::Layout => "--layout".into(),
            Layer::Flags => "--block".into(),
            Layer::Scene => "as the scene names it".into(),
            Layer::Cache => "the cache".into(),
            Layer::Default => "the scene's build".into(),
        };
        let mut parts = vec![
            format!(
                "layout {} ({})",
                self.layout.describe(),
                source(Key::Layout)
            ),
            format!("block {} ({})", self.block, source(Key::Block)),
        ];
        if let Some(s) = self.spread.filter(|_| solids) {
            parts.push(format!(
                "spread {} ({})",
                tuning::spread_name(s),
                source(Key::Spread)
            ));
        }
        format!("tuning: {}; {why}", parts.join(", "))
    }

    /// `tuning: layout .., block ..[, spread ..] (from the cache, tuned DATE, T ms/step)`;
    /// `entry_spreads`: whether the entry holds a spreading method.
    fn cache_line(&self, entry: &Entry, entry_spreads: bool) -> String {
        let mut what = Knobs {
            layout: self.layout,
            block: self.block,
            spread: None,
        }
        .describe();
        match (self.from(Key::Spread), self.spread) {
            (Layer::Cache, Some(s)) => what += &format!(", spread {}", tuning::spread_name(s)),
            (Layer::Scene, _) if entry_spreads => what += " (spread as the scene names it)",
            _ => {}
        }
        format!(
            "tuning: {what} (from the cache, tuned {}, {:.3} ms/step)",
            entry.date(),
            entry.ms_per_step
        )
    }
}

/// Whether [`Settings::picked`] looks up the tuning cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse<'a> {
    /// The entry of the opened backend of this description ([`crate::fluid::FluidBackend::describe`]).
    Device(&'a str),
    /// Left out, for the reason given (it ends the tuning line).
    Off(&'a str),
}

/// The scene file's bytes for the tuning key (empty when it cannot be read again: then no
/// entry matches).
fn bytes_of(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Which layers may set each key: default, device, cache, scene, flags.
    const TABLE: [(Key, [bool; 5]); 8] = [
        (Key::Model, [true, false, false, true, true]),
        (Key::Storage, [true, false, false, false, true]),
        (Key::Layout, [true, true, true, false, true]),
        (Key::Block, [true, true, true, false, true]),
        (Key::Streaming, [true, false, false, false, true]),
        (Key::BoundaryLaunch, [true, false, false, false, true]),
        (Key::Spread, [true, true, true, true, false]),
        (Key::Steps, [true, false, false, true, true]),
    ];

    #[test]
    fn each_layer_sets_the_keys_of_its_row_and_no_other() {
        for (key, row) in TABLE {
            for (layer, may) in Layer::ALL.into_iter().zip(row) {
                assert_eq!(layer.keys().contains(&key), may, "{layer:?} {key:?}");
            }
        }
        assert!(Layer::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    /// A layer that says something about every key, each value its own.
    fn everything(model: CollisionModel, alpha: u32, steps: u64) -> Partial {
        Partial {
            model: Some(model),
            storage: Some(StorageKind::Fp16c),
            layout: Layout::csoa(alpha),
            block: Some(Block::ThreeD([alpha, 2, 1])),
            streaming: Some(Streaming::InPlace),
            boundary_launch: Some(BoundaryLaunch::Serial),
            spread: Some(IbSpread::Blocks { l: alpha / 32 }),
            steps: Some(steps),
        }
    }

    /// The layer whose value each key holds, by the values themselves.
    fn winners(s: &Settings, layers: &[(Layer, Partial)]) -> Vec<(Key, Layer)> {
        let mut out = Vec::new();
        for key in Key::ALL {
            let by_value = layers
                .iter()
                .rev()
                .find(|(layer, p)| {
                    layer.keys().contains(&key)
                        && match key {
                            Key::Model => p.model == Some(s.model),
                            Key::Storage => p.storage == Some(s.storage),
                            Key::Layout => p.layout == Some(s.layout),
                            Key::Block => p.block == Some(s.block),
                            Key::Streaming => p.streaming.is_some() && p.streaming == s.streaming,
                            Key::BoundaryLaunch => p.boundary_launch == Some(s.boundary_launch),
                            Key::Spread => p.spread.is_some() && p.spread == s.spread,
                            Key::Steps => p.steps == Some(s.steps),
                        }
                })
                .map_or(Layer::Default, |(layer, _)| *layer);
            assert_eq!(by_value, s.from(key), "{key:?}");
            out.push((key, s.from(key)));
        }
        out
    }

    #[test]
    fn each_key_goes_to_the_last_layer_that_may_set_it() {
        let cache = everything(CollisionModel::Bgk, 64, 1);
        let mut scene = everything(CollisionModel::RmMrt, 128, 2);
        let flags = Partial {
            // A flag for a tuned knob leaves the cache out: here none is given.
            layout: None,
            block: None,
            ..everything(CollisionModel::AcmMrt, 256, 3)
        };
        let device = everything(CollisionModel::Bgk, 32, 0);
        let s = Settings::layered(Some(&device), Some(&cache), &scene, &flags);
        use Layer::*;
        let layers = [
            (Device, device),
            (Cache, cache),
            (Scene, scene),
            (Flags, flags),
        ];
        assert_eq!(
            winners(&s, &layers),
            [
                (Key::Model, Flags),
                (Key::Storage, Flags),
                (Key::Layout, Cache),
                (Key::Block, Cache),
                (Key::Streaming, Flags),
                (Key::BoundaryLaunch, Flags),
                (Key::Spread, Scene),
                (Key::Steps, Flags),
            ]
        );
        assert_eq!(
            (s.model, s.steps, s.layout, s.spread),
            (
                CollisionModel::AcmMrt,
                3,
                Layout::csoa(64).unwrap(),
                Some(IbSpread::Blocks { l: 4 })
            )
        );
        // A scene that names no spreading leaves it to the cache.
        scene.spread = None;
        let s = Settings::layered(None, Some(&cache), &scene, &flags);
        assert_eq!(s.from(Key::Spread), Cache);
        assert_eq!(s.spread, Some(IbSpread::Blocks { l: 2 }));
        // Without the cache the device defaults hold its keys; flags beat them key by key.
        let s = Settings::layered(Some(&device), None, &scene, &flags);
        assert_eq!((s.from(Key::Layout), s.from(Key::Spread)), (Device, Device));
        let layout = Partial {
            layout: Layout::csoa(1024),
            ..Partial::default()
        };
        let s = Settings::layered(Some(&device), Some(&cache), &Partial::default(), &layout);
        assert_eq!((s.from(Key::Layout), s.from(Key::Block)), (Flags, Device));
        assert_eq!(s.block, device.block.unwrap());
        // Nothing but the defaults.
        let s = Settings::layered(None, None, &Partial::default(), &Partial::default());
        assert_eq!(s, Settings::default());
        assert!(Key::ALL.iter().all(|&k| s.from(k) == Default));
    }

    #[test]
    fn a_cache_sets_layout_block_and_spreading_only() {
        let cache = everything(CollisionModel::RmMrt, 64, 7);
        let s = Settings::layered(None, Some(&cache), &Partial::default(), &Partial::default());
        let d = Settings::default();
        assert_eq!(
            (s.model, s.storage, s.streaming, s.boundary_launch, s.steps),
            (d.model, d.storage, d.streaming, d.boundary_launch, d.steps)
        );
        assert_eq!(
            (s.layout, s.block, s.spread),
            (cache.layout.unwrap(), cache.block.unwrap(), cache.spread)
        );
        for key in Key::ALL {
            let cached = [Key::Layout, Key::Block, Key::Spread].contains(&key);
            let want = if cached { Layer::Cache } else { Layer::Default };
            assert_eq!(s.from(key), want, "{key:?}");
        }
        // Its spreading only where there are solids.
        let knobs = Knobs {
            layout: Layout::SOA,
            block: Block::Flat,
            spread: Some(IbSpread::Gather),
        };
        assert_eq!(Partial::cache(knobs, false).spread, None);
        assert_eq!(Partial::cache(knobs, true).spread, Some(IbSpread::Gather));
    }

    #[test]
    fn a_flag_for_a_tuned_knob_leaves_the_whole_cache_out() {
        let cache = everything(CollisionModel::RmMrt, 64, 7);
        for flags in [
            Partial {
                layout: Some(Layout::SOA),
                ..Partial::default()
            },
            Partial {
                block: Some(Block::ThreeD([32, 4, 2])),
                ..Partial::default()
            },
        ] {
            let s = Settings::layered(None, Some(&cache), &Partial::default(), &flags);
            assert!(Key::ALL.iter().all(|&k| s.from(k) != Layer::Cache));
            assert_eq!(s.spread, None);
        }
    }

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        a: RunArgs,
    }

    fn flags_of(args: &[&str]) -> Partial {
        let run = Run::try_parse_from([&["run", "s.toml"], args].concat()).unwrap();
        Partial::flags(&run.a)
    }

    #[test]
    fn the_flags_and_the_scene_file_fill_their_layers() {
        let bare = flags_of(&[]);
        assert_eq!(
            bare,
            Partial {
                storage: Some(StorageKind::Fp32),
                boundary_launch: Some(BoundaryLaunch::Tail),
                ..Partial::default()
            }
        );
        assert!(!bare.sets_tuned_knobs());
        let all = flags_of(&[
            "--model",
            "rm-mrt",
            "--steps",
            "9",
            "--storage",
            "fp16s",
            "--layout",
            "32",
            "--block",
            "32x2x1",
            "--streaming",
            "in-place",
            "--boundary-launch",
            "serial",
        ]);
        assert!(all.sets_tuned_knobs());
        let file = SceneFile::parse(
            "name = \"t\"\ncollision = \"acm-mrt\"\n[physical]\nlength = 1.0\nvelocity = 1.0\n\
             viscosity = 0.05\n[lattice]\nresolution = 8\n[domain]\nsize = [1.0, 1.0, 1.0]\n\
             [run]\nsteps = 40\ncheck_every = 10\n[immersed]\nspread = \"gather\"\n",
        )
        .unwrap();
        let scene = Partial::scene_file(&file);
        assert_eq!(
            (scene.model, scene.steps, scene.spread),
            (Some(CollisionModel::AcmMrt), Some(40), None)
        );
        let s = Settings::layered(None, None, &scene, &bare);
        assert_eq!((s.model, s.steps), (CollisionModel::AcmMrt, 40));
        let s = Settings::layered(None, None, &scene, &all);
        assert_eq!(
            s,
            Settings {
                model: CollisionModel::RmMrt,
                storage: StorageKind::Fp16s,
                layout: Layout::csoa(32).unwrap(),
                block: Block::ThreeD([32, 2, 1]),
                streaming: Some(Streaming::InPlace),
                boundary_launch: BoundaryLaunch::Serial,
                spread: None,
                steps: 9,
                from: [
                    Layer::Flags,
                    Layer::Flags,
                    Layer::Flags,
                    Layer::Flags,
                    Layer::Flags,
                    Layer::Flags,
                    Layer::Default,
                    Layer::Flags,
                ],
            }
        );
        // The built scene adds the spreading it names.
        let built = file.build().unwrap();
        assert_eq!(Partial::scene(&built).spread, Some(IbSpread::Gather));
    }

    /// A scene of 16 x 8 x 8 cells (`extra` appended: solids, an `[immersed]` table).
    fn scene_with(extra: &str) -> Scene {
        let text = format!(
            "name = \"t\"\n[physical]\nlength = 0.1\nvelocity = 0.2\nviscosity = 5e-3\n\
             [lattice]\nresolution = 8\n[domain]\ncells = [16, 8, 8]\n{extra}"
        );
        SceneFile::parse(&text).unwrap().build().unwrap()
    }

    const SPHERE: &str = "[[solids]]\nshape = { type = \"sphere\", radius = 0.02 }\n\
                          position = [0.1, 0.05, 0.05]\n";

    #[test]
    fn the_tuning_line_says_where_the_knobs_came_from() {
        let (plain, solid) = (scene_with(""), scene_with(SPHERE));
        let named = scene_with(&format!("{SPHERE}[immersed]\nspread = \"gather\"\n"));
        let path = Path::new("s.toml");
        let sm90 = DeviceClass::Cuda(Some((9, 0)));
        let off = CacheUse::Off("WHY");
        let none = Partial::default();
        let pick = |scene: &Scene, class, flags: &Partial| {
            Settings::picked(scene, path, class, off, flags)
        };
        let (s, line) = pick(&solid, sm90, &none);
        assert_eq!(
            line,
            "tuning: device defaults for sm_90 (csoa-128, flat, scatter; WHY)"
        );
        assert_eq!(
            s.knobs(true),
            Knobs {
                layout: Layout::csoa(128).unwrap(),
                block: Block::Flat,
                spread: Some(IbSpread::Scatter)
            }
        );
        // No solids: no spreading.
        let (s, line) = pick(&plain, DeviceClass::Cpu, &none);
        assert_eq!(line, "tuning: device defaults for cpu (csoa-32, flat; WHY)");
        assert_eq!(s.knobs(false).spread, None);
        let (_, line) = pick(&plain, DeviceClass::Cuda(Some((7, 5))), &none);
        assert_eq!(
            line,
            "tuning: device defaults for sm_75, not measured (csoa-128, flat; WHY)"
        );
        // A spreading the scene names beats the device's.
        let (s, line) = pick(&named, sm90, &none);
        assert_eq!(s.spread, Some(IbSpread::Gather));
        assert!(line.ends_with("(csoa-128, flat, spread gather as the scene names it; WHY)"));
        // A flag: each knob with its source, and why the cache stayed out.
        let flags = Partial {
            layout: Some(Layout::SOA),
            ..Partial::default()
        };
        let (s, line) = pick(&solid, sm90, &flags);
        assert_eq!(s.layout, Layout::SOA);
        assert_eq!(
            line,
            "tuning: layout soa (--layout), block flat (device defaults for sm_90), spread \
             scatter (device defaults for sm_90); the tuning cache is left out with --layout or \
             --block"
        );
    }
}
