//! Parser errors as one line in murmur's own form (`murmur: error: --steps: expected a whole
//! number >= 0, got "-1"`): the flag, what it expects and what it got, from clap's error
//! context and the command tree; the usage stays on `--help`.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Command;
use std::any::TypeId;
use std::ffi::OsString;

/// What a parse error means for the process: help or version text to print as clap prints it
/// (stdout, exit 0; the help of a bare command on stderr), or one error line.
pub enum Outcome {
    /// Print the error as clap renders it (`clap::Error::exit`).
    Clap,
    /// This line on stderr, then exit with the code.
    Line(String, i32),
}

/// What to do with `e`, a parse error of `args` (the program name first) against `root`
/// (`super::command()`).
pub fn outcome(e: &clap::Error, root: &Command, args: &[OsString]) -> Outcome {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Outcome::Clap,
        _ => Outcome::Line(
            format!("murmur: error: {}", message(e, root, args)),
            e.exit_code(),
        ),
    }
}

/// The error's one line, without the `murmur: error: ` prefix.
pub fn message(e: &clap::Error, root: &Command, args: &[OsString]) -> String {
    let (cmd, path) = subcommand_of(root, args);
    let string = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => Some(v.join(", ")),
        Some(ContextValue::StyledStr(s)) => Some(s.to_string()),
        _ => None,
    };
    let strings = |k| match e.get(k) {
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    let suggestion = |k| match e.get(k) {
        Some(ContextValue::Strings(v)) if !v.is_empty() => Some(v.join(" or ")),
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let invalid_arg = string(ContextKind::InvalidArg).unwrap_or_default();
    let flag = flag_of(&invalid_arg);
    let value = string(ContextKind::InvalidValue);
    let got = || match value.as_deref() {
        Some("") | None => "nothing".to_string(),
        Some(v) => format!("\"{v}\""),
    };
    let help = || format!("see murmur {} --help", path.join(" "));
    match e.kind() {
        ErrorKind::ValueValidation => {
            let arg = find_arg(cmd, &flag);
            let v = value.clone().unwrap_or_default();
            let source = std::error::Error::source(e)
                .map(|s| s.to_string())
                .unwrap_or_default();
            // A narrower range than the type's ("8 is not in 16..=1024") in the parser's words;
            // the type's own range keeps the words below.
            let upper = source.rsplit("..=").next().unwrap_or_default();
            let type_max = ["255", "65535", "4294967295", "18446744073709551615"];
            if source.contains(" is not in ") && !type_max.contains(&upper) {
                return format!("{flag}: {source}");
            }
            if let Some(what) = arg.and_then(|a| expects(a, &v)) {
                return format!("{flag}: expected {what}, got {}", got());
            }
            if source.is_empty() {
                format!("{flag}: invalid value {}", got())
            } else if source.contains(&v) || source.starts_with("expected") {
                format!("{flag}: {source}")
            } else {
                format!("{flag}: {source}, got {}", got())
            }
        }
        ErrorKind::InvalidValue => {
            let arg = find_arg(cmd, &flag);
            let valid = strings(ContextKind::ValidValue);
            let what = if !valid.is_empty() {
                format!("one of {}", valid.join(", "))
            } else {
                arg.and_then(|a| expects(a, ""))
                    .or_else(|| arg.and_then(value_name))
                    .unwrap_or_else(|| "a value".into())
            };
            let mut line = format!("{flag}: expected {what}, got {}", got());
            if let Some(s) = suggestion(ContextKind::SuggestedValue) {
                line.push_str(&format!(" (did you mean {s}?)"));
            }
            line
        }
        ErrorKind::UnknownArgument => {
            let what = if invalid_arg.starts_with('-') {
                format!("unknown flag {invalid_arg}")
            } else {
                format!("unexpected argument \"{invalid_arg}\"")
            };
            let suggested = suggestion(ContextKind::SuggestedArg)
                .or_else(|| suggestion(ContextKind::SuggestedSubcommand));
            match suggested {
                Some(s) => format!("{what} (did you mean {s}?)"),
                None => format!("{what} for murmur {} ({})", path.join(" "), help()),
            }
        }
        ErrorKind::InvalidSubcommand => {
            let sub = string(ContextKind::InvalidSubcommand).unwrap_or_default();
            let mut line = format!(
                "unknown command \"{sub}\" of murmur {}: expected one of {}",
                path.join(" "),
                super::visible_subcommands(cmd).join(", ")
            );
            if let Some(s) = suggestion(ContextKind::SuggestedSubcommand) {
                line.push_str(&format!(" (did you mean {s}?)"));
            }
            line
        }
        ErrorKind::MissingSubcommand => format!(
            "murmur {} needs a command: one of {}",
            path.join(" "),
            super::visible_subcommands(cmd).join(", ")
        ),
        ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> = strings(ContextKind::InvalidArg)
                .iter()
                .map(|a| a.replace(['<', '>'], ""))
                .collect();
            format!(
                "murmur {} needs {} ({})",
                path.join(" "),
                missing.join(" and "),
                help()
            )
        }
        ErrorKind::ArgumentConflict => {
            let prior = strings(ContextKind::PriorArg);
            let prior: Vec<String> = prior.iter().map(|a| flag_of(a)).collect();
            if prior.is_empty() || prior == [flag.clone()] {
                format!("{flag} given twice")
            } else {
                format!("{flag} cannot be used with {}", prior.join(", "))
            }
        }
        ErrorKind::TooManyValues => format!("{flag}: one value expected, got {} too", got()),
        _ => clap_line(e),
    }
}

