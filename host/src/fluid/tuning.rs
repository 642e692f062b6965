//! The tuning cache: the knobs `murmur fluid tune` found fastest for one scene on one device,
//! kept in a TOML file that `murmur fluid run` reads.
//!
//! An entry is keyed by the backend's device description ([`super::FluidBackend::describe`]),
//! the FNV-1a 64 hash of the scene file's bytes (stable across runs and builds, unlike
//! `std::hash`'s randomly keyed hashers), the storage and the collision model: the things that
//! change which knobs win. A scene edited in any byte is a new scene. The file lives at
//! `$MURMUR_TUNING_CACHE`, else `$XDG_CACHE_HOME/murmur/tuning.toml`, else
//! `$HOME/.cache/murmur/tuning.toml`, and is replaced atomically; a file that cannot be read is
//! reported in one line and treated as empty (the next `tune` replaces it).

use super::ib::spread::{IbSpread, MAX_BLOCK};
use super::{Block, Setup};
use murmur_common::lbm::{CollisionModel, Layout, StorageKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Environment variable naming the cache file (tests and shared machines set it).
pub const CACHE_ENV: &str = "MURMUR_TUNING_CACHE";

/// The cache file: `$MURMUR_TUNING_CACHE`, else `$XDG_CACHE_HOME/murmur/tuning.toml`, else
/// `$HOME/.cache/murmur/tuning.toml`; `None` when none of them is set.
pub fn cache_path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var(CACHE_ENV) {
        return Some(PathBuf::from(p));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("murmur").join("tuning.toml"));
    }
    var("HOME").map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("murmur")
            .join("tuning.toml")
    })
}

/// FNV-1a, 64 bits: a fixed function of the bytes, so a scene's key is the same in every run
/// and every build.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ b as u64).wrapping_mul(PRIME))
}

/// What an entry is looked up by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// The backend's description, e.g. `cuda (NVIDIA H200)`.
    pub device: String,
    /// [`fnv1a64`] of the scene file's bytes, 16 hex digits.
    pub scene: String,
    pub storage: String,
    pub model: String,
}

impl Key {
    pub fn new(
        device: &str,
        scene_bytes: &[u8],
        storage: StorageKind,
        model: CollisionModel,
    ) -> Key {
        Key {
            device: device.to_string(),
            scene: format!("{:016x}", fnv1a64(scene_bytes)),
            storage: storage.name().to_string(),
            model: model.name().to_string(),
        }
    }
}

/// The knobs the tuner sets: layout, thread blocks and, with solids, the spreading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knobs {
    pub layout: Layout,
    pub block: Block,
    /// `None` for scenes without solids.
    pub spread: Option<IbSpread>,
}

impl Knobs {
    /// The knobs `setup` has now.
    pub fn of(setup: &Setup) -> Knobs {
        Knobs {
            layout: setup.layout,
            block: setup.block,
            spread: (!setup.immersed.is_empty()).then_some(setup.immersed.spread),
        }
    }

    /// Sets the knobs on `setup` (the spreading only where there are solids).
    pub fn apply(&self, setup: &mut Setup) {
        setup.layout = self.layout;
        setup.block = self.block;
        if let Some(s) = self.spread {
            setup.immersed.spread = s;
        }
    }

    /// `layout csoa-128, block 32x4x2, spread blocks-4` (no spread without solids).
    pub fn describe(&self) -> String {
        let mut s = format!("layout {}, block {}", self.layout.describe(), self.block);
        if let Some(sp) = self.spread {
            s += &format!(", spread {}", spread_name(sp));
        }
        s
    }
}

/// `scatter`, `binned`, `gather` or `blocks-L`.
pub fn spread_name(s: IbSpread) -> String {
    match s {
        IbSpread::Blocks { l } => format!("blocks-{l}"),
        s => s.name().to_string(),
    }
}

