//! Reading inputs (files, directories, stdin), writing outputs atomically, and `BrokenPipe` handling.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use spv_subgroup_validate::{ParseError, ParseErrorKind};

/// One module to read: a file, or stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file on disk.
    File(PathBuf),
    /// A directory below an input directory that could not be listed, with the reason: reported
    /// as an unreadable input in its place (by path), while the rest of the tree is still read.
    Unsearchable(PathBuf, String),
}

impl Source {
    /// The name findings and messages use for this input.
    pub fn display_name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(p) | Source::Unsearchable(p, _) => show_path(p),
        }
    }
}

/// A module read as words, with the byte order it came in.
#[derive(Debug)]
pub struct Words {
    /// The words, in the machine's order.
    pub words: Vec<u32>,
    /// Whether the input was little-endian.
    pub little_endian: bool,
}

impl Source {
    /// Reads the whole input as SPIR-V words without holding its bytes, so the input costs its
    /// own size once (see docs/PERFORMANCE.md). The inner `Err` is what [`words_from_bytes`]
    /// would say of the same bytes.
    ///
    /// [`words_from_bytes`]: spv_subgroup_validate::words_from_bytes
    pub fn read_words(&self) -> anyhow::Result<Result<Words, ParseError>> {
        match self {
            Source::Stdin => {
                words_from_reader(std::io::stdin().lock(), 0).context("cannot read stdin")
            }
            Source::File(p) => {
                let read = || {
                    let f = std::fs::File::open(p)?;
                    let size = f.metadata().map_or(0, |m| m.len());
                    words_from_reader(f, size)
                };
                read().with_context(|| format!("cannot read `{}`", show_path(p)))
            }
            Source::Unsearchable(dir, reason) => Err(anyhow::anyhow!("{reason}")
                .context(format!("cannot search directory `{}`", show_path(dir)))),
        }
    }
}

impl Words {
    /// The words as bytes in the order they were read: a module written back unchanged keeps
    /// its bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let le = self.little_endian;
        self.words
            .iter()
            .flat_map(|w| if le { w.to_le_bytes() } else { w.to_be_bytes() })
            .collect()
    }
}

/// The little-endian bytes of `words`, which are released from the end as their bytes are
/// written, a chunk at a time: the module is never held whole as words and as bytes at once
/// (the output of `lower` is the largest thing it holds; docs/PERFORMANCE.md).
pub fn into_le_bytes(mut words: Vec<u32>) -> Vec<u8> {
    const CHUNK: usize = 1 << 16;
    // Zeroed pages are not resident until written.
    let mut bytes = vec![0u8; words.len() * 4];
    while !words.is_empty() {
        let start = words.len().saturating_sub(CHUNK);
        for (b, w) in bytes[start * 4..].chunks_exact_mut(4).zip(&words[start..]) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        words.truncate(start);
        words.shrink_to_fit();
    }
    bytes
}

/// Reads a stream into words through a 64 KiB buffer; `size` (the file's length, 0 if unknown)
/// reserves the words at once, so the vector never doubles past the input.
/// Every allocation is fallible: an input larger than the memory the process may have (an
/// endless `/dev/zero`, gigabytes on stdin under `ulimit -v`) is an `OutOfMemory` error, which
/// the CLI reports as an IO error (exit 2), never an abort.
fn words_from_reader(mut r: impl Read, size: u64) -> std::io::Result<Result<Words, ParseError>> {
    const MAGIC: u32 = 0x0723_0203;
    let mut words: Vec<u32> = Vec::new();
    if words
        .try_reserve_exact(usize::try_from(size / 4).unwrap_or(usize::MAX))
        .is_err()
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("out of memory: a {size}-byte input does not fit in the memory this process may use"),
        ));
    }
    let mut buf = vec![0u8; 1 << 16];
    let (mut carry, mut carried) = ([0u8; 4], 0usize);
    let mut total: usize = 0;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Room for this chunk's words: doubling where it can, else exactly what they need.
        let more = n / 4 + 1;
        if words.try_reserve(more).is_err() && words.try_reserve_exact(more).is_err() {
            return Err(out_of_memory(total));
        }
        total = total.saturating_add(n);
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            if carried > 0 || chunk.len() < 4 {
                let take = (4 - carried).min(chunk.len());
                carry[carried..carried + take].copy_from_slice(&chunk[..take]);
                carried += take;
                chunk = &chunk[take..];
                if carried == 4 {
                    words.push(u32::from_le_bytes(carry));
                    carried = 0;
                }
                continue;
            }
            let whole = chunk.len() / 4 * 4;
            words.extend(
                chunk[..whole]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            chunk = &chunk[whole..];
        }
    }
    // The checks of `words_from_bytes`, in its order.
    let fail = |kind, word_offset| {
        Ok(Err(ParseError {
            kind,
            word_offset,
            inst_index: None,
        }))
    };
    if !total.is_multiple_of(4) {
        return fail(ParseErrorKind::NotWordAligned(total), total / 4);
    }
    let little_endian = match words.first() {
        None => return fail(ParseErrorKind::TruncatedHeader, 0),
        Some(&MAGIC) => true,
        Some(w) if w.swap_bytes() == MAGIC => false,
        Some(&w) => return fail(ParseErrorKind::BadMagic(w), 0),
    };
    if !little_endian {
        words.iter_mut().for_each(|w| *w = w.swap_bytes());
    }
    Ok(Ok(Words {
        words,
        little_endian,
    }))
}

