//! The layer's files: the disk cache (`SPV_SUBGROUP_LAYER_CACHE`) and the dump folder
//! (`SPV_SUBGROUP_LAYER_DUMP`), safe in a folder other users can reach (docs/layer.md, "The disk
//! cache and the dump folder", states the threat model).
//!
//! - The cache folder is used only when this user owns it and neither group nor others may write
//!   it ([`CacheFolder::open`]); it is opened once per device and every file in it is then named
//!   relative to that descriptor, so a folder swapped after the check is never written.
//! - Its secret key (32 bytes from the OS's random source, in [`KEY_FILE`], mode 0600) keys the
//!   entries' names, so no one else can predict them, and their MACs (blake3's keyed mode): an
//!   entry holds the lowered words and a MAC of them and of what they stand for (the original
//!   words, the target with the layer's version, the subgroup size).
//! - An entry is read only if it is a regular file of this user, not behind a link, and no larger
//!   than a bound from the original's size; it is opened without blocking (a FIFO is a miss, not
//!   a hang) and read up to the bound. Anything else is a miss, which the caller logs and then
//!   replaces with a fresh lowering.
//! - Every file is written through a temporary file created exclusively under a random name (a
//!   planted link is never followed) and renamed into place; the temporary is removed on every
//!   failure (a full disk leaves nothing behind). The dump folder is written the same way.
//!
//! No heap memory outlives a call here except through the caller: a [`CacheFolder`] is a
//! descriptor and two keys, and the words a lookup returns are the caller's to copy under its
//! allocation route (`host_memory.rs`).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::OnceLock;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::settings::Settings;

/// The secret key's file in the cache folder.
pub const KEY_FILE: &str = ".spv-subgroup-layer.key";

/// What an entry file starts with: the format (the layer's version is part of the MAC's input).
const ENTRY_MAGIC: &[u8; 8] = b"SPVSGLC1";

/// The entry's header: the format, then the MAC of the lowered words that follow.
const HEADER_LEN: usize = ENTRY_MAGIC.len() + blake3::OUT_LEN;

/// The largest entry read back for an original of `original_words` words: 32 times the original
/// plus 1 MiB, far above what lowering or emulation makes of a module (a few times the
/// original), so that a lookup never reads more than that whatever the file claims.
pub fn entry_bound(original_words: usize) -> u64 {
    let original = (original_words as u64).saturating_mul(4);
    (HEADER_LEN as u64)
        .saturating_add(original.saturating_mul(32))
        .saturating_add(1 << 20)
}

/// The flags every entry and key read opens with: no link followed, no wait on a FIFO, no
/// controlling terminal, not inherited by a child.
fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC
}

/// A device's disk cache: its folder, opened (and checked) on first use.
#[derive(Debug, Default)]
pub struct DiskCache {
    folder: OnceLock<Option<CacheFolder>>,
}

impl DiskCache {
    /// The cache folder `settings` name, opened on the first call; `None` without
    /// `SPV_SUBGROUP_LAYER_CACHE`, or when the folder is refused (logged once, here, with why).
    pub fn folder(&self, settings: &Settings) -> Option<&CacheFolder> {
        let dir = settings.cache_dir.as_ref()?;
        self.folder
            .get_or_init(|| {
                CacheFolder::open(dir)
                    .inspect_err(|why| {
                        settings.error(&format!(
                            "the disk cache {} is not used: {why}",
                            dir.display()
                        ))
                    })
                    .ok()
            })
            .as_ref()
    }
}

/// An opened, checked cache folder and the keys from its secret.
pub struct CacheFolder {
    dir: OwnedFd,
    /// Keys the entries' names (`derive_key` of the secret, one purpose per key).
    name_key: [u8; 32],
    /// Keys the entries' MACs.
    mac_key: [u8; 32],
    /// The user every entry must belong to (this process's effective user).
    owner: u32,
}

