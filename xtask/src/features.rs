//! One build for `run` and `test`: the features `cargo build --release -p murmur` (and the
//! `cargo xtask` binary) resolve for each dependency are among those the test build resolves.
//!
//! `cargo test --workspace` resolves features over the normal and dev-dependencies of every
//! member together, `cargo build -p murmur` over murmur's normal ones alone; a dev-dependency that
//! turns on one more feature of a crate the binary uses (say `default` of rustix, under winit)
//! gives that crate, and everything above it up to the binary, another build: ~45 crates and a
//! relink, twice (the next `run` relinks back). `cargo tree` lists each crate with its features
//! in under a second, so `cargo xtask test` checks before it builds anything.

use crate::{cargo, root};
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;

/// `cargo tree`'s `name version features` lines for one selection of packages and edges.
fn tree(args: &[&str]) -> Result<BTreeSet<String>> {
    let out = cargo()
        .current_dir(root())
        .args(["tree", "--prefix", "none", "--format", "{p} {f}"])
        .args(args)
        .output()
        .context("could not start cargo tree")?;
    if !out.status.success() {
        bail!(
            "cargo tree {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(lines(&String::from_utf8_lossy(&out.stdout)))
}

/// The distinct `name version features` lines of `cargo tree` output (`(*)`, the mark of a crate
/// listed before, dropped).
fn lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.trim_end().trim_end_matches(" (*)").trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The lines of `built` that `tested` lacks: crates the test build would compile again, with
/// the features it would give them.
fn rebuilt<'a>(built: &'a BTreeSet<String>, tested: &'a BTreeSet<String>) -> Vec<String> {
    built
        .difference(tested)
        .map(|line| {
            let crate_ = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
            let prefix = format!("{crate_} ");
            let there: Vec<&str> = tested
                .iter()
                .filter_map(|t| t.strip_prefix(&prefix))
                .collect();
            let features = line[prefix.len().min(line.len())..].trim();
            format!(
                "{crate_}: features [{features}] in the binary's build, [{}] in the test build",
                there.join("] or [")
            )
        })
        .collect()
}

/// Fails naming each crate whose features differ between the builds `cargo xtask run` makes
/// (`-p murmur` and `-p xtask`, release) and the one `cargo test --workspace` makes.
pub fn check_one_build() -> Result<()> {
    let tested = tree(&["--workspace", "--edges", "normal,build,dev"])?;
    let mut differ = Vec::new();
    for package in ["murmur", "xtask"] {
        let built = tree(&["--package", package, "--edges", "normal,build"])?;
        differ.extend(rebuilt(&built, &tested));
    }
    if !differ.is_empty() {
        bail!(
            "the test build would compile these crates again, with other features than \
             `cargo xtask run` gives them (a dev-dependency turns them on; keep its features to \
             those of the normal dependencies, see the workspace Cargo.toml): {}",
            differ.join("; ")
        );
    }
    eprintln!(
        "xtask: the test build reuses every dependency of the binary (same features: cargo tree)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dev_dependency_feature_is_named() {
        let built = lines("rustix v1.1.6 alloc,fs,std\nlibc v0.2.191 default,std (*)\n");
        let tested = lines(
            "rustix v1.1.6 alloc,default,fs,std\nlibc v0.2.191 default,std\nproptest v1.12.0 std\n",
        );
        assert_eq!(
            rebuilt(&built, &tested),
            [
                "rustix v1.1.6: features [alloc,fs,std] in the binary's build, \
              [alloc,default,fs,std] in the test build"
            ]
        );
    }

    #[test]
    fn crates_only_the_tests_use_and_a_second_feature_set_pass() {
        // The same crate may appear twice (a build-dependency resolves its features apart).
        let built = lines("half v2.7.1 num-traits\n");
        let tested = lines("half v2.7.1 num-traits\nhalf v2.7.1 \nproptest v1.12.0 std\n");
        assert!(rebuilt(&built, &tested).is_empty());
    }
}