/// The error of an input that does not fit in memory, after `read` bytes of it.
fn out_of_memory(read: usize) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        format!("out of memory after reading {read} bytes: the input does not fit in the memory this process may use"),
    )
}

/// A path as messages and JSON show it: its UTF-8 text, with `\\` for a backslash, `\u{..}` for a
/// control character and `\xNN` for each byte that is not UTF-8, so two different names never
/// print the same and no name can send escape sequences to a terminal.
pub fn show_path(p: &Path) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str());
    #[cfg(not(unix))]
    let lossy = p.to_string_lossy();
    #[cfg(not(unix))]
    let bytes = lossy.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().replace('\\', "\\\\");
        out.push_str(&spv_subgroup_validate::escape_controls(&valid));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Whether the argument means stdin/stdout.
pub fn is_dash(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// A single input argument as a [`Source`].
pub fn source_of(p: &Path) -> Source {
    if is_dash(p) {
        Source::Stdin
    } else {
        Source::File(p.to_owned())
    }
}

/// Refuses to read SPIR-V from an interactive terminal (the user probably forgot the file name).
pub fn check_stdin_not_terminal() -> anyhow::Result<()> {
    if std::io::stdin().is_terminal() {
        bail!("no input given and stdin is a terminal: pass a SPIR-V file, a directory, or pipe a module into `-`");
    }
    Ok(())
}

/// Expands the command line's inputs: `-` or nothing is stdin, a directory is every `*.spv`
/// below it (recursively, sorted; a subdirectory that cannot be listed is a
/// [`Source::Unsearchable`] in its place), anything else is a file.
pub fn expand_inputs(inputs: &[PathBuf]) -> anyhow::Result<Vec<Source>> {
    // A second read of stdin would see an empty stream and report it as a malformed module.
    if inputs.iter().filter(|p| is_dash(p)).count() > 1 {
        bail!("stdin (`-`) is given more than once: it can be read only once");
    }
    if inputs.is_empty() {
        check_stdin_not_terminal()?;
        return Ok(vec![Source::Stdin]);
    }
    let mut out = Vec::new();
    for p in inputs {
        if is_dash(p) {
            check_stdin_not_terminal()?;
            out.push(Source::Stdin);
        } else if p.is_dir() {
            let mut walk = Walk::default();
            find_spv(p, None, &mut walk);
            if walk.is_empty() {
                bail!("no `*.spv` files found under `{}`", show_path(p));
            }
            let mut found: Vec<Source> = walk.files.into_iter().map(Source::File).collect();
            found.extend(
                walk.unsearchable
                    .into_iter()
                    .map(|(dir, e)| Source::Unsearchable(dir, e.to_string())),
            );
            found.sort_by(|a, b| a.path().cmp(&b.path()));
            out.extend(found);
        } else {
            out.push(Source::File(p.clone()));
        }
    }
    Ok(out)
}

impl Source {
    /// The path it names (none for stdin): the order of a directory's entries.
    fn path(&self) -> Option<&Path> {
        match self {
            Source::Stdin => None,
            Source::File(p) | Source::Unsearchable(p, _) => Some(p),
        }
    }
}

/// What [`find_spv`] found below a directory.
#[derive(Debug, Default)]
pub struct Walk {
    /// The `*.spv` files (regular files, links to them, and links that lead nowhere), unsorted.
    pub files: Vec<PathBuf>,
    /// The directories that could not be listed (the top one included), with why.
    pub unsearchable: Vec<(PathBuf, std::io::Error)>,
}

impl Walk {
    /// Whether the walk found nothing to report: no file and no unlistable directory.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.unsearchable.is_empty()
    }
}

