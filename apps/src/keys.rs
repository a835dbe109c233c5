//! The server's token keys on disk: the key ring file, first-run
//! generation, rotation, and picking up a changed file while running.
//!
//! A key ring file holds one key per line as `<id>:<64 hex digits>`. The
//! first line is the current key, which seals new tokens; the lines after
//! it are earlier keys (at most [`MAX_PREVIOUS_KEYS`]), which still open
//! the tokens they sealed. Blank lines and lines starting with `#` are
//! ignored. A single line of bare hex (id 0), or exactly 32 raw bytes (id 0,
//! as `head -c 32 /dev/urandom` makes), is a ring of one key.
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

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use cr_endpoint::ex_token::{KeyRing, Rng, SystemRng, TokenKey, KEY_LEN, MAX_PREVIOUS_KEYS};

use crate::error::AppError;

/// Key material with its id, as kept in a key file.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyMaterial {
    /// The id sealed boxes carry in clear to select the key.
    pub id: u8,
    /// The ChaCha20-Poly1305 key.
    pub bytes: [u8; KEY_LEN],
}

impl std::fmt::Debug for KeyMaterial {
    /// Never prints the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyMaterial").field("id", &self.id).finish()
    }
}

impl KeyMaterial {
    /// Fresh random material from the operating system.
    pub fn generate(id: u8) -> Result<KeyMaterial, AppError> {
        let mut bytes = [0u8; KEY_LEN];
        SystemRng::new()
            .fill(&mut bytes)
            .map_err(|_| AppError::Invalid("the system random generator failed".into()))?;
        Ok(KeyMaterial { id, bytes })
    }

    /// Parses the contents of a key file (see the module documentation).
    pub fn parse(contents: &[u8]) -> Result<KeyMaterial, String> {
        if let Ok(bytes) = <[u8; KEY_LEN]>::try_from(contents) {
            if std::str::from_utf8(contents).map_or(true, |t| !is_hex(t.trim())) {
                return Ok(KeyMaterial { id: 0, bytes });
            }
        }
        let text = std::str::from_utf8(contents)
            .map_err(|_| format!("neither {KEY_LEN} raw bytes nor text"))?
            .trim();
        let (id, hex) = match text.split_once(':') {
            Some((id, hex)) => (
                id.trim()
                    .parse::<u8>()
                    .map_err(|_| format!("key id `{id}` is not a number from 0 to 255"))?,
                hex.trim(),
            ),
            None => (0, text),
        };
        let bytes = decode_hex(hex)?;
        Ok(KeyMaterial { id, bytes })
    }

    /// The text form written to key files.
    pub fn to_text(&self) -> String {
        let hex: String = self.bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}:{hex}\n", self.id)
    }

    fn token_key(&self) -> Result<TokenKey, AppError> {
        TokenKey::from_bytes(self.id, &self.bytes)
            .map_err(|e| AppError::Invalid(format!("token key: {e}")))
    }
}

fn is_hex(text: &str) -> bool {
    text.len() == 2 * KEY_LEN && text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn decode_hex(hex: &str) -> Result<[u8; KEY_LEN], String> {
    if !is_hex(hex) {
        return Err(format!("expected {} hex digits", 2 * KEY_LEN));
    }
    let mut bytes = [0u8; KEY_LEN];
    for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| "not hex".to_string())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| "not hex".to_string())?;
    }
    Ok(bytes)
}

/// The keys of a key ring file, current first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRingFile {
    keys: Vec<KeyMaterial>,
}