impl std::fmt::Debug for CacheFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keys stay out of any log.
        f.debug_struct("CacheFolder")
            .field("dir", &self.dir)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl CacheFolder {
    /// Opens the cache folder `path`, creating it (mode 0700) if it is missing, and its secret
    /// key, creating that on first use. Refused, with why: a folder that is a link (its last
    /// component: name the real folder), not this user's, or writable by group or others (a
    /// sticky `/tmp`-like folder too: anyone could plant entries in it before we do); a key
    /// file that is not this user's regular file of 32 bytes readable by no one else.
    pub fn open(path: &Path) -> Result<CacheFolder, String> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| format!("cannot create it: {e}"))?;
        let dir = open_folder(path)?;
        let owner = rustix::process::geteuid().as_raw();
        let stat = rustix::fs::fstat(&dir).map_err(|e| format!("cannot stat it: {e}"))?;
        if stat.st_uid != owner {
            return Err(format!(
                "it belongs to uid {}, not to this user (uid {owner}): its owner could plant \
                 or change entries",
                stat.st_uid
            ));
        }
        let mode = Mode::from_raw_mode(stat.st_mode);
        if mode.intersects(Mode::WGRP | Mode::WOTH) {
            return Err(format!(
                "its mode {:o} lets group or others write it, and so plant or replace entries \
                 (make it `chmod go-w`, or name a folder of your own)",
                mode.bits()
            ));
        }
        let secret = secret_key(dir.as_fd(), owner, &mut random_u64)?;
        Ok(CacheFolder {
            name_key: blake3::derive_key("spv-subgroup layer cache 1: entry names", &secret),
            mac_key: blake3::derive_key("spv-subgroup layer cache 1: entry MACs", &secret),
            dir,
            owner,
        })
    }

    /// The digest of what an entry stands for: the original words under `context` (the target
    /// and the layer's version) at subgroup size `size`. Its first half names the entry.
    fn binding(&self, context: &str, size: Option<u32>, original: &[u32]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.name_key);
        h.update(&(context.len() as u64).to_le_bytes());
        h.update(context.as_bytes());
        h.update(&size.map_or([0; 5], |s| {
            let [a, b, c, d] = s.to_le_bytes();
            [1, a, b, c, d]
        }));
        h.update(&(original.len() as u64).to_le_bytes());
        update_words(&mut h, original);
        h.finalize()
    }

    /// The entry's file name: 128 bits of the keyed binding, which only this user can compute.
    pub fn entry_name(&self, context: &str, size: Option<u32>, original: &[u32]) -> String {
        entry_name_of(&self.binding(context, size, original))
    }

    /// The MAC of `lowered` (little-endian bytes) standing for `binding`.
    fn mac(&self, binding: &blake3::Hash, lowered: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.mac_key);
        h.update(binding.as_bytes());
        h.update(lowered);
        h.finalize()
    }

    /// The lowered words cached for `original` under `context` at `size`: `Ok(None)` where
    /// there is no entry, `Err` (why, naming the entry) for an entry that is refused.
    pub fn lookup(
        &self,
        context: &str,
        size: Option<u32>,
        original: &[u32],
    ) -> Result<Option<Vec<u32>>, String> {
        let binding = self.binding(context, size, original);
        let name = entry_name_of(&binding);
        let refused = |why: String| format!("the entry {name} {why}");
        let fd = match rustix::fs::openat(&self.dir, name.as_str(), read_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(refused("is a symbolic link".into())),
            Err(e) => return Err(refused(format!("cannot be opened: {e}"))),
        };
        let bound = entry_bound(original.len());
        let bytes = read_checked(fd, self.owner, bound).map_err(refused)?;
        let body = bytes
            .strip_prefix(ENTRY_MAGIC.as_slice())
            .and_then(|rest| rest.split_at_checked(blake3::OUT_LEN))
            .filter(|(_, lowered)| lowered.len().is_multiple_of(4))
            .ok_or_else(|| {
                refused(format!(
                    "is truncated or of another format ({} bytes)",
                    bytes.len()
                ))
            })?;
        let (tag, lowered) = body;
        // `Hash`'s equality is constant-time.
        if blake3::Hash::from_slice(tag).ok() != Some(self.mac(&binding, lowered)) {
            return Err(refused(
                "does not verify: its MAC is not this user's for this module and target (it \
                 was changed, truncated or planted)"
                    .into(),
            ));
        }
        words_of(lowered)
            .map(Some)
            .ok_or_else(|| refused("verifies but holds no module".into()))
    }

    /// Stores `lowered` as the entry of `original` under `context` at `size`, replacing what
    /// was there (a refused entry among others).
    pub fn store(
        &self,
        context: &str,
        size: Option<u32>,
        original: &[u32],
        lowered: &[u32],
    ) -> Result<(), String> {
        let binding = self.binding(context, size, original);
        let name = entry_name_of(&binding);
        let bytes = le_bytes(lowered);
        if (HEADER_LEN + bytes.len()) as u64 > entry_bound(original.len()) {
            return Err(format!(
                "the entry {name} is not written: its {} bytes pass the bound a lookup reads \
                 ({} bytes)",
                bytes.len(),
                entry_bound(original.len())
            ));
        }
        let tag = self.mac(&binding, &bytes);
        let fill = |file: &mut File| {
            file.write_all(ENTRY_MAGIC)?;
            file.write_all(tag.as_bytes())?;
            file.write_all(&bytes)?;
            file.sync_all()
        };
        write_atomically(self.dir.as_fd(), &name, ENTRY_MODE, &mut random_u64, fill)
            .map_err(|e| format!("cannot write the entry {name}: {e}"))
    }
}

