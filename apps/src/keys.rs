//! The server's token keys on disk: the key ring file, first-run
//! generation, rotation, and picking up a changed file while running.
//!
//! # File format
//!
//! A key ring file holds one key per line as `<id>:<64 hex digits>`, the
//! id a number from 0 to 255 and the hex digits the 32 bytes of the key.
//! The first line is the current key, which seals new tokens; the lines
//! after it are earlier keys (at most [`MAX_PREVIOUS_KEYS`]), which still
//! open the tokens they sealed. Blank lines and lines starting with `#` are
//! ignored. Nothing else is a key file: not 32 raw bytes, not bare hex
//! without an id (one format leaves no doubt whether a 32-character
//! passphrase is a key). To make a file by hand:
//!
//! ```text
//! (umask 077; printf '0:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > token.key)
//! ```
//!
//! # Handling
//!
//! The file is a secret shared by a fleet. A server reads it only when it
//! is a regular file (not a symbolic link, which is not followed) that
//! neither group nor others may access (mode `0600` or stricter), and
//! refuses it otherwise with a [`KeyFileError`] saying why. It writes a new
//! ring (first run, `--rotate`) into a temporary file next to it, created
//! exclusively (never through a planted file or link) with mode `0600` set
//! on the open descriptor, then renames it over the old file, so a server
//! rereading it never sees half of it. Key bytes are cleared from memory
//! when the values holding them are dropped, and no `Debug` output shows
//! them.
//!
//! # Rotation
//!
//! Every server sharing the file (a fleet behind one name) opens every
//! other's tokens. To rotate across a fleet without refusing any token:
//! first add the new key as a *second* line on every server (all of them
//! now open it), then, once every server has picked that up, move it to the
//! first line (servers seal with it; the old key, now second, still opens
//! what was sealed before), and drop the oldest line once the token
//! lifetime has passed. Servers reread the file while running
//! ([`KeyRingWatcher`]); `cr-server --rotate` does the last two steps for
//! one server.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cr_endpoint::ex_token::{KeyRing, Rng, SystemRng, TokenKey, KEY_LEN, MAX_PREVIOUS_KEYS};
use zeroize::{Zeroize, Zeroizing};

use crate::error::AppError;
pub use crate::error::KeyFileError;

/// Largest key ring file read: a full ring is about 300 bytes, comments
/// included a few more; anything near this is not a key file.
const MAX_FILE_LEN: u64 = 64 * 1024;

/// Key material with its id, as kept in a key file. Its bytes are cleared
/// when it is dropped, and its `Debug` output shows the id only.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyMaterial {
    /// The id sealed boxes carry in clear to select the key.
    pub id: u8,
    /// The ChaCha20-Poly1305 key.
    pub bytes: [u8; KEY_LEN],
}

impl fmt::Debug for KeyMaterial {
    /// Never prints the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyMaterial").field("id", &self.id).finish()
    }
}

impl Drop for KeyMaterial {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl KeyMaterial {
    /// Fresh random material from the operating system.
    pub fn generate(id: u8) -> Result<KeyMaterial, AppError> {
        let mut key = KeyMaterial {
            id,
            bytes: [0u8; KEY_LEN],
        };
        SystemRng::new()
            .fill(&mut key.bytes)
            .map_err(|_| AppError::Invalid("the system random generator failed".into()))?;
        Ok(key)
    }

    /// Parses one key line, `<id>:<64 hex digits>` (see the module
    /// documentation). The error says what is wrong without quoting the
    /// line, which may hold key material.
    pub fn parse(line: &str) -> Result<KeyMaterial, String> {
        let Some((id, hex)) = line.trim().split_once(':') else {
            return Err(format!(
                "not a key: a key line is `<id>:<{} hex digits>`",
                2 * KEY_LEN
            ));
        };
        let id = id
            .trim()
            .parse::<u8>()
            .map_err(|_| "the key id is not a number from 0 to 255".to_string())?;
        let mut key = KeyMaterial {
            id,
            bytes: [0u8; KEY_LEN],
        };
        decode_hex(hex.trim(), &mut key.bytes)?;
        Ok(key)
    }

    /// The text form written to key files; cleared when dropped.
    pub fn to_text(&self) -> Zeroizing<String> {
        let mut text = Zeroizing::new(String::with_capacity(5 + 2 * KEY_LEN));
        text.push_str(&self.id.to_string());
        text.push(':');
        for byte in self.bytes {
            for nibble in [byte >> 4, byte & 0xf] {
                text.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
            }
        }
        text.push('\n');
        text
    }

