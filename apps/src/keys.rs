//! The server's token keys on disk: loading, first-run generation and
//! rotation.
//!
//! A key file holds `<id>:<64 hex digits>` as this module writes it; bare
//! hex (id 0) or exactly 32 raw bytes (id 0) are accepted too, so a key
//! made with `head -c 32 /dev/urandom` works. Next to it, `<file>.prev`
//! keeps the key retired by the last rotation: tokens sealed with it still
//! validate, so clients holding them still resume after a rotation.
//!
//! Every server instance sharing the key file (a fleet behind one name)
//! accepts every other instance's tokens.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use cr_endpoint::ex_token::{KeyRing, Rng, SystemRng, TokenKey, KEY_LEN};

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

/// Where the key retired by the last rotation of `key_file` is kept.
pub fn previous_key_path(key_file: &Path) -> PathBuf {
    let mut name = key_file.as_os_str().to_owned();
    name.push(".prev");
    PathBuf::from(name)
}

fn read_key(path: &Path) -> Result<Option<KeyMaterial>, AppError> {
    match fs::read(path) {
        Ok(contents) => KeyMaterial::parse(&contents)
            .map(Some)
            .map_err(|why| AppError::Invalid(format!("key file {}: {why}", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AppError::io(
            format!("reading key file {}", path.display()),
            e,
        )),
    }
}

/// Writes a key file readable by its owner only (where the OS allows).
fn write_key(path: &Path, key: &KeyMaterial) -> Result<(), AppError> {
    let context = || format!("writing key file {}", path.display());
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| AppError::io(context(), e))?;
    file.write_all(key.to_text().as_bytes())
        .map_err(|e| AppError::io(context(), e))
}

/// The keys a server loaded, for its start-up log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedKeys {
    /// Id of the key sealing new tokens.
    pub current: u8,
    /// Id of the retired key still opening tokens, if any.
    pub previous: Option<u8>,
    /// Whether the current key was generated by this start.
    pub generated: bool,
}

/// Loads the key ring from `key_file` (and its `.prev` companion),
/// generating the key file on first use. With `rotate`, the current key
/// moves to `.prev` and a new one (next id) takes its place first.
pub fn load_key_ring(key_file: &Path, rotate: bool) -> Result<(KeyRing, LoadedKeys), AppError> {
    let prev_file = previous_key_path(key_file);
    let (mut current, mut previous, mut generated) =
        (read_key(key_file)?, read_key(&prev_file)?, false);

    if current.is_none() {
        let key = KeyMaterial::generate(0)?;
        write_key(key_file, &key)?;
        current = Some(key);
        generated = true;
    } else if rotate {
        let old = current.take();
        let next_id = old.as_ref().map_or(0, |k| k.id.wrapping_add(1));
        let key = KeyMaterial::generate(next_id)?;
        if let Some(old) = &old {
            write_key(&prev_file, old)?;
        }
        write_key(key_file, &key)?;
        (current, previous, generated) = (Some(key), old, true);
    }
    let current =
        current.ok_or_else(|| AppError::Invalid("no token key could be loaded".into()))?;

    let ring = match &previous {
        None => KeyRing::new(current.token_key()?),
        Some(previous) if previous.id == current.id => {
            return Err(AppError::Invalid(format!(
                "{} and {} both hold key id {}: write distinct ids as `<id>:<hex>`",
                key_file.display(),
                prev_file.display(),
                current.id
            )))
        }
        Some(previous) => {
            // Oldest first: the ring opens with both, seals with the current.
            let mut ring = KeyRing::new(previous.token_key()?);
            ring.rotate(current.token_key()?)
                .map_err(|e| AppError::Invalid(format!("token keys: {e}")))?;
            ring
        }
    };
    let loaded = LoadedKeys {
        current: current.id,
        previous: previous.map(|k| k.id),
        generated,
    };
    Ok((ring, loaded))
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
    fn generates_then_rotates_keeping_the_previous_key() {
        let dir = scratch_dir("rotate");
        let file = dir.join("token.key");
        let (_, first) = load_key_ring(&file, false).expect("generated");
        assert_eq!(
            first,
            LoadedKeys {
                current: 0,
                previous: None,
                generated: true
            }
        );
        let (_, again) = load_key_ring(&file, false).expect("reloaded");
        assert!(!again.generated);
        let (_, rotated) = load_key_ring(&file, true).expect("rotated");
        assert_eq!((rotated.current, rotated.previous), (1, Some(0)));
        let (_, after) = load_key_ring(&file, false).expect("reloaded after rotation");
        assert_eq!((after.current, after.previous), (1, Some(0)));
        fs::remove_dir_all(dir).ok();
    }
}
