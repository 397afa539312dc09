//! Hostile inputs and outputs at the CLI (issue 9, item 5; issue 12, P16): word counts that run
//! past the end, `-o` naming the input, a full disk, and a memory bound on a large module.
//! Each case wants a clear error, bounded memory, and never a truncated or lost output file.
//! (Id bounds near 2^32 are `cli_lower_reliability.rs`'s P06/P07 test, a closed stdout
//! `cli_io.rs`'s P10 test.)

mod common;

use common::*;

#[test]
fn word_count_past_the_end_is_malformed_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut words = example_words();
    // The last instruction (OpFunctionEnd) claims 0xFFFF words.
    let last = words.len() - 1;
    words[last] |= 0xFFFF << 16;
    std::fs::write(d.join("in.spv"), to_bytes(&words)).unwrap();
    std::fs::write(d.join("out.spv"), b"old").unwrap();
    for script in [
        r#"exec "$0" lower in.spv -o out.spv"#,
        r#"exec "$0" validate in.spv"#,
    ] {
        let o = sh(script, d);
        assert_eq!(code(&o), 1, "{script}: {}", show(&o));
        let text = format!("{}{}", show(&o), String::from_utf8_lossy(&o.stdout));
        assert!(text.contains("truncated instruction"), "{script}: {text}");
        assert!(text.contains(&format!("word {last}")), "{script}: {text}");
    }
    assert_eq!(std::fs::read(d.join("out.spv")).unwrap(), b"old");
    assert!(temp_files(d).is_empty());
}

#[test]
fn output_naming_the_input_replaces_it_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = to_bytes(&example_words());
    std::fs::write(d.join("in.spv"), &input).unwrap();
    let o = sh(r#"exec "$0" lower in.spv -o ref.spv -q"#, d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let reference = std::fs::read(d.join("ref.spv")).unwrap();
    assert_ne!(reference, input, "the example has something to lower");
    // In place: the input is read whole before the output replaces it.
    let o = sh(r#"exec "$0" lower in.spv -o in.spv -q"#, d);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(std::fs::read(d.join("in.spv")).unwrap(), reference);
    // A refusal in place leaves the input as it was.
    std::fs::write(d.join("in.spv"), &input).unwrap();
    let o = sh(r#"exec "$0" lower in.spv -o in.spv --target khr-ballot"#, d);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert_eq!(std::fs::read(d.join("in.spv")).unwrap(), input);
    assert!(temp_files(d).is_empty(), "{:?}", temp_files(d));
}

#[test]
fn full_disk_is_an_io_error_and_the_old_output_survives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A module larger than the disk: the example with 64 KiB of OpNop in its first block.
    let mut words = example_words();
    let at = first_block_body(&words);
    words.splice(at..at, std::iter::repeat_n(1 << 16, 16 * 1024));
    std::fs::write(d.join("in.spv"), to_bytes(&words)).unwrap();
    std::fs::create_dir(d.join("disk")).unwrap();
    // A 16 KiB tmpfs in a private mount namespace (root, as CI and the dev machines run).
    let o = sh(
        r#"exec unshare -m sh -c '
            mount -t tmpfs -o size=16k tmpfs disk || exit 99
            printf old > disk/out.spv
            "$0" lower in.spv -o disk/out.spv -q; rc=$?
            echo "old: $(cat disk/out.spv)"
            ls -A disk
            exit $rc' "$0""#,
        d,
    );
    assert_ne!(
        code(&o),
        99,
        "this test needs root for `unshare -m` and `mount` (CI and the dev machines run as root): {}",
        show(&o)
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("No space left"), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("old: old"),
        "the old output survives: {stdout}"
    );
    let listing: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(listing, ["out.spv"], "no temporary file remains: {stdout}");
}

/// Word offset just after the first `OpLabel` (and its `OpVariable`s), where `OpNop`s may go.
fn first_block_body(words: &[u32]) -> usize {
    let mut at = 5;
    let mut in_block = false;
    while at < words.len() {
        let (count, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if in_block && op != 59 {
            return at;
        }
        in_block |= op == 248;
        at += count.max(1);
    }
    panic!("the example has a block");
}

#[test]
fn lowering_a_large_module_stays_within_its_memory_bound() {
    // 16 MB of OpNop in the example's first block (the P16 probe's module, smaller): the old
    // pass held 26 bytes per input byte (over 400 MB); the bound in docs/PERFORMANCE.md is
    // about 4, so 200 MB of address space beyond the program's own is plenty.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut words = example_words();
    let at = first_block_body(&words);
    words.splice(at..at, std::iter::repeat_n(1 << 16, 4 * 1024 * 1024));
    std::fs::write(d.join("in.spv"), to_bytes(&words)).unwrap();
    let o = sh(
        r#"ulimit -v 300000; exec "$0" lower in.spv -o out.spv -q"#,
        d,
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = std::fs::read(d.join("out.spv")).unwrap();
    assert!(out.len() >= 16 * 1024 * 1024, "the OpNops are kept");
    let o = sh(r#"ulimit -v 300000; exec "$0" validate out.spv"#, d);
    assert_eq!(code(&o), 0, "{}", show(&o));
}