    fn token_key(&self) -> Result<TokenKey, AppError> {
        TokenKey::from_bytes(self.id, &self.bytes)
            .map_err(|e| AppError::Invalid(format!("token key: {e}")))
    }
}

/// Decodes exactly `2 * KEY_LEN` hex digits into `out`.
fn decode_hex(hex: &str, out: &mut [u8; KEY_LEN]) -> Result<(), String> {
    if hex.len() != 2 * KEY_LEN {
        return Err(format!("a key is {} hex digits", 2 * KEY_LEN));
    }
    for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        let digit = |c: u8| char::from(c).to_digit(16);
        let (Some(high), Some(low)) = (digit(pair[0]), digit(pair[1])) else {
            out.zeroize();
            return Err("a key holds hex digits only".to_string());
        };
        *byte = (high * 16 + low) as u8;
    }
    Ok(())
}

/// The keys of a key ring file, current first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRingFile {
    keys: Vec<KeyMaterial>,
}

impl KeyRingFile {
    /// Parses a key ring file (see the module documentation).
    pub fn parse(contents: &[u8]) -> Result<KeyRingFile, KeyFileError> {
        let Ok(text) = std::str::from_utf8(contents) else {
            return Err(KeyFileError::Format(format!(
                "not text: a key ring file has one `<id>:<{} hex digits>` line per key",
                2 * KEY_LEN
            )));
        };
        let keys = text
            .lines()
            .enumerate()
            .map(|(n, line)| (n + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
            .map(|(n, line)| {
                KeyMaterial::parse(line)
                    .map_err(|why| KeyFileError::Format(format!("line {n}: {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ring = KeyRingFile { keys };
        ring.check().map_err(KeyFileError::Format)?;
        Ok(ring)
    }

    fn check(&self) -> Result<(), String> {
        if self.keys.is_empty() {
            return Err("no key".into());
        }
        if self.keys.len() > 1 + MAX_PREVIOUS_KEYS {
            return Err(format!(
                "{} keys; a ring holds the current key and at most {MAX_PREVIOUS_KEYS} earlier ones",
                self.keys.len()
            ));
        }
        for (n, key) in self.keys.iter().enumerate() {
            if self.keys[..n].iter().any(|k| k.id == key.id) {
                return Err(format!("key id {} appears twice", key.id));
            }
        }
        Ok(())
    }

    /// The text form written to key ring files; cleared when dropped.
    pub fn to_text(&self) -> Zeroizing<String> {
        let mut text = Zeroizing::new(String::new());
        for key in &self.keys {
            text.push_str(&key.to_text());
        }
        text
    }

    /// Id of the current key (the one sealing new tokens).
    pub fn current(&self) -> u8 {
        self.keys[0].id
    }

    /// Ids of the earlier keys that still open tokens, newest first.
    pub fn previous(&self) -> Vec<u8> {
        self.keys[1..].iter().map(|k| k.id).collect()
    }

    /// This ring with a freshly generated current key (an id none of the
    /// kept keys has); the oldest key goes beyond [`MAX_PREVIOUS_KEYS`].
    pub fn rotated(&self) -> Result<KeyRingFile, AppError> {
        let mut keys = self.keys.clone();
        keys.truncate(MAX_PREVIOUS_KEYS);
        let mut id = self.current().wrapping_add(1);
        while keys.iter().any(|k| k.id == id) {
            id = id.wrapping_add(1);
        }
        keys.insert(0, KeyMaterial::generate(id)?);
        Ok(KeyRingFile { keys })
    }

    /// What a server loaded, for its log.
    fn loaded(&self, generated: bool) -> LoadedKeys {
        LoadedKeys {
            current: self.current(),
            previous: self.previous(),
            generated,
        }
    }

    /// The ring token servers use: seals with the first key, opens with all.
    pub fn key_ring(&self) -> Result<KeyRing, AppError> {
        let mut oldest_first = self.keys.iter().rev();
        let invalid = |e| AppError::Invalid(format!("token keys: {e}"));
        let first = oldest_first
            .next()
            .ok_or_else(|| invalid("no key".to_string()))?;
        let mut ring = KeyRing::new(first.token_key()?);
        for key in oldest_first {
            ring.rotate(key.token_key()?)
                .map_err(|e| invalid(e.to_string()))?;
        }
        Ok(ring)
    }
}

/// Reads a key ring file's bytes: `None` when there is no file; refused
/// when it is a symbolic link, not a regular file, or open to group or
/// others.
pub fn read_key_file(path: &Path) -> Result<Option<Zeroizing<Vec<u8>>>, KeyFileError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    // Not through a link; and a FIFO planted at the path must not block the
    // open (the descriptor's type is checked next).
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let mut file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            return Err(if link {
                KeyFileError::Symlink
            } else {
                KeyFileError::Io("opening", e)
            });
        }
    };
    // The open descriptor's metadata: what was checked is what is read.
    let metadata = file
        .metadata()
        .map_err(|e| KeyFileError::Io("reading its metadata", e))?;
    if !metadata.is_file() {
        return Err(KeyFileError::NotAFile);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyFileError::Permissions(mode));
        }
    }
    let mut contents = Zeroizing::new(Vec::with_capacity(512));
    (&mut file)
        .take(MAX_FILE_LEN + 1)
        .read_to_end(&mut contents)
        .map_err(|e| KeyFileError::Io("reading", e))?;
    if contents.len() as u64 > MAX_FILE_LEN {
        return Err(KeyFileError::Format(format!(
            "longer than {MAX_FILE_LEN} bytes: not a key ring file"
        )));
    }
    Ok(Some(contents))
}

fn read_ring(path: &Path) -> Result<Option<KeyRingFile>, AppError> {
    let refused = |error| AppError::KeyFile(path.to_owned(), error);
    match read_key_file(path).map_err(refused)? {
        Some(contents) => KeyRingFile::parse(&contents).map(Some).map_err(refused),
        None => Ok(None),
    }
}

/// Replaces a key ring file at once (a server rereading it never sees half
/// of it) with a file only its owner may read.
///
/// The new contents go to `<path>.new`, created exclusively (so never into
/// a file or link someone left there: a leftover is removed, not followed)
/// with mode `0600` set on the descriptor, synced, then renamed over
/// `path` (which replaces a link at `path` rather than following it).
pub fn write_key_file(path: &Path, ring: &KeyRingFile) -> Result<(), KeyFileError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    let mut file = match create_exclusive(&temporary) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Left by an interrupted write, or planted: remove the entry
            // itself (a link, not its target) and create afresh.
            fs::remove_file(&temporary)
                .map_err(|e| KeyFileError::Io("removing a leftover temporary file", e))?;
            create_exclusive(&temporary)
        }
        created => created,
    }
    .map_err(|e| KeyFileError::Io("creating the temporary file", e))?;
    let written = restrict(&file)
        .and_then(|()| file.write_all(ring.to_text().as_bytes()))
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = fs::remove_file(&temporary);
        return Err(KeyFileError::Io("writing the temporary file", e));
    }
    fs::rename(&temporary, path).map_err(|e| KeyFileError::Io("renaming into place", e))?;
    // The rename itself survives a crash once the directory is synced.
    #[cfg(unix)]
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| KeyFileError::Io("syncing the directory", e))?;
    }
    Ok(())
}

