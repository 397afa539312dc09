//! `spv-subgroup lower DIR -o OUTDIR` and `lower A B -o DIR`: the tree is mirrored, each output
//! verified and written atomically, failures reported per file in input order with one summary,
//! and the exit status the highest any file calls for (docs/cli.md, "Lowering a tree").
//!
//! Modules are compiled from GLSL with `glslangValidator` at test time (a missing tool fails the
//! test with an install hint); outputs are checked with `spirv-val`.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use spv_subgroup_tests::tools;

/// A tree of nested directories with lowered, unchanged and ignored files.
fn tree(root: &Path) -> (Vec<u8>, Vec<u8>) {
    let (ex, pl) = (example_bytes(), to_bytes(&plain_words()));
    write(root, "in/a.spv", &ex);
    write(root, "in/plain.spv", &pl);
    write(root, "in/sub/b.spv", &ex);
    write(root, "in/sub/deeper/still/c.spv", &ex);
    write(root, "in/notes.txt", b"not a module");
    write(root, "in/sub/shader.comp", b"#version 450\n");
    (ex, pl)
}

#[test]
fn a_tree_is_mirrored_lowered_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let (ex, pl) = tree(dir.path());
    let o = run(&["lower", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    // Only modules are written; other files are not copied.
    assert_eq!(
        files_below(&dir.path().join("out")),
        ["a.spv", "plain.spv", "sub/b.spv", "sub/deeper/still/c.spv"]
    );
    // The same bytes a single-file run writes; an unchanged module is its input byte for byte.
    let single = run(&["lower", "in/a.spv", "-o", "single.spv"], dir.path());
    assert_eq!(code(&single), 0, "{}", show(&single));
    let single = std::fs::read(dir.path().join("single.spv")).unwrap();
    assert_ne!(single, ex, "the example changes when lowered");
    for rel in ["a.spv", "sub/b.spv", "sub/deeper/still/c.spv"] {
        let out = std::fs::read(dir.path().join("out").join(rel)).unwrap();
        assert_eq!(out, single, "{rel}");
        tools::spirv_val(&words(&out), "vulkan1.1").unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
    assert_eq!(std::fs::read(dir.path().join("out/plain.spv")).unwrap(), pl);
    // One summary line, no per-file chatter.
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("4 files into `out` (target vulkan1.1): 3 lowered (")
            && err.trim_end().ends_with(", 1 unchanged"),
        "{err}"
    );
    // No temporary file is left anywhere.
    assert!(
        !files_below(dir.path()).iter().any(|f| f.contains(".tmp")),
        "{:?}",
        files_below(dir.path())
    );
    // --quiet: nothing at all.
    let o = run(&["lower", "--quiet", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(o.stderr.is_empty(), "{}", show(&o));
}

#[test]
fn several_files_go_into_a_directory_by_name() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    let o = run(
        &[
            "lower",
            "in/a.spv",
            "in/sub/b.spv",
            "in/plain.spv",
            "-o",
            "flat",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        files_below(&dir.path().join("flat")),
        ["a.spv", "b.spv", "plain.spv"]
    );
    // A directory and a file together: the directory's files keep their relative paths.
    let o = run(&["lower", "in/sub", "in/a.spv", "-o", "mixed"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        files_below(&dir.path().join("mixed")),
        ["a.spv", "b.spv", "deeper/still/c.spv"]
    );
}

#[test]
fn refused_files_are_reported_in_order_and_the_rest_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (ex, _) = tree(dir.path());
    // Malformed modules sort before, between and after the good ones.
    write(dir.path(), "in/0junk.spv", b"junk");
    write(dir.path(), "in/m/junk.spv", &[0u8; 20]);
    write(dir.path(), "in/zz.spv", &ex[..ex.len() - 4]);
    let o = run(&["lower", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    let err = stderr(&o);
    let named: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("error: "))
        .map(|l| l.split('`').nth(1).unwrap_or(l))
        .collect();
    assert_eq!(
        named,
        ["in/0junk.spv", "in/m/junk.spv", "in/zz.spv"],
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.contains("3 lowered") && l.ends_with("3 refused (3 malformed)")),
        "{err}"
    );
    assert_eq!(
        files_below(&dir.path().join("out")),
        ["a.spv", "plain.spv", "sub/b.spv", "sub/deeper/still/c.spv"]
    );
}

#[test]
fn a_target_that_cannot_take_a_module_refuses_it_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    // A target without any subgroup feature: the example cannot be lowered for it, the plain
    // shader can (nothing to do).
    std::fs::write(
        dir.path().join("bare.json"),
        br#"{"name": "bare", "spirv_version": [1, 3], "ops": {}}"#,
    )
    .unwrap();
    let o = run(
        &["lower", "--target", "bare.json", "in", "-o", "out"],
        dir.path(),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains("`in/a.spv`") && err.contains("bare"), "{err}");
    assert!(
        err.contains("0 lowered") && err.contains("3 refused ("),
        "{err}"
    );
    assert_eq!(files_below(&dir.path().join("out")), ["plain.spv"]);
}

#[test]
fn unreadable_inputs_and_unwritable_outputs_exit_2_and_the_rest_is_written() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    // A `*.spv` link to nowhere is a missing build product, not something to skip.
    std::os::unix::fs::symlink("missing.spv", dir.path().join("in/dangling.spv")).unwrap();
    // `out/sub` is a file, so nothing can be written below it.
    write(dir.path(), "out/sub", b"in the way");
    let o = run(&["lower", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains("cannot read `in/dangling.spv`"), "{err}");
    assert!(err.contains("out/sub/b.spv"), "{err}");
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.ends_with("3 IO errors")),
        "{err}"
    );
    assert_eq!(
        files_below(&dir.path().join("out")),
        ["a.spv", "plain.spv", "sub"]
    );
    assert_eq!(
        std::fs::read(dir.path().join("out/sub")).unwrap(),
        b"in the way"
    );
}

