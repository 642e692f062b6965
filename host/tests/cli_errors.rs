//! The binary's first-hour errors: parser errors as one line with clap's exit code 2, `--out`
//! folders made only after every check passed, snapshot names without `.npz` refused before any
//! work, an old-format scene told what replaced its keys, and help that lists what there is.

mod support;
use support::{murmur, tmp};

/// Fails with exactly one line on stderr that contains `expect`, nothing on stdout, exit `code`.
fn one_line(args: &[&str], expect: &str, code: i32) -> String {
    let out = murmur(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("murmur: error: "), "{args:?}: {err}");
    assert!(
        err.contains(expect),
        "{args:?}: expected {expect:?} in {err:?}"
    );
    err
}

#[test]
fn parser_errors_are_one_line_with_exit_code_2() {
    let e = one_line(&["flock", "run", "--steps", "-1"], "--steps", 2);
    assert_eq!(
        e.trim_end(),
        "murmur: error: --steps: expected a whole number >= 0, got \"-1\""
    );
    one_line(
        &[
            "fluid",
            "run",
            "assets/fluid/taylor-green.toml",
            "--stpes",
            "5",
        ],
        "unknown flag --stpes (did you mean --steps?)",
        2,
    );
    one_line(&["fluid", "render"], "murmur fluid render needs", 2);
    one_line(&["fluid", "vaildate"], "unknown command \"vaildate\"", 2);
    one_line(
        &["fluid", "validate", "--models", "lbgk"],
        "--models: expected one of bgk, rm-mrt, acm-mrt, got \"lbgk\"",
        2,
    );
}

#[test]
fn snapshot_names_must_end_in_npz() {
    for flag in ["--save", "--init"] {
        one_line(
            &["flock", "run", "--backend", "cpu", flag, "flock.txt"],
            &format!("{flag}: expected a file name ending in .npz, got \"flock.txt\""),
            2,
        );
    }
    assert!(!std::path::Path::new("flock.txt").exists());
}

#[test]
fn out_folders_are_made_only_after_every_check() {
    let base = tmp("cli-errors", "out");
    let _ = std::fs::remove_dir_all(&base);
    let x = |name: &str| base.join(name).to_str().unwrap().to_string();
    let tg = "assets/fluid/taylor-green.toml";
    let (frames0, gif, flock0, bench0, model) =
        (x("frames0"), x("gif"), x("flock0"), x("bench0"), x("model"));
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![
                "fluid",
                "render",
                tg,
                "--backend",
                "cpu",
                "--frames",
                "0",
                "--out",
                &frames0,
            ],
            &frames0,
            "--frames must be at least 1",
        ),
        (
            vec![
                "fluid",
                "render",
                tg,
                "--backend",
                "cpu",
                "--frames",
                "1",
                "--out",
                &gif,
                "--gif",
                "/nonexistent/a.gif",
            ],
            &gif,
            "does not exist",
        ),
        (
            vec![
                "flock",
                "render",
                "--backend",
                "cpu",
                "--frames",
                "0",
                "--out",
                &flock0,
            ],
            &flock0,
            "--frames must be at least 1",
        ),
        (
            vec![
                "flock",
                "bench",
                "--backend",
                "cpu",
                "--steps",
                "0",
                "--out",
                &bench0,
            ],
            &bench0,
            "--steps must be at least 1",
        ),
        (
            vec!["fluid", "run", "/nonexistent/scene.toml", "--out", &model],
            &model,
            "cannot read scene",
        ),
    ];
    for (args, dir, expect) in cases {
        one_line(&args, expect, 1);
        assert!(
            !std::path::Path::new(dir).exists(),
            "{args:?} left the folder {dir}"
        );
    }
    // Without a GPU, --backend cuda stops before the folder exists; with one it runs.
    let cuda = x("cuda");
    let out = murmur(&[
        "fluid",
        "run",
        tg,
        "--backend",
        "cuda",
        "--steps",
        "0",
        "--quiet",
        "--out",
        &cuda,
    ]);
    if !out.status.success() {
        assert!(
            !std::path::Path::new(&cuda).exists(),
            "--backend cuda left {cuda}"
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn an_old_format_scene_is_told_what_replaced_its_keys() {
    let scene = tmp("cli-errors", "old-cavity.toml");
    std::fs::write(
        &scene,
        "name = \"c\"\n[flow]\nkind = \"cavity\"\ndepth_cells = 1\n[physical]\nlength = 1.0\n\
         velocity = 1.0\nviscosity = 0.01\n[lattice]\nresolution = 64\n",
    )
    .unwrap();
    let e = one_line(
        &["fluid", "run", scene.to_str().unwrap(), "--backend", "cpu"],
        "[flow] (line 2) is the first scene format's table; it was replaced by [domain] and [faces]",
        1,
    );
    assert!(e.contains("domain.cells = [64, 64, 1]"), "{e}");
    assert!(e.contains("docs/fluid/scenes.md#migrating"), "{e}");
    assert!(!e.contains("unknown field"), "{e}");
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fluid/scenes.md"),
    )
    .unwrap();
    assert!(
        docs.contains("\n## Migrating\n"),
        "the anchor the line names"
    );
}

#[test]
fn help_lists_what_there_is() {
    let out = murmur(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let cli = murmur::internals::cli::command();
    for name in ["flock", "fluid"] {
        let sub = cli.find_subcommand(name).unwrap();
        let visible = murmur::internals::cli::visible_subcommands(sub);
        assert!(
            help.contains(&format!(": {}.", visible.join(", "))),
            "{name}'s commands in {help}"
        );
    }
    assert!(
        !help.contains("noise") && !help.contains("parity"),
        "{help}"
    );
    let out = murmur(&["fluid", "validate", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for kind in [
        "Taylor-Green",
        "Poiseuille",
        "cavity",
        "Couette",
        "DFG",
        "Galilean",
    ] {
        assert!(help.contains(kind), "{kind} in {help}");
    }
    assert!(!help.contains("about a minute"), "{help}");
}