/// Creates `path` for writing, failing if anything (even a dangling link)
/// is there.
fn create_exclusive(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Sets mode `0600` on the open file, whatever the umask left.
fn restrict(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

fn write_ring(path: &Path, ring: &KeyRingFile) -> Result<(), AppError> {
    write_key_file(path, ring).map_err(|e| AppError::KeyFile(path.to_owned(), e))
}

/// The keys a server loaded, for its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedKeys {
    /// Id of the key sealing new tokens.
    pub current: u8,
    /// Ids of the earlier keys still opening tokens, newest first.
    pub previous: Vec<u8>,
    /// Whether the current key was generated by this start.
    pub generated: bool,
}

/// Loads the key ring from `key_file`, generating the file on first use.
/// With `rotate`, a new current key is generated and the old ones kept
/// after it. A file that is a symbolic link, not private to its owner, or
/// not in the key ring format is refused ([`AppError::KeyFile`]).
pub fn load_key_ring(key_file: &Path, rotate: bool) -> Result<(KeyRing, LoadedKeys), AppError> {
    let (ring, generated) = match read_ring(key_file)? {
        None => {
            let ring = KeyRingFile {
                keys: vec![KeyMaterial::generate(0)?],
            };
            write_ring(key_file, &ring)?;
            (ring, true)
        }
        Some(ring) if rotate => {
            let ring = ring.rotated()?;
            write_ring(key_file, &ring)?;
            (ring, true)
        }
        Some(ring) => (ring, false),
    };
    Ok((ring.key_ring()?, ring.loaded(generated)))
}

/// Notices when a key ring file changes, so that a running server takes up
/// a fleet's new keys without a restart. It keeps the contents last read
/// (cleared when dropped, never in its `Debug` output) to compare.
pub struct KeyRingWatcher {
    path: PathBuf,
    /// The contents last read, changed or not.
    seen: Option<Zeroizing<Vec<u8>>>,
}

impl fmt::Debug for KeyRingWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRingWatcher")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl KeyRingWatcher {
    /// Watches `path`, whose current contents the server has loaded.
    pub fn new(path: &Path) -> KeyRingWatcher {
        KeyRingWatcher {
            path: path.to_owned(),
            seen: read_key_file(path).ok().flatten(),
        }
    }

    /// The file's keys if it changed since the last look (an error when the
    /// changed file is unusable or refused: the server keeps the keys it
    /// has). A missing file counts as unchanged. Reads a few hundred bytes:
    /// cheap enough to call every second.
    pub fn changed(&mut self) -> Option<Result<(KeyRing, LoadedKeys), AppError>> {
        let refused = |error| AppError::KeyFile(self.path.clone(), error);
        let contents = match read_key_file(&self.path) {
            Ok(Some(contents)) => contents,
            Ok(None) => return None,
            // Reported once, until the file changes again.
            Err(e) if self.seen.is_some() => {
                self.seen = None;
                return Some(Err(refused(e)));
            }
            Err(_) => return None,
        };
        if self.seen.as_ref() == Some(&contents) {
            return None;
        }
        let parsed = KeyRingFile::parse(&contents);
        self.seen = Some(contents);
        Some(
            parsed
                .map_err(refused)
                .and_then(|ring| Ok((ring.key_ring()?, ring.loaded(false)))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cr-apps-keys-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o7777
    }

    fn format_error(result: Result<KeyRingFile, KeyFileError>) -> String {
        match result {
            Err(KeyFileError::Format(why)) => why,
            other => panic!("expected a format error, got {other:?}"),
        }
    }

    #[test]
    fn parses_the_one_key_format() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let key = KeyMaterial::parse(&format!(" 7:{hex}\n")).expect("id:hex");
        assert_eq!((key.id, key.bytes[1], key.bytes[31]), (7, 0x11, 0xff));
        assert_eq!(KeyMaterial::parse(&key.to_text()), Ok(key));
        assert_eq!(
            KeyMaterial::parse(&format!("7:{}", hex.to_uppercase())).map(|k| k.bytes[15]),
            Ok(0xff)
        );
        assert_eq!(
            KeyMaterial::parse(hex),
            Err("not a key: a key line is `<id>:<64 hex digits>`".into())
        );
        assert_eq!(
            KeyMaterial::parse(&format!("300:{hex}")),
            Err("the key id is not a number from 0 to 255".into())
        );
        assert_eq!(
            KeyMaterial::parse("1:00"),
            Err("a key is 64 hex digits".into())
        );
        assert_eq!(
            KeyMaterial::parse(&format!("1:{}", "zz".repeat(KEY_LEN))),
            Err("a key holds hex digits only".into())
        );
        // A multi-byte character where a digit should be is refused, not
        // sliced through.
        assert_eq!(
            KeyMaterial::parse(&format!("1:é{}", "0".repeat(2 * KEY_LEN - 2))),
            Err("a key holds hex digits only".into())
        );
    }

    #[test]
    fn raw_bytes_and_passphrases_are_not_keys() {
        // Any 32 bytes used to be taken as a raw key, a 32-character
        // passphrase included.
        let passphrase = b"correct horse battery staple 123";
        assert_eq!(passphrase.len(), KEY_LEN);
        assert_eq!(
            format_error(KeyRingFile::parse(passphrase)),
            "line 1: not a key: a key line is `<id>:<64 hex digits>`"
        );
        assert_eq!(
            format_error(KeyRingFile::parse(&[0xa7; KEY_LEN])),
            "not text: a key ring file has one `<id>:<64 hex digits>` line per key"
        );
        assert_eq!(
            format_error(KeyRingFile::parse("ab".repeat(KEY_LEN).as_bytes())),
            "line 1: not a key: a key line is `<id>:<64 hex digits>`"
        );
    }

    #[test]
    fn errors_never_quote_the_file() {
        let line = format!("hunter2hunter2:{}", "ab".repeat(KEY_LEN));
        let why = format_error(KeyRingFile::parse(line.as_bytes()));
        assert_eq!(why, "line 1: the key id is not a number from 0 to 255");
        let line = format!("1:{}hunter2!", "ab".repeat(KEY_LEN - 4));
        let why = format_error(KeyRingFile::parse(line.as_bytes()));
        assert_eq!(why, "line 1: a key holds hex digits only");
    }

    #[test]
    fn generates_then_rotates_keeping_the_earlier_keys() {
        let dir = scratch_dir("rotate");
        let file = dir.join("token.key");
        let (_, first) = load_key_ring(&file, false).expect("generated");
        assert_eq!(
            first,
            LoadedKeys {
                current: 0,
                previous: vec![],
                generated: true
            }
        );
        let (_, again) = load_key_ring(&file, false).expect("reloaded");
        assert!(!again.generated);
        let (_, rotated) = load_key_ring(&file, true).expect("rotated");
        assert_eq!((rotated.current, rotated.previous), (1, vec![0]));
        for _ in 0..4 {
            load_key_ring(&file, true).expect("rotated");
        }
        let (_, after) = load_key_ring(&file, false).expect("reloaded after rotations");
        assert_eq!((after.current, after.previous), (5, vec![4, 3, 2]));
        #[cfg(unix)]
        assert_eq!(mode(&file), 0o600);
        assert!(!dir.join("token.key.new").exists());
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_ring_file_lists_the_current_key_first() {
        let hex = |b: u8| format!("{b:02x}").repeat(KEY_LEN);
        let text = format!("# fleet keys\n2:{}\n\n  1:{}\n", hex(2), hex(1));
        let ring = KeyRingFile::parse(text.as_bytes()).expect("a ring");
        assert_eq!((ring.current(), ring.previous()), (2, vec![1]));
        assert_eq!(
            KeyRingFile::parse(ring.to_text().as_bytes()).expect("its own text"),
            ring
        );
    }

    #[test]
    fn unusable_ring_files_are_refused_with_the_reason() {
        let hex = "ab".repeat(KEY_LEN);
        let twice = format!("1:{hex}\n1:{hex}\n");
        assert_eq!(
            format_error(KeyRingFile::parse(twice.as_bytes())),
            "key id 1 appears twice"
        );
        let five: String = (0..5).map(|id| format!("{id}:{hex}\n")).collect();
        assert_eq!(
            format_error(KeyRingFile::parse(five.as_bytes())),
            "5 keys; a ring holds the current key and at most 3 earlier ones"
        );
        assert_eq!(format_error(KeyRingFile::parse(b"# nothing\n")), "no key");
        assert_eq!(
            format_error(KeyRingFile::parse(b"# a comment\n1:00\n")),
            "line 2: a key is 64 hex digits"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_open_to_group_or_others_is_refused() {
        let dir = scratch_dir("mode");
        let file = dir.join("token.key");
        load_key_ring(&file, false).expect("generated");
        for (loose, shown) in [(0o640, "0640"), (0o604, "0604"), (0o620, "0620")] {
            fs::set_permissions(&file, fs::Permissions::from_mode(loose)).expect("chmod");
            let error = load_key_ring(&file, false).expect_err("refused");
            assert!(
                matches!(&error, AppError::KeyFile(path, KeyFileError::Permissions(m)) if *path == file && *m == loose),
                "{error:?}"
            );
            assert_eq!(
                error.to_string(),
                format!(
                    "key file {}: has mode {shown}: group and others must have no access (chmod 600)",
                    file.display()
                )
            );
            // Refused for rotation too, and left as it was.
            let before = fs::read(&file).expect("read");
            assert!(load_key_ring(&file, true).is_err());
            assert_eq!(fs::read(&file).expect("read"), before);
        }
        fs::set_permissions(&file, fs::Permissions::from_mode(0o400)).expect("chmod");
        load_key_ring(&file, false).expect("read-only for its owner is fine");
        fs::remove_dir_all(dir).ok();
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_reached_through_a_symlink_is_refused() {
        let dir = scratch_dir("symlink");
        let real = dir.join("real.key");
        load_key_ring(&real, false).expect("generated");
        let link = dir.join("token.key");
        symlink(&real, &link).expect("symlink");
        let error = load_key_ring(&link, false).expect_err("refused");
        assert!(
            matches!(&error, AppError::KeyFile(path, KeyFileError::Symlink) if *path == link),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "key file {}: is a symbolic link; name the key file itself",
                link.display()
            )
        );
        // A dangling link is refused too, not taken for a first run.
        let dangling = dir.join("dangling.key");
        symlink(dir.join("nowhere"), &dangling).expect("symlink");
        assert!(matches!(
            load_key_ring(&dangling, false),
            Err(AppError::KeyFile(_, KeyFileError::Symlink))
        ));
        assert!(!dir.join("nowhere").exists());
        // A directory is not a key file.
        assert!(matches!(
            load_key_ring(&dir, false),
            Err(AppError::KeyFile(_, KeyFileError::NotAFile))
        ));
        fs::remove_dir_all(dir).ok();
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_temporary_file_neither_receives_the_key_nor_lends_its_mode() {
        let dir = scratch_dir("planted");
        let file = dir.join("token.key");
        // A link where the temporary file goes: writing through it would
        // put the new key wherever it points.
        let elsewhere = dir.join("elsewhere");
        fs::write(&elsewhere, "not yours").expect("write");
        symlink(&elsewhere, dir.join("token.key.new")).expect("symlink");
        load_key_ring(&file, false).expect("generated");
        assert_eq!(fs::read(&elsewhere).expect("read"), b"not yours");
        assert_eq!(mode(&file), 0o600);
        assert!(fs::symlink_metadata(&file).expect("file").is_file());

        // A world-readable file left there: its mode does not carry over.
        let temporary = dir.join("token.key.new");
        fs::write(&temporary, "leftover").expect("write");
        fs::set_permissions(&temporary, fs::Permissions::from_mode(0o644)).expect("chmod");
        load_key_ring(&file, true).expect("rotated");
        assert_eq!(mode(&file), 0o600);
        assert!(!temporary.exists());
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn no_debug_output_shows_key_bytes() {
        let dir = scratch_dir("debug");
        let file = dir.join("token.key");
        let key = KeyMaterial {
            id: 1,
            bytes: [0xa7; KEY_LEN],
        };
        let ring = KeyRingFile {
            keys: vec![key.clone()],
        };
        write_key_file(&file, &ring).expect("written");
        let watcher = KeyRingWatcher::new(&file);
        let (keys, loaded) = load_key_ring(&file, false).expect("loaded");
        let broken = KeyRingFile::parse(format!("1:{}zz", "a7".repeat(KEY_LEN - 1)).as_bytes());
        let outputs = [
            format!("{key:?} {key:#?}"),
            format!("{ring:?} {ring:#?}"),
            format!("{watcher:?} {watcher:#?}"),
            format!("{keys:?} {loaded:?}"),
            format!("{broken:?}"),
        ];
        for output in outputs {
            // The bytes in hex (either case) or as decimal numbers.
            for secret in ["a7a7", "A7A7", "167"] {
                assert!(!output.contains(secret), "{output}");
            }
        }
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn the_watcher_reports_each_change_once_and_keeps_going_after_a_bad_one() {
        let dir = scratch_dir("watch");
        let file = dir.join("token.key");
        load_key_ring(&file, false).expect("generated");
        let mut watcher = KeyRingWatcher::new(&file);
        assert!(watcher.changed().is_none());

        load_key_ring(&file, true).expect("rotated");
        let (_, loaded) = watcher.changed().expect("a change").expect("usable");
        assert_eq!((loaded.current, loaded.previous), (1, vec![0]));
        assert!(watcher.changed().is_none());

        fs::write(&file, "garbage").expect("write");
        assert!(watcher.changed().expect("a change").is_err());
        assert!(watcher.changed().is_none());
        fs::remove_file(&file).expect("remove");
        assert!(watcher.changed().is_none());
        fs::remove_dir_all(dir).ok();
    }

    #[cfg(unix)]
    #[test]
    fn the_watcher_reports_a_file_opened_to_others_once_and_takes_it_back_when_fixed() {
        let dir = scratch_dir("watch-mode");
        let file = dir.join("token.key");
        load_key_ring(&file, false).expect("generated");
        let mut watcher = KeyRingWatcher::new(&file);
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(
            watcher.changed(),
            Some(Err(AppError::KeyFile(_, KeyFileError::Permissions(0o644))))
        ));
        assert!(watcher.changed().is_none());
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).expect("chmod");
        let (_, loaded) = watcher.changed().expect("a change").expect("usable");
        assert_eq!(loaded.current, 0);
        fs::remove_dir_all(dir).ok();
    }
}