/// The inverse of [`spread_name`].
pub fn parse_spread(s: &str) -> Result<IbSpread, String> {
    match s {
        "scatter" => Ok(IbSpread::Scatter),
        "binned" => Ok(IbSpread::Binned),
        "gather" => Ok(IbSpread::Gather),
        _ => match s.strip_prefix("blocks-").map(str::parse::<u32>) {
            Some(Ok(l)) if (1..=MAX_BLOCK).contains(&l) => Ok(IbSpread::Blocks { l }),
            _ => Err(format!(
                "spread `{s}`: expected scatter, binned, gather or blocks-L (L in 1..={MAX_BLOCK})"
            )),
        },
    }
}

/// The inverse of `Layout::describe`: `soa` or `csoa-ALPHA`.
pub fn parse_layout_name(s: &str) -> Result<Layout, String> {
    if s == "soa" {
        return Ok(Layout::SOA);
    }
    s.strip_prefix("csoa-")
        .and_then(|a| a.parse().ok())
        .and_then(Layout::csoa)
        .ok_or_else(|| format!("layout `{s}`: expected soa or csoa-ALPHA (a power of two)"))
}

/// One tuned scene on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub device: String,
    /// FNV-1a 64 of the scene file's bytes (hex).
    pub scene: String,
    pub storage: String,
    pub model: String,
    /// The scene's path when it was tuned (for people reading the file; not part of the key).
    #[serde(default)]
    pub scene_file: String,
    pub layout: String,
    pub block: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<String>,
    /// Measured ms per step of the winning knobs.
    pub ms_per_step: f64,
    /// When it was tuned, seconds since the UNIX epoch.
    pub tuned_at: u64,
}

impl Entry {
    pub fn new(key: &Key, scene_file: &Path, knobs: Knobs, ms_per_step: f64) -> Entry {
        Entry {
            device: key.device.clone(),
            scene: key.scene.clone(),
            storage: key.storage.clone(),
            model: key.model.clone(),
            scene_file: scene_file.display().to_string(),
            layout: knobs.layout.describe().to_string(),
            block: knobs.block.to_string(),
            spread: knobs.spread.map(spread_name),
            ms_per_step,
            tuned_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    fn matches(&self, key: &Key) -> bool {
        self.device == key.device
            && self.scene == key.scene
            && self.storage == key.storage
            && self.model == key.model
    }

    /// The entry's knobs, or why its text is not a valid setting.
    pub fn knobs(&self) -> Result<Knobs, String> {
        Ok(Knobs {
            layout: parse_layout_name(&self.layout)?,
            block: Block::parse(&self.block)?,
            spread: self.spread.as_deref().map(parse_spread).transpose()?,
        })
    }

    /// The day it was tuned, `YYYY-MM-DD` (UTC).
    pub fn date(&self) -> String {
        date(self.tuned_at)
    }
}

/// The UTC date of `secs` seconds since the UNIX epoch, `YYYY-MM-DD` (the civil-from-days
/// conversion of the proleptic Gregorian calendar).
pub fn date(secs: u64) -> String {
    let days = (secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    format!("{year:04}-{month:02}-{day:02}")
}

/// The cache file's contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    #[serde(default)]
    pub entry: Vec<Entry>,
}

impl Cache {
    /// Reads `path`: empty when the file does not exist, a one-line reason when it cannot be
    /// read or holds anything but valid entries.
    pub fn load(path: &Path) -> Result<Cache, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Cache::default()),
            Err(e) => return Err(e.to_string()),
        };
        let cache: Cache = toml::from_str(&text).map_err(|e| one_line(e.message()))?;
        for (i, e) in cache.entry.iter().enumerate() {
            e.knobs().map_err(|m| format!("entry {}: {m}", i + 1))?;
        }
        Ok(cache)
    }

    /// [`Cache::load`], warning in one line (and starting empty) when the file is unusable.
    pub fn load_or_warn(path: &Path) -> Cache {
        Cache::load(path).unwrap_or_else(|e| {
            eprintln!(
                "murmur: warning: ignoring the tuning cache {}: {e}",
                path.display()
            );
            Cache::default()
        })
    }

    pub fn find(&self, key: &Key) -> Option<&Entry> {
        self.entry.iter().find(|e| e.matches(key))
    }

    /// Adds `entry`, replacing the one of the same key.
    pub fn insert(&mut self, entry: Entry) {
        let key = Key {
            device: entry.device.clone(),
            scene: entry.scene.clone(),
            storage: entry.storage.clone(),
            model: entry.model.clone(),
        };
        self.entry.retain(|e| !e.matches(&key));
        self.entry.push(entry);
    }

    /// Writes the cache to `path` atomically (its folder created when missing).
    pub fn store(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let text = toml::to_string(self).map_err(std::io::Error::other)?;
        crate::atomic_file::write_atomic(path, |w| {
            use std::io::Write;
            w.write_all(
                b"# murmur fluid tune: the fastest knobs per device, scene (FNV-1a 64 of its \
                  bytes), storage and model.\n",
            )?;
            w.write_all(text.as_bytes())
        })
    }
}

