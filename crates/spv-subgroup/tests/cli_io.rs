//! Regression tests of the CLI's input and output handling: the IO half of the reliability probe
//! (issue 12; each test names its problem, `Pnn`, from `shared/repro/reliability/README.md`).
//!
//! Special files are made in a temporary directory (`mkfifo`, `mknod` of a 1,3 character device,
//! symbolic links), never by writing to the machine's own `/dev`: a broken build must not be able
//! to replace a real device node.

mod common;

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use spv_subgroup_tests::tools;

const MAGIC: [u8; 4] = 0x0723_0203u32.to_le_bytes();

/// The example lowered into a plain new file: what every other kind of output must receive.
fn lowered_reference(dir: &Path) -> Vec<u8> {
    let o = run(&["lower", "in.spv", "-o", "reference.spv", "-q"], dir);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let bytes = std::fs::read(dir.join("reference.spv")).unwrap();
    assert_eq!(bytes[..4], MAGIC);
    bytes
}

fn setup() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &example_bytes());
    let reference = lowered_reference(dir.path());
    (dir, reference)
}

// ---- P01: outputs that are not regular files ---------------------------------------------------

#[test]
fn p01_symlinks_are_followed_not_replaced() {
    let (dir, reference) = setup();
    let d = dir.path();
    write(d, "real.spv", b"ORIGINAL");
    std::os::unix::fs::symlink("real.spv", d.join("link.spv")).unwrap();
    std::os::unix::fs::symlink(d.join("link.spv"), d.join("link2.spv")).unwrap();
    let o = run(&["lower", "in.spv", "-o", "link2.spv"], d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    for link in ["link.spv", "link2.spv"] {
        let m = std::fs::symlink_metadata(d.join(link)).unwrap();
        assert!(m.file_type().is_symlink(), "{link} is still a link");
    }
    assert_eq!(std::fs::read(d.join("real.spv")).unwrap(), reference);
    assert!(temp_files(d).is_empty(), "{:?}", temp_files(d));

    // A dangling link: its target is created, the link stays.
    std::os::unix::fs::symlink("new.spv", d.join("dangling.spv")).unwrap();
    let o = run(&["lower", "in.spv", "-o", "dangling.spv"], d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(std::fs::symlink_metadata(d.join("dangling.spv"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(d.join("new.spv")).unwrap(), reference);

    // A loop is an IO error, and nothing is created.
    std::os::unix::fs::symlink("loop.spv", d.join("loop.spv")).unwrap();
    let o = run(&["lower", "in.spv", "-o", "loop.spv"], d);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("symbolic links"), "{}", show(&o));
    assert!(temp_files(d).is_empty());
}

#[test]
fn p01_fifo_is_written_through() {
    let (dir, reference) = setup();
    let d = dir.path();
    let st = Command::new("mkfifo").arg(d.join("fifo.spv")).status();
    assert!(
        st.is_ok_and(|s| s.success()),
        "mkfifo (coreutils) is needed"
    );
    // The reader first: opening a FIFO for writing waits for one.
    let mut reader = Command::new("cat")
        .arg(d.join("fifo.spv"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let o = run(&["lower", "in.spv", "-o", "fifo.spv", "-q"], d);
    let start = Instant::now();
    while reader.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            // The FIFO was replaced, so the reader never sees a writer: unblock it by hand.
            let _ = reader.kill();
            panic!("the FIFO got no data: {}", show(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = reader.wait_with_output().unwrap().stdout;
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(got, reference);
    let m = std::fs::symlink_metadata(d.join("fifo.spv")).unwrap();
    assert!(m.file_type().is_fifo(), "still a FIFO");
}

#[test]
fn p01_device_nodes_are_written_through() {
    let (dir, reference) = setup();
    let d = dir.path();
    // A private stand-in for /dev/null (we are root in CI; mknod needs it).
    let st = Command::new("mknod")
        .args(["-m", "666"])
        .arg(d.join("null"))
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(
        st.success(),
        "this test needs root for `mknod` (CI and the dev machines run as root)"
    );
    std::os::unix::fs::symlink("null", d.join("null-link.spv")).unwrap();
    for out in ["null", "null-link.spv"] {
        let o = run(&["lower", "in.spv", "-o", out], d);
        assert_eq!(code(&o), 0, "-o {out}: {}", show(&o));
        let m = std::fs::metadata(d.join("null")).unwrap();
        assert!(m.file_type().is_char_device(), "-o {out}: still a device");
        assert_eq!(m.rdev(), std::fs::metadata("/dev/null").unwrap().rdev());
        assert!(temp_files(d).is_empty(), "{:?}", temp_files(d));
    }
    assert!(std::fs::symlink_metadata(d.join("null-link.spv"))
        .unwrap()
        .file_type()
        .is_symlink());

    // A link to our stdout, as /dev/stdout is: the module goes to stdout, the link stays.
    std::os::unix::fs::symlink("/proc/self/fd/1", d.join("stdout-link.spv")).unwrap();
    for out in ["stdout-link.spv", "/dev/stdout"] {
        let o = run(&["lower", "in.spv", "-o", out, "-q"], d);
        assert_eq!(code(&o), 0, "-o {out}: {}", show(&o));
        assert_eq!(o.stdout, reference, "-o {out} writes stdout");
    }
    assert!(std::fs::symlink_metadata(d.join("stdout-link.spv"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn p01_directory_output_is_refused() {
    let (dir, _) = setup();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let o = run(&["lower", "in.spv", "-o", "sub"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("directory"), "{}", show(&o));
}

// ---- P10: stdout closed ----------------------------------------------------------------------

#[test]
fn p10_closed_stdout_is_an_error() {
    let (dir, _) = setup();
    let o = sh(r#"exec "$0" lower in.spv -o - >&-"#, dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("stdout"), "{}", show(&o));
    assert!(text(&o.stderr).contains("closed"), "{}", show(&o));
    // The same through /dev/stdout.
    let o = sh(r#"exec "$0" lower in.spv -o /dev/stdout >&-"#, dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
}

// ---- P11: signals during the write -----------------------------------------------------------

#[test]
fn p11_signals_remove_the_temporary_file() {
    let (dir, _) = setup();
    let d = dir.path();
    for (sig, name) in [(2, "INT"), (15, "TERM"), (1, "HUP")] {
        write(d, "out.spv", b"PRECIOUS");
        // Debug builds pause after creating the temporary file when asked to.
        let mut child = command(&["lower", "in.spv", "-o", "out.spv", "-q"], d)
            .env("SPV_SUBGROUP_TEST_PAUSE_WRITE", "10000")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while temp_files(d).is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no temporary file appeared (is this a debug build?)"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let st = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "SIG{name}: {status:?}");
        assert!(temp_files(d).is_empty(), "SIG{name}: {:?}", temp_files(d));
        assert_eq!(std::fs::read(d.join("out.spv")).unwrap(), b"PRECIOUS");
    }
}

// ---- P12: broken links in a directory --------------------------------------------------------

#[test]
fn p12_dangling_and_looping_links_are_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    write(&d, "good.spv", &example_bytes());
    std::os::unix::fs::symlink("missing.spv", d.join("dangling.spv")).unwrap();
    std::os::unix::fs::symlink("loop.spv", d.join("loop.spv")).unwrap();
    std::os::unix::fs::symlink("b.spv", d.join("a.spv")).unwrap();
    std::os::unix::fs::symlink("a.spv", d.join("b.spv")).unwrap();
    // A link to a directory is still not followed (no cycles).
    std::os::unix::fs::symlink("..", d.join("up")).unwrap();
    let o = run(&["validate", "d"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    for name in ["dangling.spv", "loop.spv", "a.spv", "b.spv"] {
        assert!(text(&o.stderr).contains(name), "{name}: {}", show(&o));
    }
    let o = run(&["validate", "--format", "json", "d"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["summary"]["files"], 5, "{}", show(&o));
    assert_eq!(doc["summary"]["ok"], 1, "{}", show(&o));
    assert_eq!(doc["summary"]["unreadable"], 4, "{}", show(&o));
}

// ---- P13: target files -----------------------------------------------------------------------

#[test]
fn p13_impossible_target_files_are_refused() {
    let (dir, _) = setup();
    let d = dir.path();
    let o = run(&["targets", "--show", "vulkan1.1"], d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let base: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cases: [(&str, &str, serde_json::Value, &str); 4] = [
        (
            "env.json",
            "/target_env",
            "vulkan9.9".into(),
            "unknown `target_env` `vulkan9.9`",
        ),
        (
            "v20.json",
            "/spirv_version",
            serde_json::json!([2, 0]),
            "is no SPIR-V version",
        ),
        (
            "v09.json",
            "/spirv_version",
            serde_json::json!([0, 9]),
            "is no SPIR-V version",
        ),
        (
            "nobasic.json",
            "/ops/basic",
            false.into(),
            "`ops.basic` is false",
        ),
    ];
    for (file, pointer, value, message) in cases {
        let mut t = base.clone();
        *t.pointer_mut(pointer).unwrap() = value;
        write(d, file, serde_json::to_string(&t).unwrap().as_bytes());
        for args in [
            vec!["lower", "in.spv", "-o", "out.spv", "--target", file],
            vec!["validate", "in.spv", "--target", file],
        ] {
            let o = run(&args, d);
            assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
            assert!(text(&o.stderr).contains(message), "{args:?}: {}", show(&o));
        }
        assert!(!d.join("out.spv").exists());
    }
}

// ---- P14: control characters from the module ---------------------------------------------------

#[test]
fn p14_control_characters_in_module_strings_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let src = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&src, "vulkan1.1").unwrap();
    let asm = tools::disassemble(&words);
    let line = "OpExtension \"SPV_KHR_subgroup_vote\"";
    assert!(asm.contains(line));
    // ESC c resets a terminal; an unknown extension near ours is quoted in SG0503's message.
    let edited = asm.replace(
        line,
        &format!("{line}\nOpExtension \"SPV_KHR_subgroup_vote\x1bc\""),
    );
    let words = tools::assemble(&edited, "vulkan1.1").expect("assembles");
    write(dir.path(), "esc.spv", &to_bytes(&words));
    let o = run(&["validate", "esc.spv"], dir.path());
    let out = text(&o.stdout);
    assert!(out.contains("SG0503"), "{}", show(&o));
    assert!(
        !out.contains('\x1b'),
        "raw ESC reaches the terminal: {}",
        show(&o)
    );
    assert!(out.contains("\\u{1b}c"), "{}", show(&o));
    // JSON keeps the real string (serde escapes it).
    let o = run(&["validate", "--format", "json", "esc.spv"], dir.path());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let msg = doc["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "SG0503")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains('\x1b'), "{msg}");
}

// ---- P15: output file metadata ---------------------------------------------------------------

#[test]
fn p15_new_outputs_respect_the_umask() {
    let (dir, _) = setup();
    let o = sh(
        r#"umask 077; exec "$0" lower in.spv -o new.spv -q"#,
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let mode = std::fs::metadata(dir.path().join("new.spv"))
        .unwrap()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o600, "{mode:o}");
    let o = sh(
        r#"umask 022; exec "$0" lower in.spv -o new22.spv -q"#,
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let mode = std::fs::metadata(dir.path().join("new22.spv"))
        .unwrap()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o644, "{mode:o}");
}

#[test]
fn p15_existing_outputs_keep_their_mode_without_setuid() {
    let (dir, reference) = setup();
    let d = dir.path();
    let out = write(d, "old.spv", b"OLD");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o6751)).unwrap();
    let o = run(&["lower", "in.spv", "-o", "old.spv", "-q"], d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(std::fs::read(&out).unwrap(), reference);
    let mode = std::fs::metadata(&out).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o751, "{mode:o}");
}

#[test]
fn p15_hard_links_are_split_with_a_note() {
    let (dir, reference) = setup();
    let d = dir.path();
    write(d, "h1.spv", b"OLD");
    std::fs::hard_link(d.join("h1.spv"), d.join("h2.spv")).unwrap();
    let o = run(&["lower", "in.spv", "-o", "h1.spv", "-q"], d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // Atomic replacement gives h1.spv a new inode; docs/cli.md says so and the note tells.
    assert_eq!(std::fs::read(d.join("h1.spv")).unwrap(), reference);
    assert_eq!(std::fs::read(d.join("h2.spv")).unwrap(), b"OLD");
    assert!(
        text(&o.stderr).contains("1 other hard link"),
        "{}",
        show(&o)
    );
}

// ---- P17: names, stdin twice, numbers, fragments ---------------------------------------------

#[test]
fn p17_non_utf8_names_stay_distinct() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let n = dir.path().join("n");
    std::fs::create_dir(&n).unwrap();
    for b in [0xffu8, 0xfe] {
        let name = [b'b', b'a', b'd', b, b'.', b's', b'p', b'v'];
        std::fs::write(n.join(std::ffi::OsStr::from_bytes(&name)), b"junk").unwrap();
    }
    let o = run(&["validate", "--format", "json", "n"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["n/bad\\xfe.spv", "n/bad\\xff.spv"], "{}", show(&o));
    let o = run(&["validate", "n"], dir.path());
    assert!(text(&o.stdout).contains("n/bad\\xff.spv"), "{}", show(&o));
    assert!(text(&o.stdout).contains("n/bad\\xfe.spv"), "{}", show(&o));
}

#[test]
fn p17_stdin_twice_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = command(&["validate", "-", "-"], dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The binary may exit before reading; a closed pipe is fine then.
    let _ = child.stdin.take().unwrap().write_all(&example_bytes());
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("more than once"), "{}", show(&o));
}

#[test]
fn p17_oversized_subgroup_size_is_out_of_range() {
    let (dir, _) = setup();
    let o = run(
        &[
            "lower",
            "in.spv",
            "-o",
            "o.spv",
            "--subgroup-size",
            "99999999999999999999",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("out of range"), "{}", show(&o));
    assert!(!text(&o.stderr).contains("not a number"), "{}", show(&o));
}

#[test]
fn p17_header_only_module_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "hdr.spv", &example_bytes()[..20]);
    let o = run(&["validate", "hdr.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(text(&o.stdout).contains("OpMemoryModel"), "{}", show(&o));
    let o = run(&["lower", "hdr.spv", "-o", "o.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(text(&o.stderr).contains("OpMemoryModel"), "{}", show(&o));
    assert!(!dir.path().join("o.spv").exists());
}

// ---- Issue 21 (the third probe, `shared/repro/probe3/README.md`): N2, N8, N10 ----------------

/// N2: an input larger than the memory the process may have is an IO error, exit 2 "out of
/// memory", never an abort (SIGABRT, 134): an endless `/dev/zero`, and more bytes on stdin than the
/// `ulimit -v` allows. 150 MB of address space fills in about a second.
#[test]
fn n2_an_input_larger_than_memory_is_exit_2_out_of_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for script in [
        r#"ulimit -v 150000; exec "$0" validate /dev/zero"#,
        r#"ulimit -v 150000; exec "$0" lower /dev/zero -o out.spv"#,
        r#"ulimit -v 150000; head -c 4000000000 /dev/zero | "$0" validate -"#,
        r#"ulimit -v 150000; head -c 4000000000 /dev/zero | "$0" lower - -o out.spv"#,
        // A file whose size is known is reserved at once: a sparse 1 GB file.
        r#"truncate -s 1G big.spv && ulimit -v 150000 && exec "$0" validate big.spv"#,
        r#"ulimit -v 150000; exec "$0" lower big.spv -o out.spv"#,
    ] {
        let started = Instant::now();
        let o = sh(script, d);
        assert_eq!(code(&o), 2, "{script}: {}", show(&o));
        let err = text(&o.stderr);
        assert!(err.contains("out of memory"), "{script}: {err}");
        assert!(!err.contains("panicked"), "{script}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{script}: {:?}",
            started.elapsed()
        );
    }
    assert!(!d.join("out.spv").exists());
    assert!(temp_files(d).is_empty());
}

/// N2's reproduction reads the first line (`... 2>&1 | head -1`): a message written into a pipe
/// whose reader is gone must not turn the exit status into a panic's 101.
#[test]
fn n2_a_closed_stderr_keeps_the_exit_status() {
    let (dir, _) = setup();
    let d = dir.path();
    write(d, "bad.spv", b"not a module");
    let cases: [(&[&str], i32); 4] = [
        (&["validate", "missing.spv"], 2),
        (&["validate", "missing.spv", "in.spv"], 2),
        (&["lower", "missing.spv", "-o", "out.spv"], 2),
        (&["lower", "bad.spv", "in.spv", "-o", "outdir"], 1),
    ];
    for (args, want) in cases {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = command(args, d)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(writer)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(want), "{args:?}: {:?}", o.status);
    }
}

/// N8: a target's `name` (our format) or `deviceName` (a vulkaninfo report) reaches `lower`'s
/// messages with its control characters escaped, as `validate` escapes them.
#[test]
fn n8_control_characters_in_a_target_name_are_escaped_in_lower_messages() {
    let (dir, _) = setup();
    let d = dir.path();
    let evil = "x\u{1b}[2J\u{1b}]0;title\u{7}";
    let escaped = r"x\u{1b}[2J\u{1b}]0;title\u{7}";
    let shown = |preset: &str| -> serde_json::Value {
        let o = run(&["targets", "--show", preset], d);
        assert_eq!(code(&o), 0, "{}", show(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // Lowered (the summary line), and refused (khr-ballot cannot take the example).
    for (preset, file, exit) in [("vulkan1.1", "ok.json", 0), ("khr-ballot", "no.json", 1)] {
        let mut t = shown(preset);
        t["name"] = evil.into();
        write(d, file, serde_json::to_string(&t).unwrap().as_bytes());
        let o = run(&["lower", "in.spv", "-o", "out.spv", "--target", file], d);
        assert_eq!(code(&o), exit, "{file}: {}", show(&o));
        let err = text(&o.stderr);
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{7}'),
            "{file}: {err:?}"
        );
        assert!(err.contains(escaped), "{file}: {err}");
    }
    // A vulkaninfo report's deviceName; an unchanged module prints "nothing to lower".
    let report = tools::workspace_root().join("fixtures/targets/lavapipe-vulkaninfo.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    v["capabilities"]["device"]["properties"]["VkPhysicalDeviceProperties"]["deviceName"] =
        evil.into();
    write(
        d,
        "report.json",
        serde_json::to_string(&v).unwrap().as_bytes(),
    );
    for input in ["in.spv", "reference.spv"] {
        let o = run(
            &["lower", input, "-o", "out.spv", "--target", "report.json"],
            d,
        );
        assert_eq!(code(&o), 0, "{input}: {}", show(&o));
        let err = text(&o.stderr);
        assert!(!err.contains('\u{1b}'), "{input}: {err:?}");
        assert!(err.contains(escaped), "{input}: {err}");
    }
}

/// N10: a target file that exists but cannot be used says what failed (exit 2), where every IO
/// error used to be "unknown target".
#[test]
fn n10_target_file_failures_say_what_failed() {
    let (dir, _) = setup();
    let d = dir.path();
    write(d, "latin1.json", b"{\"name\": \"caf\xe9\"}");
    std::fs::create_dir(d.join("adir")).unwrap();
    let o = run(&["targets", "--show", "vulkan1.1"], d);
    write(d, "locked.json", &o.stdout);
    std::fs::set_permissions(
        d.join("locked.json"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    // Another user (nobody) must reach the directory and the module, not the target file.
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(d.join("in.spv"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let cases: [(&str, &str); 4] = [
        (
            r#"exec "$0" validate in.spv --target adir"#,
            "cannot read target file `adir`: Is a directory",
        ),
        (
            r#"exec "$0" lower in.spv -o out.spv --target latin1.json"#,
            "cannot read target file `latin1.json`: it is not UTF-8 text (byte 13 is not)",
        ),
        (
            r#"exec "$0" validate in.spv --target /dev/zero"#,
            "cannot read target file `/dev/zero`: it is larger than 16 MiB",
        ),
        (
            r#"exec setpriv --reuid=65534 --regid=65534 --clear-groups "$0" validate in.spv --target locked.json"#,
            "cannot read target file `locked.json`: Permission denied",
        ),
    ];
    for (script, want) in cases {
        let o = sh(script, d);
        let err = text(&o.stderr);
        assert!(
            !err.contains("setpriv:"),
            "this test needs root for `setpriv` (CI and the dev machines run as root; util-linux): {}",
            show(&o)
        );
        assert_eq!(code(&o), 2, "{script}: {}", show(&o));
        assert!(err.contains(want), "{script}: {err}");
        assert!(!err.contains("unknown target"), "{script}: {err}");
    }
    assert!(!d.join("out.spv").exists());
    // A path that does not exist is still an unknown target, with the presets.
    let o = run(&["validate", "in.spv", "--target", "nope.json"], d);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("unknown target `nope.json`"),
        "{}",
        show(&o)
    );
}
