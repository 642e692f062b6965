//! The command synopses of README.md ("## The CLI") and of docs/ against the CLI definition:
//! for every subcommand a page gives a synopsis of (a `murmur ...` line with `[--...]` in a
//! fenced block), the `--flags` it names are the flags clap defines (hidden flags and `--help`
//! left out); an example command line names only flags that exist; the README's block has a
//! synopsis of every visible subcommand. The flags come from `murmur::internals::cli::command()`, so a new
//! flag needs only its docs.

use clap::Command;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The synopses' placeholders and the clap group (the flattened `Args` struct) each stands for.
const PLACEHOLDERS: [(&str, &str); 2] =
    [("flock options", "FlockArgs"), ("view options", "LookArgs")];

type Flags = BTreeSet<String>;

/// One `murmur ...` command line of a fenced block, with its continuation lines.
struct CommandLine {
    file: String,
    line: usize,
    /// Below `murmur`: `["fluid", "run"]`.
    path: Vec<String>,
    flags: Flags,
    placeholders: Vec<String>,
    /// Whether it is a synopsis (`[--...]` or a placeholder), not an example.
    synopsis: bool,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `--flag` in `text`.
fn flags_in(text: &str) -> Flags {
    let mut out = Flags::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts = b[i] == b'-'
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_lowercase()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-'));
        if starts {
            let mut j = i + 2;
            while j < b.len()
                && (b[j].is_ascii_lowercase() || b[j].is_ascii_digit() || b[j] == b'-')
            {
                j += 1;
            }
            out.insert(text[i..j].trim_end_matches('-').to_string());
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// `[flock options]`-style placeholders in `text`.
fn placeholders_in(text: &str) -> Vec<String> {
    PLACEHOLDERS
        .iter()
        .filter(|(p, _)| text.contains(&format!("[{p}]")))
        .map(|(p, _)| p.to_string())
        .collect()
}

/// The fenced blocks of `text`: (first line number, lines).
fn blocks(text: &str) -> Vec<(usize, Vec<&str>)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            match current.take() {
                Some(b) => out.push(b),
                None => current = Some((i + 2, Vec::new())),
            }
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(l);
        }
    }
    out
}

/// A command line's text after `murmur ` (also `cargo xtask run -- `), without a `#` comment.
fn command_text(l: &str) -> Option<&str> {
    let t = l.trim_start();
    let t = t
        .strip_prefix("murmur ")
        .or_else(|| t.strip_prefix("cargo xtask run -- "))?;
    Some(t.split(" #").next().unwrap_or(t))
}

/// `view options: [...]`: a placeholder's definition line.
fn definition(l: &str) -> Option<&'static str> {
    let t = l.trim_start();
    PLACEHOLDERS
        .iter()
        .find(|(p, _)| t.starts_with(&format!("{p}:")))
        .map(|(p, _)| *p)
}

/// The command lines and placeholder definitions of one page's fenced blocks.
fn parse_page(
    file: &str,
    text: &str,
    cli: &Command,
) -> (Vec<CommandLine>, Vec<(String, Flags, usize)>) {
    let mut lines = Vec::new();
    let mut defs: Vec<(String, Flags, usize)> = Vec::new();
    for (first, block) in blocks(text) {
        let mut current: Option<CommandLine> = None;
        let mut def: Option<(String, Flags, usize)> = None;
        for (k, l) in block.iter().enumerate() {
            let n = first + k;
            let continues =
                l.starts_with(' ') && command_text(l).is_none() && definition(l).is_none();
            if continues {
                let text = l.split(" #").next().unwrap_or(l);
                if let Some(c) = current.as_mut() {
                    c.flags.extend(flags_in(text));
                    c.placeholders.extend(placeholders_in(text));
                    c.synopsis |= text.contains("[--") || !placeholders_in(text).is_empty();
                } else if let Some((_, f, _)) = def.as_mut() {
                    f.extend(flags_in(text));
                }
                continue;
            }
            lines.extend(current.take());
            defs.extend(def.take());
            if let Some(p) = definition(l) {
                def = Some((p.to_string(), flags_in(l), n));
            } else if let Some(t) = command_text(l) {
                let mut cmd = cli;
                let mut path = Vec::new();
                for word in t.split_whitespace() {
                    match cmd.find_subcommand(word) {
                        Some(sub) => {
                            path.push(sub.get_name().to_string());
                            cmd = sub;
                        }
                        None => break,
                    }
                }
                current = Some(CommandLine {
                    file: file.to_string(),
                    line: n,
                    path,
                    flags: flags_in(t),
                    placeholders: placeholders_in(t),
                    synopsis: t.contains("[--") || !placeholders_in(t).is_empty(),
                });
            }
        }
        lines.extend(current.take());
        defs.extend(def.take());
    }
    (lines, defs)
}