/// `s` on one line (toml's messages may span several).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The cache's entry for `key`, with its knobs: `None` without a cache location, file or entry
/// (an unusable file is reported on stderr in one line).
pub fn lookup(key: &Key) -> Option<(Entry, Knobs)> {
    let path = cache_path()?;
    let cache = Cache::load_or_warn(&path);
    let entry = cache.find(key)?.clone();
    let knobs = entry.knobs().ok()?;
    Some((entry, knobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scene_hash_is_a_fixed_function_of_the_bytes() {
        // Reference values of FNV-1a 64.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let k = Key::new(
            "cpu (rayon, 2 threads)",
            b"foobar",
            StorageKind::Fp32,
            CollisionModel::Bgk,
        );
        assert_eq!(k.scene, "85944171f73967e8");
        assert_eq!((k.storage.as_str(), k.model.as_str()), ("fp32", "bgk"));
    }

    #[test]
    fn dates_are_utc_days() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date(1_767_225_599), "2025-12-31");
        assert_eq!(date(1_767_225_600), "2026-01-01");
    }

    #[test]
    fn names_round_trip() {
        for s in [
            IbSpread::Scatter,
            IbSpread::Gather,
            IbSpread::Blocks { l: 2 },
            IbSpread::Blocks { l: 8 },
        ] {
            assert_eq!(parse_spread(&spread_name(s)), Ok(s));
        }
        for l in [
            Layout::SOA,
            Layout::csoa(32).unwrap(),
            Layout::csoa(1024).unwrap(),
        ] {
            assert_eq!(parse_layout_name(&l.describe().to_string()), Ok(l));
        }
        assert!(parse_spread("blocks-0").is_err() && parse_spread("blocks").is_err());
        assert!(parse_layout_name("csoa-3").is_err() && parse_layout_name("x").is_err());
    }

    #[test]
    fn entries_store_load_and_replace() {
        let dir = std::env::temp_dir().join(format!("murmur-tuning-{}", std::process::id()));
        let path = dir.join("sub").join("tuning.toml");
        let key = Key::new("cpu", b"scene", StorageKind::Fp16s, CollisionModel::AcmMrt);
        let knobs = Knobs {
            layout: Layout::csoa(128).unwrap(),
            block: Block::ThreeD([32, 4, 2]),
            spread: Some(IbSpread::Blocks { l: 4 }),
        };
        let mut cache = Cache::default();
        cache.insert(Entry::new(&key, Path::new("s.toml"), knobs, 1.5));
        cache.insert(Entry::new(&key, Path::new("s.toml"), knobs, 1.25));
        assert_eq!(cache.entry.len(), 1);
        cache.store(&path).unwrap();
        let back = Cache::load(&path).unwrap();
        assert_eq!(back, cache);
        assert_eq!(back.find(&key).unwrap().knobs(), Ok(knobs));
        let other = Key::new("cpu", b"scene ", StorageKind::Fp16s, CollisionModel::AcmMrt);
        assert!(back.find(&other).is_none());
        std::fs::write(&path, "entry = [ {").unwrap();
        let e = Cache::load(&path).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
        std::fs::write(&path, back_with_bad_layout(&back)).unwrap();
        assert!(Cache::load(&path).unwrap_err().contains("entry 1: layout"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn back_with_bad_layout(c: &Cache) -> String {
        let mut c = c.clone();
        c.entry[0].layout = "csoa-3".into();
        toml::to_string(&c).unwrap()
    }
}