/// Cache entries and the key are this user's alone.
const ENTRY_MODE: u32 = 0o600;

/// Dumps are for bug reports: readable as the umask lets them be.
const DUMP_MODE: u32 = 0o644;

/// Writes `words` to `dir/file` for `SPV_SUBGROUP_LAYER_DUMP`, creating the folder if it is
/// missing. The folder may be anyone's (nothing is read back from it); a link as its last
/// component is refused, and the file goes through an exclusive temporary and a rename, which
/// replaces whatever was at `file` (a planted link among others) without following it.
pub fn dump(dir: &Path, file: &str, words: &[u32]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the folder: {e}"))?;
    let dir = open_folder(dir)?;
    let bytes = le_bytes(words);
    let fill = |f: &mut File| {
        f.write_all(&bytes)?;
        f.sync_all()
    };
    write_atomically(dir.as_fd(), file, DUMP_MODE, &mut random_u64, fill).map_err(|e| e.to_string())
}

/// Opens a folder without following a link as its last component.
fn open_folder(path: &Path) -> Result<OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::empty()).map_err(|e| match e {
        // A link opened with O_NOFOLLOW|O_DIRECTORY gives ENOTDIR (or ELOOP).
        Errno::LOOP | Errno::NOTDIR => {
            "it is a symbolic link or no folder (name the real folder)".to_owned()
        }
        e => format!("cannot open it: {e}"),
    })
}