/// Collects `*.spv` entries below `dir` into `walk`; symbolic links to directories are not
/// followed (no cycles).
/// A `*.spv` symbolic link that leads nowhere (dangling, or a loop) is collected too, so reading it
/// fails and the run reports it as unreadable rather than passing over a missing build product.
/// A `*.spv` entry that is (or links to) something other than a regular file or a directory (a
/// FIFO, a device, a socket) is skipped with a warning on stderr and never opened: a FIFO would
/// wait for a writer for ever, `/dev/zero` never ends.
/// A directory that cannot be listed is recorded in `walk.unsearchable` and the walk goes on.
/// `skip` (a canonical path) is a directory not to enter: `lower`'s output inside its input.
pub fn find_spv(dir: &Path, skip: Option<&Path>, walk: &mut Walk) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return walk.unsearchable.push((dir.to_owned(), e)),
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            // The listing broke off: what was listed so far stands, the directory is reported.
            Err(e) => return walk.unsearchable.push((dir.to_owned(), e)),
        };
        let path = entry.path();
        // `file_type` does not follow links: a link to a directory is not entered.
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            if skip.is_some_and(|s| std::fs::canonicalize(&path).is_ok_and(|c| c == s)) {
                continue;
            }
            find_spv(&path, skip, walk);
        } else if path.extension().is_some_and(|e| e == "spv") {
            // What the entry leads to, links followed; a dangling link is read (and reported).
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if !m.is_file() => eprint_line(&format!(
                    "warning: skipping `{}`: {}, not a regular file",
                    show_path(&path),
                    special_kind(&m, entry.file_type().is_ok_and(|t| t.is_symlink()))
                )),
                _ => walk.files.push(path),
            }
        }
    }
}

/// What a special file is, for the warning that skips it: `it is a FIFO`, `it links to a
/// character device`.
fn special_kind(m: &std::fs::Metadata, through_link: bool) -> String {
    #[cfg(unix)]
    let what = {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "a special file"
        }
    };
    #[cfg(not(unix))]
    let what = {
        let _ = m;
        "a special file"
    };
    if through_link {
        format!("it links to {what}")
    } else {
        format!("it is {what}")
    }
}

/// Whether the error comes from writing into a closed pipe (e.g. `spv-subgroup ... | head`).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes text to stdout, reporting `BrokenPipe` as an error (unlike `print!`, which panics).
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `text` as it may reach a terminal: every control character but the line break written as
/// `\u{..}`, the escaping findings and file names get ([`escape_controls`]), so text from an input
/// (a target's `name`, a vulkaninfo `deviceName`) quoted in a message cannot send escape
/// sequences. Text already escaped is unchanged.
///
/// [`escape_controls`]: spv_subgroup_validate::escape_controls
pub fn terminal_text(text: &str) -> String {
    text.split('\n')
        .map(spv_subgroup_validate::escape_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prints `line` and a line break on stderr, as `eprintln!` does, but a failed write (stderr a
/// pipe already closed: `... 2>&1 | head -1`) is ignored where `eprintln!` panics (exit 101): the
/// exit status must still say what happened.
pub fn eprint_line(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// `error: ...` with anyhow's `Caused by:` list, without the backtrace `{:?}` adds when
/// `RUST_BACKTRACE` is set (a user-facing message, not a crash report); control characters
/// escaped ([`terminal_text`]).
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut s = format!("error: {}", terminal_text(&e.to_string()));
    let causes: Vec<String> = e
        .chain()
        .skip(1)
        .map(|c| terminal_text(&c.to_string()))
        .collect();
    if !causes.is_empty() {
        s.push_str("\n\nCaused by:");
        for (i, c) in causes.iter().enumerate() {
            if causes.len() == 1 {
                s.push_str(&format!("\n    {c}"));
            } else {
                s.push_str(&format!("\n    {i}: {c}"));
            }
        }
    }
    s
}

#[cfg(test)]
mod into_le_bytes_tests {
    use super::into_le_bytes;

    #[test]
    fn same_bytes_as_word_by_word_across_chunks() {
        for n in [0usize, 1, 5, (1 << 16) - 1, 1 << 16, (1 << 17) + 3] {
            let words: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b1)).collect();
            let expected: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert!(into_le_bytes(words) == expected, "{n} words");
        }
    }
}