#[test]
fn links_to_modules_are_lowered_links_to_directories_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    std::os::unix::fs::symlink("a.spv", dir.path().join("in/alias.spv")).unwrap();
    std::os::unix::fs::symlink("sub", dir.path().join("in/loop")).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("in/sub/self")).unwrap();
    let o = run(&["lower", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = dir.path().join("out");
    assert_eq!(
        files_below(&out),
        [
            "a.spv",
            "alias.spv",
            "plain.spv",
            "sub/b.spv",
            "sub/deeper/still/c.spv"
        ]
    );
    // The link's output is a file of its own, with the lowered module.
    let alias = out.join("alias.spv");
    assert!(!alias.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(
        std::fs::read(&alias).unwrap(),
        std::fs::read(out.join("a.spv")).unwrap()
    );
}

#[test]
fn an_output_inside_the_input_is_not_lowered_again() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    for _ in 0..2 {
        let o = run(&["lower", "in", "-o", "in/lowered"], dir.path());
        assert_eq!(code(&o), 0, "{}", show(&o));
        assert!(stderr(&o).starts_with("4 files into"), "{}", show(&o));
    }
    assert_eq!(
        files_below(&dir.path().join("in/lowered")),
        ["a.spv", "plain.spv", "sub/b.spv", "sub/deeper/still/c.spv"]
    );
    // Named through another path (`./in/../in/lowered`), it is still recognised.
    let o = run(&["lower", "in", "-o", "./in/../in/lowered"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stderr(&o).starts_with("4 files into"), "{}", show(&o));
}

#[test]
fn an_existing_output_directory_is_updated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    write(dir.path(), "out/a.spv", b"stale");
    write(dir.path(), "out/keep.txt", b"someone else's");
    let o = run(&["lower", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = dir.path().join("out");
    assert_ne!(std::fs::read(out.join("a.spv")).unwrap(), b"stale");
    assert_eq!(
        std::fs::read(out.join("keep.txt")).unwrap(),
        b"someone else's"
    );
    // A file where the directory should be is a usage error; nothing is touched.
    write(dir.path(), "file", b"x");
    let o = run(&["lower", "in", "-o", "file"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("names a directory"), "{}", show(&o));
    assert_eq!(std::fs::read(dir.path().join("file")).unwrap(), b"x");
}

#[test]
fn plans_that_would_lose_work_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    write(dir.path(), "other/a.spv", &to_bytes(&plain_words()));
    let cases: &[(&[&str], &str)] = &[
        // Two inputs for one output.
        (
            &["lower", "in/a.spv", "other/a.spv", "-o", "out"],
            "would both be written",
        ),
        // An output that is another input, read in parallel.
        (
            &["lower", "other/a.spv", "out/a.spv", "-o", "out"],
            "another input",
        ),
        (&["lower", "-", "in", "-o", "out"], "stdin"),
        (&["lower", "in", "-o", "-"], "names a directory"),
        (&["lower", "empty", "-o", "out"], "no `*.spv` files"),
    ];
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    write(dir.path(), "out/a.spv", b"before");
    for (args, says) in cases {
        let o = run(args, dir.path());
        assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", show(&o));
        assert_eq!(files_below(&dir.path().join("out")), ["a.spv"], "{args:?}");
        assert_eq!(
            std::fs::read(dir.path().join("out/a.spv")).unwrap(),
            b"before"
        );
    }
}

/// Needs the debug-build fault hook of `lower` (release builds of the binary do not have it).
#[cfg(debug_assertions)]
#[test]
fn an_internal_error_wins_over_the_other_statuses() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    write(dir.path(), "in/junk.spv", b"junk");
    std::os::unix::fs::symlink("missing.spv", dir.path().join("in/dangling.spv")).unwrap();
    let o = Command::new(EXE)
        .args(["lower", "in", "-o", "out"])
        .current_dir(dir.path())
        .env("SPV_SUBGROUP_TEST_BREAK_OUTPUT", "1")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", show(&o));
    let err = stderr(&o);
    assert_eq!(
        err.matches("internal error, please report it").count(),
        3,
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.ends_with("3 internal errors")),
        "{err}"
    );
    // Only the module that needed no rewrite (so was not broken) was written.
    assert_eq!(files_below(&dir.path().join("out")), ["plain.spv"]);
}

#[test]
fn many_files_come_out_the_same_as_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (ex, pl) = (example_bytes(), to_bytes(&plain_words()));
    // Enough files that every core takes several, in an order no two runs share.
    for i in 0..48 {
        let bytes = if i % 3 == 0 { &pl } else { &ex };
        write(dir.path(), &format!("in/d{}/m{i:02}.spv", i % 5), bytes);
    }
    write(dir.path(), "in/d2/bad.spv", b"junk");
    let o = run(&["lower", "in", "-o", "out"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stderr(&o).ends_with("49 files into `out` (target vulkan1.1): 32 lowered (160 ops), 16 unchanged, 1 refused (1 malformed)\n"),
        "{}",
        show(&o)
    );
    let single = run(&["lower", "in/d1/m01.spv", "-o", "one.spv"], dir.path());
    assert_eq!(code(&single), 0, "{}", show(&single));
    let one = std::fs::read(dir.path().join("one.spv")).unwrap();
    for i in 0..48 {
        let out = std::fs::read(dir.path().join(format!("out/d{}/m{i:02}.spv", i % 5))).unwrap();
        assert_eq!(&out, if i % 3 == 0 { &pl } else { &one }, "m{i:02}");
    }
}

/// 24 modules in three directories, each output already there from an earlier run.
fn tree_with_old_outputs(root: &Path) {
    let (ex, pl) = (example_bytes(), to_bytes(&plain_words()));
    for i in 0..24 {
        let bytes = if i % 4 == 0 { &pl } else { &ex };
        write(root, &format!("in/d{}/m{i:02}.spv", i % 3), bytes);
        write(root, &format!("out/d{}/m{i:02}.spv", i % 3), b"PRECIOUS");
    }
}

#[test]
fn a_write_failing_in_the_middle_leaves_no_temporary_file_and_the_rest_whole() {
    let dir = tempfile::tempdir().unwrap();
    tree_with_old_outputs(dir.path());
    // Debug builds fail the commit (fsync and rename, on an I/O thread) of this output on purpose.
    let o = command(&["lower", "in", "-o", "out"], dir.path())
        .env("SPV_SUBGROUP_TEST_FAIL_COMMIT", "m13.spv")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(
        err.contains("cannot write `out/d1/m13.spv`: failed on purpose"),
        "{err}"
    );
    assert!(
        err.ends_with("24 files into `out` (target vulkan1.1): 17 lowered (85 ops), 6 unchanged, 1 IO error\n"),
        "{err}"
    );
    // The failed output keeps its old content and no temporary file is left anywhere.
    assert_eq!(
        std::fs::read(dir.path().join("out/d1/m13.spv")).unwrap(),
        b"PRECIOUS"
    );
    for d in ["out", "out/d0", "out/d1", "out/d2"] {
        assert!(temp_files(&dir.path().join(d)).is_empty(), "{d}");
    }
    // Every other output is whole: what a single-file run writes.
    let single = run(&["lower", "in/d1/m01.spv", "-o", "one.spv"], dir.path());
    assert_eq!(code(&single), 0, "{}", show(&single));
    let one = std::fs::read(dir.path().join("one.spv")).unwrap();
    let pl = to_bytes(&plain_words());
    for i in (0..24).filter(|&i| i != 13) {
        let out = std::fs::read(dir.path().join(format!("out/d{}/m{i:02}.spv", i % 3))).unwrap();
        assert_eq!(&out, if i % 4 == 0 { &pl } else { &one }, "m{i:02}");
    }
}

#[test]
fn a_signal_while_writes_are_under_way_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    tree_with_old_outputs(dir.path());
    // Debug builds pause before each commit, so staged outputs wait for the I/O threads.
    let mut child = command(&["lower", "-q", "in", "-o", "out"], dir.path())
        .env("SPV_SUBGROUP_TEST_PAUSE_COMMIT", "10000")
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let staged = |d: &Path| {
        ["d0", "d1", "d2"]
            .iter()
            .map(|s| temp_files(&d.join("out").join(s)).len())
            .sum::<usize>()
    };
    let start = Instant::now();
    // More staged outputs than I/O threads: the workers went on while the writes waited.
    while staged(dir.path()) < 6 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no staged outputs appeared (is this a debug build?)"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let st = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert_eq!(staged(dir.path()), 0);
    // Nothing was renamed yet: every output keeps its old content.
    for i in 0..24 {
        let out = std::fs::read(dir.path().join(format!("out/d{}/m{i:02}.spv", i % 3))).unwrap();
        assert_eq!(out, b"PRECIOUS", "m{i:02}");
    }
}