/// Reads the file `fd` after checking it with `fstat`: a regular file of `owner`, at most
/// `bound` bytes. No more than `bound` bytes are read whatever happens to it meanwhile.
fn read_checked(fd: OwnedFd, owner: u32, bound: u64) -> Result<Vec<u8>, String> {
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot be read: {e}"))?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Err(format!("is not a regular file but a {kind:?}"));
    }
    if stat.st_uid != owner {
        return Err(format!(
            "belongs to uid {}, not to this user (uid {owner})",
            stat.st_uid
        ));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > bound {
        return Err(format!(
            "holds {size} bytes, more than the {bound} bytes it may hold"
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    File::from(fd)
        .take(bound)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    Ok(bytes)
}

/// The folder's secret key: read from [`KEY_FILE`], or made from the OS's random source and
/// published there without replacing one that another process published first.
fn secret_key(
    dir: BorrowedFd<'_>,
    owner: u32,
    random: &mut dyn FnMut() -> io::Result<u64>,
) -> Result<[u8; 32], String> {
    // Twice at most: a second round reads the key a concurrent process published first.
    for _ in 0..2 {
        match rustix::fs::openat(dir, KEY_FILE, read_flags(), Mode::empty()) {
            Ok(fd) => {
                let stat = rustix::fs::fstat(&fd)
                    .map_err(|e| format!("its key file {KEY_FILE} cannot be read: {e}"))?;
                if Mode::from_raw_mode(stat.st_mode).intersects(Mode::RWXG | Mode::RWXO) {
                    return Err(format!(
                        "its key file {KEY_FILE} has mode {:o}: others may read it (remove it \
                         to start afresh)",
                        Mode::from_raw_mode(stat.st_mode).bits()
                    ));
                }
                let bytes = read_checked(fd, owner, 32)
                    .map_err(|why| format!("its key file {KEY_FILE} {why}"))?;
                return <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
                    format!(
                        "its key file {KEY_FILE} holds {} bytes, not 32 (remove it to start \
                         afresh)",
                        bytes.len()
                    )
                });
            }
            Err(Errno::NOENT) => {}
            Err(Errno::LOOP) => return Err(format!("its key file {KEY_FILE} is a symbolic link")),
            Err(e) => return Err(format!("its key file {KEY_FILE} cannot be opened: {e}")),
        }
        let mut secret = [0; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| format!("no random bytes for its key file {KEY_FILE}: {e}"))?;
        let fill = |f: &mut File| {
            f.write_all(&secret)?;
            f.sync_all()
        };
        match publish_new(dir, KEY_FILE, ENTRY_MODE, random, fill) {
            Ok(()) => return Ok(secret),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot write its key file {KEY_FILE}: {e}")),
        }
    }
    Err(format!(
        "its key file {KEY_FILE} keeps appearing and vanishing"
    ))
}

/// 64 random bits from the OS, for temporary names.
fn random_u64() -> io::Result<u64> {
    let mut bytes = [0; 8];
    getrandom::fill(&mut bytes)?;
    Ok(u64::from_le_bytes(bytes))
}

/// A temporary file in a folder, removed when dropped unless it was renamed into place: every
/// failure (write, fsync, rename, a panic) leaves no file behind.
struct Temporary<'d> {
    dir: BorrowedFd<'d>,
    name: String,
    renamed: bool,
}

impl Temporary<'_> {
    /// Creates a new file, exclusively (`O_CREAT|O_EXCL` follows no link: a name someone planted
    /// is taken as taken, and another is drawn), under a name of 64 bits from `random`.
    fn create<'d>(
        dir: BorrowedFd<'d>,
        mode: u32,
        random: &mut dyn FnMut() -> io::Result<u64>,
    ) -> io::Result<(Temporary<'d>, File)> {
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..16 {
            let name = format!(".spv-subgroup-{:016x}.tmp", random()?);
            match rustix::fs::openat(dir, name.as_str(), flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => {
                    let temp = Temporary {
                        dir,
                        name,
                        renamed: false,
                    };
                    return Ok((temp, File::from(fd)));
                }
                Err(Errno::EXIST) => last = Errno::EXIST.into(),
                Err(e) => return Err(e.into()),
            }
        }
        Err(last)
    }
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// Writes `dir/file` through an exclusive temporary that `fill` writes (and syncs) and a
/// rename, so a reader (another process sharing the folder) never sees half a file.
fn write_atomically(
    dir: BorrowedFd<'_>,
    file: &str,
    mode: u32,
    random: &mut dyn FnMut() -> io::Result<u64>,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let (mut temp, mut f) = Temporary::create(dir, mode, random)?;
    fill(&mut f)?;
    drop(f);
    rustix::fs::renameat(dir, temp.name.as_str(), dir, file)?;
    temp.renamed = true;
    Ok(())
}