/// Clap's own message, on one line and without its `error: ` prefix (the kinds murmur's
/// arguments never raise).
fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").trim().to_string()
}

/// The subcommand `args` name (the deepest one reached) and its path below `murmur`.
fn subcommand_of<'a>(root: &'a Command, args: &[OsString]) -> (&'a Command, Vec<String>) {
    let mut cmd = root;
    let mut path = Vec::new();
    for a in args.iter().skip(1) {
        let Some(a) = a.to_str() else { continue };
        if let Some(sub) = cmd.find_subcommand(a) {
            path.push(sub.get_name().to_string());
            cmd = sub;
        }
    }
    (cmd, path)
}

/// `--steps` of `--steps <STEPS>`; `SCENE.toml` of `<SCENE.toml>`.
fn flag_of(invalid_arg: &str) -> String {
    let first = invalid_arg.split([' ', '=']).next().unwrap_or_default();
    first.trim_matches(['<', '>']).to_string()
}

/// The argument `flag` (`--steps`, or a positional's value name) of `cmd`.
fn find_arg<'a>(cmd: &'a Command, flag: &str) -> Option<&'a clap::Arg> {
    cmd.get_arguments().find(|a| match flag.strip_prefix("--") {
        Some(long) => a.get_long() == Some(long),
        None => {
            a.is_positional()
                && (a.get_id() == flag
                    || a.get_value_names()
                        .is_some_and(|n| n.iter().any(|n| n == flag)))
        }
    })
}

/// An argument's value name (`K`, `FILE.npz`) as the thing it expects.
fn value_name(a: &clap::Arg) -> Option<String> {
    a.get_value_names()
        .and_then(|n| n.first())
        .map(|n| n.to_string())
}