// ---- Issue 21 (the third probe, `shared/repro/probe3/README.md`): N3, N4, N13 ----------------

/// N3: in place (`lower tree -o tree`), a `*.spv` link to a file outside the tree must not have
/// that file rewritten through it; nor may an output directory that is a link lead outside.
#[test]
fn n3_outputs_are_never_written_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ex = example_bytes();
    write(d, "outside/precious.spv", &ex);
    write(d, "tree/own.spv", &ex);
    std::os::unix::fs::symlink("../outside/precious.spv", d.join("tree/ext.spv")).unwrap();
    let o = run(&["lower", "tree", "-o", "tree"], d);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(
        err.contains("cannot write `tree/ext.spv`: it is a symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read(d.join("outside/precious.spv")).unwrap(), ex);
    assert!(d
        .join("tree/ext.spv")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
    // The module of its own is lowered in place.
    let own = std::fs::read(d.join("tree/own.spv")).unwrap();
    assert_ne!(own, ex);
    assert!(temp_files(&d.join("tree")).is_empty());
    assert!(temp_files(&d.join("outside")).is_empty());
    // An output subdirectory that is a link out of the output directory.
    write(d, "in/sub/a.spv", &ex);
    std::fs::create_dir(d.join("out")).unwrap();
    std::os::unix::fs::symlink("../outside", d.join("out/sub")).unwrap();
    let o = run(&["lower", "in", "-o", "out"], d);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("its directory leads outside the output directory"),
        "{}",
        show(&o)
    );
    assert_eq!(files_below(&d.join("outside")), ["precious.spv"]);
}

/// N4: a FIFO named `*.spv` (and a link to a device) in an input directory hung `validate DIR`
/// and `lower DIR -o OUT`; they are skipped with a warning, never opened.
#[test]
fn n4_special_files_in_a_directory_are_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "in/a.spv", &example_bytes());
    let made = Command::new("mkfifo")
        .arg(d.join("in/f.spv"))
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", d.join("in/zero.spv")).unwrap();
    for script in [
        r#"exec timeout 60 "$0" validate in"#,
        r#"exec timeout 60 "$0" lower in -o out"#,
    ] {
        let o = sh(script, d);
        assert_eq!(code(&o), 0, "{script} (124: it hung): {}", show(&o));
        let err = stderr(&o);
        assert!(
            err.contains("warning: skipping `in/f.spv`: it is a FIFO, not a regular file"),
            "{script}: {err}"
        );
        assert!(
            err.contains("warning: skipping `in/zero.spv`: it links to a character device"),
            "{script}: {err}"
        );
    }
    assert_eq!(files_below(&d.join("out")), ["a.spv"]);
    // Named on the command line, a FIFO is read as given.
    let o = sh(
        r#"cat in/a.spv > in/f.spv & exec timeout 60 "$0" validate in/f.spv"#,
        d,
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
}