impl KeyRingFile {
    /// Parses a key ring file (see the module documentation).
    pub fn parse(contents: &[u8]) -> Result<KeyRingFile, String> {
        let keys = match std::str::from_utf8(contents) {
            Ok(text) => text
                .lines()
                .enumerate()
                .map(|(n, line)| (n + 1, line.trim()))
                .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
                .map(|(n, line)| {
                    KeyMaterial::parse(line.as_bytes()).map_err(|why| format!("line {n}: {why}"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            // Not text: one raw key.
            Err(_) => vec![KeyMaterial::parse(contents)?],
        };
        let ring = KeyRingFile { keys };
        ring.check()?;
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

    /// The text form written to key ring files.
    pub fn to_text(&self) -> String {
        self.keys.iter().map(KeyMaterial::to_text).collect()
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

fn read_ring(path: &Path) -> Result<Option<KeyRingFile>, AppError> {
    match fs::read(path) {
        Ok(contents) => KeyRingFile::parse(&contents)
            .map(Some)
            .map_err(|why| AppError::Invalid(format!("key file {}: {why}", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AppError::io(
            format!("reading key file {}", path.display()),
            e,
        )),
    }
}

/// Replaces a key ring file at once (a server rereading it never sees half
/// of it), readable by its owner only where the OS allows.
fn write_ring(path: &Path, ring: &KeyRingFile) -> Result<(), AppError> {
    let context = || format!("writing key file {}", path.display());
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&temporary)
        .map_err(|e| AppError::io(context(), e))?;
    file.write_all(ring.to_text().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| AppError::io(context(), e))?;
    fs::rename(&temporary, path).map_err(|e| AppError::io(context(), e))
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
/// after it.
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
/// a fleet's new keys without a restart.
#[derive(Debug)]
pub struct KeyRingWatcher {
    path: PathBuf,
    /// The contents last read, changed or not.
    seen: Option<Vec<u8>>,
}

impl KeyRingWatcher {
    /// Watches `path`, whose current contents the server has loaded.
    pub fn new(path: &Path) -> KeyRingWatcher {
        KeyRingWatcher {
            path: path.to_owned(),
            seen: fs::read(path).ok(),
        }
    }

    /// The file's keys if it changed since the last look (an error when the
    /// changed file is unusable: the server keeps the keys it has). A
    /// missing file counts as unchanged. Reads a few hundred bytes: cheap
    /// enough to call every second.
    pub fn changed(&mut self) -> Option<Result<(KeyRing, LoadedKeys), AppError>> {
        let contents = fs::read(&self.path).ok()?;
        if self.seen.as_ref() == Some(&contents) {
            return None;
        }
        self.seen = Some(contents.clone());
        Some(
            KeyRingFile::parse(&contents)
                .map_err(|why| {
                    AppError::Invalid(format!("key file {}: {why}", self.path.display()))
                })
                .and_then(|ring| Ok((ring.key_ring()?, ring.loaded(false)))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cr-apps-keys-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn parses_every_accepted_form() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let key = KeyMaterial::parse(format!("7:{hex}\n").as_bytes()).expect("id:hex");
        assert_eq!((key.id, key.bytes[1]), (7, 0x11));
        assert_eq!(KeyMaterial::parse(hex.as_bytes()).expect("hex").id, 0);
        assert_eq!(
            KeyMaterial::parse(&[9u8; 32]).expect("raw").bytes,
            [9u8; 32]
        );
        assert_eq!(KeyMaterial::parse(key.to_text().as_bytes()), Ok(key));
        assert!(KeyMaterial::parse(b"300:00").is_err());
        assert!(KeyMaterial::parse(b"abc").is_err());
        assert!(KeyMaterial::parse(&[1u8; 31]).is_err());
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
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_ring_file_lists_the_current_key_first() {
        let hex = |b: u8| format!("{b:02x}").repeat(KEY_LEN);
        let text = format!("# fleet keys\n2:{}\n\n  1:{}\n", hex(2), hex(1));
        let ring = KeyRingFile::parse(text.as_bytes()).expect("a ring");
        assert_eq!((ring.current(), ring.previous()), (2, vec![1]));
        assert_eq!(KeyRingFile::parse(ring.to_text().as_bytes()), Ok(ring));
        assert_eq!(
            KeyRingFile::parse(&[7u8; KEY_LEN]).map(|r| r.current()),
            Ok(0)
        );
    }

    #[test]
    fn unusable_ring_files_are_refused_with_the_reason() {
        let hex = "ab".repeat(KEY_LEN);
        let twice = format!("1:{hex}\n1:{hex}\n");
        assert_eq!(
            KeyRingFile::parse(twice.as_bytes()),
            Err("key id 1 appears twice".into())
        );
        let five: String = (0..5).map(|id| format!("{id}:{hex}\n")).collect();
        assert!(KeyRingFile::parse(five.as_bytes())
            .unwrap_err()
            .starts_with("5 keys"));
        assert_eq!(KeyRingFile::parse(b"# nothing\n"), Err("no key".into()));
        assert!(KeyRingFile::parse(b"1:00\n")
            .unwrap_err()
            .starts_with("line 1:"));
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
}
