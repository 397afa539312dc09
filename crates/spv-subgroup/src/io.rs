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
}

impl Source {
    /// The name findings and messages use for this input.
    pub fn display_name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(p) => show_path(p),
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
fn words_from_reader(mut r: impl Read, size: u64) -> std::io::Result<Result<Words, ParseError>> {
    const MAGIC: u32 = 0x0723_0203;
    let mut words: Vec<u32> = Vec::with_capacity(usize::try_from(size / 4).unwrap_or(0));
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
/// below it (recursively, sorted), anything else is a file.
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
            let mut found = Vec::new();
            find_spv(p, None, &mut found)
                .with_context(|| format!("cannot search directory `{}`", show_path(p)))?;
            if found.is_empty() {
                bail!("no `*.spv` files found under `{}`", show_path(p));
            }
            found.sort();
            out.extend(found.into_iter().map(Source::File));
        } else {
            out.push(Source::File(p.clone()));
        }
    }
    Ok(out)
}

/// Collects `*.spv` entries below `dir`; symbolic links to directories are not followed (no cycles).
/// A `*.spv` symbolic link that leads nowhere (dangling, or a loop) is collected too, so reading it
/// fails and the run reports it as unreadable rather than passing over a missing build product.
/// `skip` (a canonical path) is a directory not to enter: `lower`'s output inside its input.
pub fn find_spv(dir: &Path, skip: Option<&Path>, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            if skip.is_some_and(|s| std::fs::canonicalize(&path).is_ok_and(|c| c == s)) {
                continue;
            }
            find_spv(&path, skip, found)?;
        } else if path.extension().is_some_and(|e| e == "spv") && !path.is_dir() {
            found.push(path);
        }
    }
    Ok(())
}

/// Writes `bytes` to `out`: `-` (and `/dev/stdout`) is stdout; see [`crate::output`] for files.
pub fn write_atomically(out: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    crate::output::write_output(out, bytes)
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

/// `error: ...` with anyhow's `Caused by:` list, without the backtrace `{:?}` adds when
/// `RUST_BACKTRACE` is set (a user-facing message, not a crash report).
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut s = format!("error: {e}");
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
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