/// N13: a subdirectory that cannot be listed aborted the whole run with a message naming the
/// top directory; now it is reported by its own path, the rest is checked and lowered, and the
/// run exits 2. Run as nobody (root reads any directory).
#[test]
fn n13_an_unreadable_subdirectory_is_reported_and_the_rest_goes_on() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ex = example_bytes();
    write(d, "t/ok/a.spv", &ex);
    write(d, "t/sub/b.spv", &ex);
    write(d, "t/z.spv", &ex);
    for p in ["", "t", "t/ok", "t/ok/a.spv", "t/sub/b.spv", "t/z.spv"] {
        let mode = if p.ends_with(".spv") { 0o644 } else { 0o777 };
        std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(d.join("t/sub"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let as_nobody = |args: &str| {
        let o = sh(
            &format!(r#"exec setpriv --reuid=65534 --regid=65534 --clear-groups "$0" {args}"#),
            d,
        );
        assert!(
            !stderr(&o).contains("setpriv:"),
            "this test needs root for `setpriv` (CI and the dev machines run as root; util-linux): {}",
            show(&o)
        );
        o
    };
    let o = as_nobody("validate t");
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains("cannot search directory `t/sub`"), "{err}");
    assert!(!err.contains("directory `t`"), "{err}");
    assert!(
        err.contains("checked 3 files: 2 ok, 1 unreadable"),
        "the other modules are checked: {err}"
    );
    let o = as_nobody("validate t --format json");
    assert_eq!(code(&o), 2, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["t/ok/a.spv", "t/sub", "t/z.spv"]);
    assert_eq!(doc["files"][1]["error"]["kind"], "io");
    let o = as_nobody("lower t -o out");
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(err.contains("cannot search directory `t/sub`"), "{err}");
    assert!(err.contains("1 IO error"), "{err}");
    assert_eq!(files_below(&d.join("out")), ["ok/a.spv", "z.spv"]);
    std::fs::set_permissions(d.join("t/sub"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