/// Like [`write_atomically`], but publishes with a hard link, which fails (`AlreadyExists`)
/// where `file` exists instead of replacing it. The temporary is removed either way.
fn publish_new(
    dir: BorrowedFd<'_>,
    file: &str,
    mode: u32,
    random: &mut dyn FnMut() -> io::Result<u64>,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let (temp, mut f) = Temporary::create(dir, mode, random)?;
    fill(&mut f)?;
    drop(f);
    rustix::fs::linkat(dir, temp.name.as_str(), dir, file, AtFlags::empty())?;
    Ok(())
}

/// The entry name of a binding digest.
fn entry_name_of(binding: &blake3::Hash) -> String {
    let hex = binding.to_hex();
    format!("{}.spv", &hex[..32])
}

/// Hashes words as little-endian bytes, a page at a time (no copy of the whole module).
fn update_words(h: &mut blake3::Hasher, words: &[u32]) {
    let mut page = [0u8; 4096];
    for chunk in words.chunks(page.len() / 4) {
        for (bytes, w) in page.chunks_exact_mut(4).zip(chunk) {
            bytes.copy_from_slice(&w.to_le_bytes());
        }
        h.update(&page[..chunk.len() * 4]);
    }
}

/// The little-endian bytes of `words`, as SPIR-V files hold them.
fn le_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The words of a SPIR-V file (little-endian, as we write them), or `None` for bytes that are
/// no module.
fn words_of(bytes: &[u8]) -> Option<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) || bytes.len() < 20 {
        return None;
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (words[0] == 0x0723_0203).then_some(words)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::PathBuf;

    const CONTEXT: &str = "0.1.0|a test target|emulated size None";

    /// A module-shaped original and what it lowers to (only their words matter here).
    fn original() -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 40, 0];
        w.extend(1..200);
        w
    }

    fn lowered() -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 80, 0];
        w.extend(1000..1600);
        w
    }

    /// A fresh cache folder of this user's (a temporary folder, mode 0700), opened.
    fn fresh() -> (tempfile::TempDir, CacheFolder) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let folder = CacheFolder::open(dir.path()).expect("a folder of our own is used");
        (dir, folder)
    }

    fn entry(dir: &tempfile::TempDir, folder: &CacheFolder) -> PathBuf {
        dir.path()
            .join(folder.entry_name(CONTEXT, Some(8), &original()))
    }

    fn lookup(folder: &CacheFolder) -> Result<Option<Vec<u32>>, String> {
        folder.lookup(CONTEXT, Some(8), &original())
    }

    fn store(folder: &CacheFolder) {
        folder
            .store(CONTEXT, Some(8), &original(), &lowered())
            .expect("the entry is written");
    }

    /// The names in `dir`, sorted.
    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("the folder")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    fn expect_refused(got: Result<Option<Vec<u32>>, String>, why: &str) {
        match got {
            Err(message) => assert!(message.contains(why), "{message}"),
            Ok(found) => panic!("expected a refusal ({why}), got {found:?}"),
        }
    }

    #[test]
    fn an_entry_is_read_back_only_for_its_own_original_target_and_size() {
        let (dir, folder) = fresh();
        assert_eq!(lookup(&folder), Ok(None), "no entry yet");
        store(&folder);
        assert_eq!(lookup(&folder), Ok(Some(lowered())));
        // Written mode 0600, with the key file beside it (0600 too), and nothing else.
        let path = entry(&dir, &folder);
        assert_eq!(
            std::fs::metadata(&path).expect("the entry").mode() & 0o777,
            0o600
        );
        let key = dir.path().join(KEY_FILE);
        assert_eq!(
            std::fs::metadata(&key).expect("the key").mode() & 0o777,
            0o600
        );
        assert_eq!(names(dir.path()).len(), 2, "{:?}", names(dir.path()));
        // The name is keyed: another folder (another key) names the same module otherwise, and
        // a reopened folder keeps its key.
        let (_other_dir, other) = fresh();
        assert_ne!(
            other.entry_name(CONTEXT, Some(8), &original()),
            folder.entry_name(CONTEXT, Some(8), &original())
        );
        let reopened = CacheFolder::open(dir.path()).expect("the same folder");
        assert_eq!(lookup(&reopened), Ok(Some(lowered())));
        // Another original, target or size has another entry...
        let mut changed = original();
        changed[7] ^= 1;
        assert_eq!(folder.lookup(CONTEXT, Some(8), &changed), Ok(None));
        assert_eq!(
            folder.lookup("0.1.1|a test target", Some(8), &original()),
            Ok(None)
        );
        assert_eq!(folder.lookup(CONTEXT, None, &original()), Ok(None));
        // ...and this entry copied under another's name does not verify: the MAC binds it to
        // the original it stands for.
        std::fs::copy(
            &path,
            dir.path()
                .join(folder.entry_name(CONTEXT, Some(8), &changed)),
        )
        .expect("a copy");
        expect_refused(folder.lookup(CONTEXT, Some(8), &changed), "does not verify");
    }

    #[test]
    fn a_poisoned_entry_with_a_module_header_is_a_miss_and_is_replaced() {
        let (dir, folder) = fresh();
        store(&folder);
        let path = entry(&dir, &folder);
        // Another module, in our format with a made-up MAC, and as a bare SPIR-V file.
        let evil: Vec<u32> = vec![0x0723_0203, 0x0001_0300, 0, 10, 0, 0xbad0_bad0];
        let mut forged = ENTRY_MAGIC.to_vec();
        forged.extend([0x5a; 32]);
        forged.extend(le_bytes(&evil));
        for bytes in [forged, le_bytes(&evil)] {
            std::fs::write(&path, &bytes).expect("planting");
            expect_refused(lookup(&folder), "");
            // The next lowering's store replaces it.
            store(&folder);
            assert_eq!(lookup(&folder), Ok(Some(lowered())));
        }
        // One flipped bit of the lowered words.
        let mut bytes = std::fs::read(&path).expect("the entry");
        *bytes.last_mut().expect("a byte") ^= 0x10;
        std::fs::write(&path, &bytes).expect("corrupting");
        expect_refused(lookup(&folder), "does not verify");
    }

    #[test]
    fn a_truncated_entry_is_a_miss() {
        let (dir, folder) = fresh();
        store(&folder);
        let path = entry(&dir, &folder);
        let whole = std::fs::read(&path).expect("the entry");
        for len in [
            0,
            3,
            8,
            HEADER_LEN,
            HEADER_LEN + 20,
            400,
            whole.len() - 4,
            whole.len() - 1,
        ] {
            std::fs::write(&path, &whole[..len]).expect("truncating");
            let got = lookup(&folder);
            assert!(got.is_err(), "{len} bytes: {got:?}");
        }
        std::fs::write(&path, &whole).expect("restoring");
        assert_eq!(lookup(&folder), Ok(Some(lowered())));
    }

    #[test]
    fn a_fifo_entry_is_a_miss_at_once() {
        let (dir, folder) = fresh();
        let name = folder.entry_name(CONTEXT, Some(8), &original());
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join(&name).as_path(),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        // On a thread: a lookup that opened the FIFO for reading would wait for a writer for
        // ever, and the test then fails on the timeout instead of hanging.
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = send.send(lookup(&folder));
        });
        let got = receive
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lookup of a FIFO entry returns (it blocked for 10 s)");
        expect_refused(got, "not a regular file");
        drop(dir);
    }

    #[test]
    fn an_entry_behind_a_link_is_a_miss() {
        let (dir, folder) = fresh();
        store(&folder);
        let path = entry(&dir, &folder);
        // A link to a valid entry (which would verify if the link were followed) and to
        // /dev/zero (which would be read without end).
        let elsewhere = dir.path().join("elsewhere.spv");
        std::fs::rename(&path, &elsewhere).expect("moving the entry");
        for target in [elsewhere.as_path(), Path::new("/dev/zero")] {
            std::os::unix::fs::symlink(target, &path).expect("a link");
            expect_refused(lookup(&folder), "symbolic link");
            std::fs::remove_file(&path).expect("removing the link");
        }
        // A link left as the entry is replaced, not written through.
        std::os::unix::fs::symlink(&elsewhere, &path).expect("a link");
        let before = std::fs::read(&elsewhere).expect("the target");
        store(&folder);
        assert!(!std::fs::symlink_metadata(&path)
            .expect("the entry")
            .is_symlink());
        assert_eq!(std::fs::read(&elsewhere).expect("the target"), before);
    }

    #[test]
    fn an_oversized_entry_is_a_miss_without_being_read() {
        let (dir, folder) = fresh();
        store(&folder);
        let path = entry(&dir, &folder);
        // A sparse file of a gigabyte: refused by its size, before any read.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("the entry");
        file.set_len(1 << 30).expect("growing it");
        let start = std::time::Instant::now();
        expect_refused(lookup(&folder), "more than the");
        assert!(start.elapsed().as_secs() < 2, "{:?}", start.elapsed());
        // Just past the bound, too.
        file.set_len(entry_bound(original().len()) + 1)
            .expect("shrinking it");
        expect_refused(lookup(&folder), "more than the");
        // A lowering too large to read back is not written.
        let huge = vec![0u32; entry_bound(original().len()) as usize / 4];
        let refused = folder
            .store(CONTEXT, Some(8), &original(), &huge)
            .expect_err("too large");
        assert!(refused.contains("bound"), "{refused}");
    }

    #[test]
    fn an_entry_of_another_user_is_a_miss_and_is_replaced() {
        let (dir, mut folder) = fresh();
        store(&folder);
        let path = entry(&dir, &folder);
        let me = rustix::process::geteuid().as_raw();
        if me == 0 {
            // Root gives the entry away to `nobody`, as if `nobody` had written it.
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).expect("chown to nobody");
            expect_refused(lookup(&folder), "belongs to uid 65534");
            store(&folder);
            assert_eq!(std::fs::metadata(&path).expect("the entry").uid(), 0);
            assert_eq!(lookup(&folder), Ok(Some(lowered())));
        } else {
            // Without root no file can be given away: the folder is told to expect another
            // user, which makes our own entry someone else's, through the same fstat check.
            folder.owner = me + 1;
            expect_refused(lookup(&folder), &format!("belongs to uid {me}"));
        }
    }

    #[test]
    fn a_folder_others_may_write_or_a_link_is_refused() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).expect("the folder");
        for (mode, refused) in [(0o777, true), (0o1777, true), (0o770, true), (0o755, false)] {
            std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let got = CacheFolder::open(&cache);
            assert_eq!(got.is_err(), refused, "mode {mode:o}: {got:?}");
            if refused {
                assert!(got.unwrap_err().contains("group or others"));
            }
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&cache, &link).expect("a link");
        let got = CacheFolder::open(&link).expect_err("a link");
        assert!(got.contains("symbolic link"), "{got}");
        // A folder of another user: root gives one to `nobody`; anyone else finds `/` (root's).
        let theirs = if rustix::process::geteuid().is_root() {
            let theirs = dir.path().join("theirs");
            std::fs::create_dir(&theirs).expect("the folder");
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
            theirs
        } else {
            PathBuf::from("/")
        };
        let got = CacheFolder::open(&theirs).expect_err("another user's folder");
        assert!(got.contains("not to this user"), "{got}");
    }

    #[test]
    fn a_key_file_others_may_read_or_a_link_refuses_the_folder() {
        let (dir, _) = fresh();
        let key = dir.path().join(KEY_FILE);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let got = CacheFolder::open(dir.path()).expect_err("a readable key");
        assert!(got.contains("others may read it"), "{got}");
        std::fs::remove_file(&key).expect("removing the key");
        std::os::unix::fs::symlink("/dev/zero", &key).expect("a link");
        let got = CacheFolder::open(dir.path()).expect_err("a linked key");
        assert!(got.contains("symbolic link"), "{got}");
        std::fs::remove_file(&key).expect("removing the link");
        std::fs::write(&key, [0; 7]).expect("a short key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let got = CacheFolder::open(dir.path()).expect_err("a short key");
        assert!(got.contains("not 32"), "{got}");
    }

    /// Names `random` will draw: the planted ones first, then fresh ones.
    fn drawing(values: Vec<u64>) -> impl FnMut() -> io::Result<u64> {
        let mut values = values.into_iter();
        move || Ok(values.next().unwrap_or(0xfeed))
    }

    #[test]
    fn a_link_planted_at_a_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "the user's file").expect("a file");
        // Links at the names the first three draws give: each is taken as taken.
        let planted: Vec<u64> = vec![1, 2, 3];
        for n in &planted {
            let name = dir.path().join(format!(".spv-subgroup-{n:016x}.tmp"));
            std::os::unix::fs::symlink(&precious, name).expect("a link");
        }
        let fd = open_folder(dir.path()).expect("the folder");
        write_atomically(fd.as_fd(), "out.spv", 0o600, &mut drawing(planted), |f| {
            f.write_all(b"module")
        })
        .expect("written under a fourth name");
        assert_eq!(
            std::fs::read(&precious).expect("precious"),
            b"the user's file"
        );
        assert_eq!(
            std::fs::read(dir.path().join("out.spv")).expect("out"),
            b"module"
        );
        // Only links at every name drawn stop the write, still without following one.
        let mut always = || Ok(1);
        let err = write_atomically(fd.as_fd(), "out.spv", 0o600, &mut always, |f| {
            f.write_all(b"other")
        })
        .expect_err("every name taken");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read(&precious).expect("precious"),
            b"the user's file"
        );
    }

    #[test]
    fn a_failed_write_or_rename_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let fd = open_folder(dir.path()).expect("the folder");
        // A full disk: the writer fails half-way, as `write` does with ENOSPC.
        let full = |f: &mut File| {
            f.write_all(b"half a mod")?;
            Err(io::Error::from_raw_os_error(28))
        };
        let err = write_atomically(fd.as_fd(), "out.spv", 0o600, &mut random_u64, full)
            .expect_err("ENOSPC");
        assert_eq!(err.raw_os_error(), Some(28));
        assert_eq!(names(dir.path()), Vec::<String>::new());
        // A rename that fails: the name is a folder that is not empty.
        std::fs::create_dir_all(dir.path().join("out.spv/inside")).expect("a folder");
        write_atomically(fd.as_fd(), "out.spv", 0o600, &mut random_u64, |f| {
            f.write_all(b"module")
        })
        .expect_err("a rename onto a folder");
        assert_eq!(names(dir.path()), vec!["out.spv".to_owned()]);
    }

    #[test]
    fn the_dump_replaces_a_planted_link_without_following_it() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let folder = dir.path().join("dump");
        std::fs::create_dir(&folder).expect("the folder");
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "the user's file").expect("a file");
        std::os::unix::fs::symlink(&precious, folder.join("K.original.spv")).expect("a link");
        dump(&folder, "K.original.spv", &original()).expect("dumped");
        assert_eq!(
            std::fs::read(&precious).expect("precious"),
            b"the user's file"
        );
        assert_eq!(names(&folder), vec!["K.original.spv".to_owned()]);
        assert_eq!(
            words_of(&std::fs::read(folder.join("K.original.spv")).expect("the dump")),
            Some(original())
        );
        // A dump folder that is a link is refused.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&folder, &link).expect("a link");
        let got = dump(&link, "K.lowered.spv", &lowered()).expect_err("a linked folder");
        assert!(got.contains("symbolic link"), "{got}");
    }

    #[test]
    fn cache_files_that_are_no_module_are_misses() {
        assert_eq!(words_of(&[1, 2, 3]), None);
        assert_eq!(words_of(&[0; 20]), None);
        let mut ok = 0x0723_0203u32.to_le_bytes().to_vec();
        ok.extend([0; 16]);
        assert_eq!(words_of(&ok).map(|w| w.len()), Some(5));
    }
}