/// The subcommand at `path` below `cli`.
fn leaf<'a>(cli: &'a Command, path: &[String]) -> &'a Command {
    path.iter().fold(cli, |c, name| {
        c.find_subcommand(name).expect("a subcommand")
    })
}

/// The flags clap defines for `cmd`: every long flag that `--help` shows, `--help` left out.
fn cli_flags(cmd: &Command) -> Flags {
    cmd.get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .filter(|l| *l != "help" && *l != "version")
        .map(|l| format!("--{l}"))
        .collect()
}

/// The flags of the clap group `group` (a flattened `Args` struct) of `cmd`.
fn group_flags(cmd: &Command, group: &str) -> Flags {
    let g = cmd
        .get_groups()
        .find(|g| g.get_id() == group)
        .unwrap_or_else(|| panic!("murmur {} has no group {group}", cmd.get_name()));
    let ids: Vec<&str> = g.get_args().map(|id| id.as_str()).collect();
    cmd.get_arguments()
        .filter(|a| ids.contains(&a.get_id().as_str()) && !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .collect()
}

/// Every visible leaf subcommand: `["flock", "run"]`, ...
fn leaves(cmd: &Command, above: &[String], out: &mut Vec<Vec<String>>) {
    for sub in cmd.get_subcommands().filter(|c| !c.is_hide_set()) {
        let mut path = above.to_vec();
        path.push(sub.get_name().to_string());
        if sub.has_subcommands() {
            leaves(sub, &path, out);
        } else {
            out.push(path);
        }
    }
}

fn difference(docs: &Flags, cli: &Flags) -> String {
    let missing: Vec<&String> = cli.difference(docs).collect();
    let extra: Vec<&String> = docs.difference(cli).collect();
    let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("missing {}", list(&missing)));
    }
    if !extra.is_empty() {
        parts.push(format!("not in the CLI {}", list(&extra)));
    }
    parts.join("; ")
}