/// What a number-typed argument expects, in words, given the value it got (which picks between
/// "a whole number >= 0" and the type's range); `None` for other types (their parsers say).
fn expects(a: &clap::Arg, got: &str) -> Option<String> {
    let id = a.get_value_parser().type_id();
    let is = |t: TypeId| id == t;
    let unsigned = [
        (TypeId::of::<u8>(), u8::MAX as u128),
        (TypeId::of::<u16>(), u16::MAX as u128),
        (TypeId::of::<u32>(), u32::MAX as u128),
        (TypeId::of::<u64>(), u64::MAX as u128),
        (TypeId::of::<usize>(), usize::MAX as u128),
    ];
    if let Some(&(_, max)) = unsigned.iter().find(|(t, _)| is(*t)) {
        let too_large = got.trim().parse::<u128>().is_ok_and(|v| v > max);
        return Some(if too_large {
            format!("a whole number from 0 to {max}")
        } else {
            "a whole number >= 0".into()
        });
    }
    let signed = [
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
    ];
    if signed.iter().any(|t| is(*t)) {
        return Some("a whole number".into());
    }
    if is(TypeId::of::<f32>()) || is(TypeId::of::<f64>()) {
        return Some("a number".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one line `args` (below `murmur`) get, and the exit code.
    fn line(args: &[&str]) -> (String, i32) {
        let argv: Vec<OsString> = std::iter::once("murmur")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let e = match crate::cli::Cli::parse_args(&argv) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e,
        };
        match outcome(&e, &crate::cli::command(), &argv) {
            Outcome::Line(l, code) => {
                assert!(!l.contains('\n'), "{args:?}: more than one line: {l}");
                (l, code)
            }
            Outcome::Clap => panic!("{args:?}: help, not an error"),
        }
    }

    #[test]
    fn a_negative_count_reaches_the_value_parser() {
        let (l, code) = line(&["flock", "run", "--steps", "-1"]);
        assert_eq!(
            l,
            "murmur: error: --steps: expected a whole number >= 0, got \"-1\""
        );
        assert_eq!(code, 2);
        let (l, _) = line(&["fluid", "run", "x.toml", "--steps", "-1"]);
        assert_eq!(
            l,
            "murmur: error: --steps: expected a whole number >= 0, got \"-1\""
        );
        let (l, _) = line(&["fluid", "render", "x.toml", "--frames", "ten", "--out", "o"]);
        assert_eq!(
            l,
            "murmur: error: --frames: expected a whole number >= 0, got \"ten\""
        );
    }

    #[test]
    fn numbers_out_of_range_and_floats() {
        let (l, _) = line(&[
            "fluid",
            "render",
            "x.toml",
            "--frames",
            "5000000000",
            "--out",
            "o",
        ]);
        assert_eq!(
            l,
            "murmur: error: --frames: expected a whole number from 0 to 4294967295, got \"5000000000\""
        );
        let (l, _) = line(&["flock", "run", "--scale", "big"]);
        assert_eq!(l, "murmur: error: --scale: expected a number, got \"big\"");
        // A negative float reaches the flock's own check (a negative scale), so it parses.
        assert!(crate::cli::Cli::parse_args(["murmur", "flock", "run", "--scale", "-5"]).is_ok());
    }

    #[test]
    fn value_enums_list_their_values() {
        let (l, code) = line(&["fluid", "run", "x.toml", "--backend", "gpu"]);
        assert_eq!(
            l,
            "murmur: error: --backend: expected one of auto, cpu, cuda, got \"gpu\" (did you mean cpu?)"
        );
        assert_eq!(code, 2);
        let (l, _) = line(&["fluid", "run", "x.toml", "--backend"]);
        assert!(
            l.starts_with("murmur: error: --backend: expected one of auto, cpu, cuda, got nothing"),
            "{l}"
        );
    }

    #[test]
    fn custom_parsers_keep_their_words() {
        let (l, _) = line(&["fluid", "run", "x.toml", "--layout", "3"]);
        assert_eq!(
            l,
            "murmur: error: --layout: alpha must be a power of two, got 3"
        );
        let (l, _) = line(&["flock", "run", "--save", "out.txt"]);
        assert_eq!(
            l,
            "murmur: error: --save: expected a file name ending in .npz, got \"out.txt\""
        );
    }

    #[test]
    fn unknown_flags_and_commands() {
        let (l, code) = line(&["fluid", "run", "x.toml", "--step", "3"]);
        assert_eq!(
            l,
            "murmur: error: unknown flag --step (did you mean --steps?)"
        );
        assert_eq!(code, 2);
        let (l, _) = line(&["fluid", "run", "x.toml", "--zzz"]);
        assert_eq!(
            l,
            "murmur: error: unknown flag --zzz for murmur fluid run (see murmur fluid run --help)"
        );
        let (l, _) = line(&["fluid", "rn"]);
        assert!(
            l.starts_with("murmur: error: unknown command \"rn\" of murmur fluid: expected one of run, validate,")
                && l.ends_with("(did you mean ranks-check or render?)"),
            "{l}"
        );
        assert!(!l.contains("noise") && !l.contains("parity"), "hidden: {l}");
    }

    #[test]
    fn missing_arguments_and_conflicts() {
        let (l, code) = line(&["fluid", "run"]);
        assert_eq!(
            l,
            "murmur: error: murmur fluid run needs SCENE.toml (see murmur fluid run --help)"
        );
        assert_eq!(code, 2);
        let (l, _) = line(&["flock", "render"]);
        assert_eq!(
            l,
            "murmur: error: murmur flock render needs --frames K and --out DIR (see murmur flock render --help)"
        );
        let (l, _) = line(&["flock", "bench", "--scales", "1", "--constant-density"]);
        assert_eq!(
            l,
            "murmur: error: --scales cannot be used with --constant-density"
        );
        let (l, _) = line(&["flock", "run", "--steps", "1", "--steps", "2"]);
        assert_eq!(l, "murmur: error: --steps given twice");
    }

    #[test]
    fn help_and_version_are_not_errors() {
        for args in [&["--help"][..], &["fluid", "run", "--help"], &["--version"]] {
            let argv: Vec<OsString> = std::iter::once("murmur")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect();
            let e = crate::cli::Cli::parse_args(&argv).err().unwrap();
            assert!(matches!(
                outcome(&e, &crate::cli::command(), &argv),
                Outcome::Clap
            ));
            assert_eq!(e.exit_code(), 0, "{args:?}");
        }
    }

    #[test]
    fn the_top_level_lists_every_visible_subcommand() {
        let cmd = crate::cli::command();
        for name in ["flock", "fluid"] {
            let sub = cmd.find_subcommand(name).unwrap();
            let about = sub.get_about().unwrap().to_string();
            let visible = crate::cli::visible_subcommands(sub);
            assert!(visible.len() >= 8, "{name}: {visible:?}");
            assert!(
                about.ends_with(&format!(": {}.", visible.join(", "))),
                "{name}: {about}"
            );
        }
    }
}