/// README.md and every page under docs/.
fn pages() -> Vec<(String, String)> {
    let mut files = vec![root().join("README.md")];
    for dir in ["docs", "docs/fluid"] {
        let mut md: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        md.sort();
        files.extend(md);
    }
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root()).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The README's "## The CLI" section.
fn readme_cli_section(readme: &str) -> &str {
    let start = readme.find("\n## The CLI").expect("README has ## The CLI");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

#[test]
fn synopses_name_every_flag_of_the_cli() {
    let cli = murmur::internals::cli::command();
    let mut failures = Vec::new();
    let mut synopses = 0;
    for (file, text) in pages() {
        let (lines, defs) = parse_page(&file, &text, &cli);
        // A placeholder defined on the page stands for its group's flags.
        for (p, flags, n) in &defs {
            let group = PLACEHOLDERS.iter().find(|(q, _)| q == p).unwrap().1;
            let cmd = lines
                .iter()
                .filter(|c| c.placeholders.contains(p))
                .map(|c| leaf(&cli, &c.path))
                .next();
            if let Some(cmd) = cmd {
                let d = difference(flags, &group_flags(cmd, group));
                if !d.is_empty() {
                    failures.push(format!("{file}:{n}: \"{p}\": {d}"));
                }
            }
        }
        let mut per_command: BTreeMap<Vec<String>, (Flags, usize)> = BTreeMap::new();
        for c in &lines {
            if c.path.len() < 2 || leaf(&cli, &c.path).has_subcommands() {
                failures.push(format!(
                    "{}:{}: `murmur {}` names no subcommand",
                    c.file,
                    c.line,
                    c.path.join(" ")
                ));
                continue;
            }
            let cmd = leaf(&cli, &c.path);
            let all = cli_flags(cmd);
            if c.synopsis {
                let entry = per_command
                    .entry(c.path.clone())
                    .or_insert_with(|| (Flags::new(), c.line));
                entry.0.extend(c.flags.iter().cloned());
                for p in &c.placeholders {
                    let group = PLACEHOLDERS.iter().find(|(q, _)| q == p).unwrap().1;
                    entry.0.extend(group_flags(cmd, group));
                }
            } else {
                let extra: Vec<&String> = c.flags.difference(&all).collect();
                if !extra.is_empty() {
                    failures.push(format!(
                        "{}:{}: example `murmur {}` names flags the CLI lacks: {extra:?}",
                        c.file,
                        c.line,
                        c.path.join(" ")
                    ));
                }
            }
        }
        for (path, (flags, line)) in &per_command {
            synopses += 1;
            let d = difference(flags, &cli_flags(leaf(&cli, path)));
            if !d.is_empty() {
                failures.push(format!(
                    "{file}:{line}: the synopsis of `murmur {}`: {d}",
                    path.join(" ")
                ));
            }
        }
    }
    assert!(
        synopses >= 30,
        "only {synopses} synopses found: is the parser broken?"
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_readme_has_a_synopsis_of_every_subcommand() {
    let cli = murmur::internals::cli::command();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (lines, _) = parse_page("README.md", readme_cli_section(&readme), &cli);
    let documented: BTreeSet<Vec<String>> = lines
        .iter()
        .filter(|c| c.synopsis)
        .map(|c| c.path.clone())
        .collect();
    let mut all = Vec::new();
    leaves(&cli, &[], &mut all);
    let missing: Vec<String> = all
        .iter()
        .filter(|p| !documented.contains(*p))
        .map(|p| format!("murmur {}", p.join(" ")))
        .collect();
    assert!(all.len() >= 19, "{all:?}");
    assert!(
        missing.is_empty(),
        "README.md, ## The CLI: no synopsis of {}",
        missing.join(", ")
    );
}

#[test]
fn the_readme_table_of_flock_options_is_the_cli_s() {
    let cli = murmur::internals::cli::command();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme_cli_section(&readme);
    let start = section
        .find("\nFlock options")
        .expect("a paragraph \"Flock options\" in ## The CLI");
    let table: Flags = section[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `"))
        .flat_map(|cell| flags_in(cell.split('|').next().unwrap_or_default()))
        .collect();
    let run = leaf(&cli, &["flock".into(), "run".into()]);
    let d = difference(&table, &group_flags(run, "FlockArgs"));
    assert!(d.is_empty(), "README.md, the flock options table: {d}");
}

#[test]
fn the_parser_reads_synopses_as_meant() {
    let cli = murmur::internals::cli::command();
    let page = "```\nmurmur fluid render SCENE.toml --frames K [--every S] # a --comment\n    \
                [--gif FILE.gif] [view options]\n   view options: [--view V]\n                 \
                [--axis A]\nmurmur flock run --steps 3\n```\n";
    let (lines, defs) = parse_page("t.md", page, &cli);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].path, ["fluid", "render"]);
    assert_eq!(
        lines[0].flags.iter().collect::<Vec<_>>(),
        ["--every", "--frames", "--gif"]
    );
    assert_eq!(lines[0].placeholders, ["view options"]);
    assert!(lines[0].synopsis && !lines[1].synopsis);
    assert_eq!(defs.len(), 1);
    assert_eq!(defs[0].1.iter().collect::<Vec<_>>(), ["--axis", "--view"]);
    assert_eq!(
        flags_in("a-- b --x-split N, -- -1 --gpus"),
        ["--gpus", "--x-split"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}
