//! Character-level text for language models: a [vocabulary of the characters](CharText) of a
//! text, the text as ids, and seeded random [windows](Windows) of it as training batches
//! (nanoGPT's `shakespeare_char`).
//!
//! The repository ships tiny-shakespeare in `data/text/` (public domain; see its README).
//!
//! ```
//! use adjoint::data::text::{CharText, Windows};
//!
//! let text = CharText::from_text("hello world")?;
//! assert_eq!(text.vocab_size(), 8); // ' ', d, e, h, l, o, r, w
//! assert_eq!(text.decode(&text.encode("old")?), "old");
//! let (train, val) = text.split(0.9);
//! assert_eq!((train.len(), val.len()), (9, 2));
//! let mut windows = Windows::new(train, 4, 2, 0)?;
//! let (x, y) = windows.next_batch();
//! assert_eq!((x.len(), y.len()), (8, 8));
//! assert_eq!(x[1..4], y[..3]); // each target is the next input
//! # Ok::<(), adjoint::data::text::TextError>(())
//! ```

use adjoint_core::nn::init::derive_seed;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What can go wrong while reading or encoding a text.
#[derive(Debug)]
#[non_exhaustive]
pub enum TextError {
    /// Reading the file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The file is not UTF-8.
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The text has no characters.
    Empty,
    /// A character that is not in the vocabulary.
    UnknownChar {
        /// The character.
        ch: char,
    },
    /// A text too short for one window of `context + 1` characters.
    TooShort {
        /// The number of ids.
        len: usize,
        /// The window's context.
        context: usize,
    },
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TextError::NotUtf8 { path } => write!(f, "{}: not UTF-8 text", path.display()),
            TextError::Empty => write!(f, "the text is empty"),
            TextError::UnknownChar { ch } => {
                write!(f, "the character {ch:?} is not in the text's vocabulary")
            }
            TextError::TooShort { len, context } => write!(
                f,
                "a text of {len} characters is too short for windows of {context} + 1"
            ),
        }
    }
}

impl std::error::Error for TextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TextError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A text as ids of its characters: the vocabulary is the text's distinct characters in
/// increasing order (id `i` is the `i`-th), as nanoGPT's `prepare.py` builds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharText {
    vocab: Vec<char>,
    ids: Vec<u32>,
}

impl CharText {
    /// The text of the UTF-8 file `path`.
    ///
    /// # Errors
    /// [`TextError::Io`], [`TextError::NotUtf8`] or [`TextError::Empty`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TextError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| TextError::Io {
            path: path.to_owned(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| TextError::NotUtf8 {
            path: path.to_owned(),
        })?;
        Self::from_text(&text)
    }

    /// The text `text`.
    ///
    /// # Errors
    /// [`TextError::Empty`] for an empty text.
    pub fn from_text(text: &str) -> Result<Self, TextError> {
        let mut vocab: Vec<char> = text.chars().collect();
        vocab.sort_unstable();
        vocab.dedup();
        if vocab.is_empty() {
            return Err(TextError::Empty);
        }
        let mut text_ids = CharText {
            vocab,
            ids: Vec::new(),
        };
        text_ids.ids = text_ids.encode(text)?;
        Ok(text_ids)
    }

    /// The number of distinct characters `V`.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The whole text as ids.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The ids of the characters of `s`.
    ///
    /// # Errors
    /// [`TextError::UnknownChar`] for a character not in the vocabulary.
    pub fn encode(&self, s: &str) -> Result<Vec<u32>, TextError> {
        s.chars()
            .map(|ch| match self.vocab.binary_search(&ch) {
                Ok(i) => Ok(i as u32),
                Err(_) => Err(TextError::UnknownChar { ch }),
            })
            .collect()
    }

    /// The characters of `ids`.
    ///
    /// # Panics
    /// If an id is not below [`vocab_size`](CharText::vocab_size).
    #[track_caller]
    pub fn decode(&self, ids: &[u32]) -> String {
        ids.iter()
            .map(|&i| {
                *self.vocab.get(i as usize).unwrap_or_else(|| {
                    panic!(
                        "CharText::decode: id {i} of a vocabulary of {}",
                        self.vocab.len()
                    )
                })
            })
            .collect()
    }

    /// The first `⌊fraction · n⌋` ids (training) and the rest (validation).
    ///
    /// # Panics
    /// If `fraction` is not in `[0, 1]`.
    #[track_caller]
    pub fn split(&self, fraction: f64) -> (&[u32], &[u32]) {
        assert!(
            (0.0..=1.0).contains(&fraction),
            "CharText::split: fraction {fraction} must be in [0, 1]"
        );
        self.ids
            .split_at((fraction * self.ids.len() as f64) as usize)
    }
}

/// Random windows of a sequence of ids as batches for next-token prediction: each of the
/// `batch` rows starts at an offset `s` drawn uniformly from `[0, n − context)`, its input is
/// `ids[s .. s + context]` and its target `ids[s + 1 .. s + context + 1]` (nanoGPT's
/// `get_batch`). The `k`-th offset comes from `derive_seed(seed, k)`, so a run is
/// reproducible from the seed.
#[derive(Clone, Debug)]
pub struct Windows<'a> {
    ids: &'a [u32],
    context: usize,
    batch: usize,
    seed: u64,
    drawn: u64,
}

impl<'a> Windows<'a> {
    /// Batches of `batch` windows of `context` ids from `ids`, drawn from `seed`.
    ///
    /// # Errors
    /// [`TextError::TooShort`] unless `ids` holds more than `context` ids.
    ///
    /// # Panics
    /// If `context` or `batch` is 0.
    #[track_caller]
    pub fn new(ids: &'a [u32], context: usize, batch: usize, seed: u64) -> Result<Self, TextError> {
        assert!(
            context > 0 && batch > 0,
            "Windows: context {context} and batch {batch} must be positive"
        );
        if ids.len() <= context {
            return Err(TextError::TooShort {
                len: ids.len(),
                context,
            });
        }
        Ok(Windows {
            ids,
            context,
            batch,
            seed,
            drawn: 0,
        })
    }

    /// The shape `[batch, context]` of a batch's inputs and of its targets.
    pub fn shape(&self) -> [usize; 2] {
        [self.batch, self.context]
    }

    /// The next batch: inputs and targets, each `batch × context` ids in row-major order
    /// (a tensor of [`shape`](Windows::shape)).
    pub fn next_batch(&mut self) -> (Vec<u32>, Vec<u32>) {
        let starts = (self.ids.len() - self.context) as u64;
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for _ in 0..self.batch {
            let s = (derive_seed(self.seed, self.drawn) % starts) as usize;
            self.drawn += 1;
            x.extend_from_slice(&self.ids[s..s + self.context]);
            y.extend_from_slice(&self.ids[s + 1..s + self.context + 1]);
        }
        (x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_is_sorted_and_round_trips() {
        let text = CharText::from_text("bca\nab").unwrap();
        assert_eq!(text.vocab_size(), 4);
        assert_eq!(text.ids(), [2, 3, 1, 0, 1, 2]);
        assert_eq!(text.decode(text.ids()), "bca\nab");
        assert!(matches!(
            text.encode("abz"),
            Err(TextError::UnknownChar { ch: 'z' })
        ));
    }

    #[test]
    fn the_shipped_tiny_shakespeare_loads() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/text/tinyshakespeare.txt");
        let text = CharText::load(path).unwrap();
        assert_eq!((text.ids().len(), text.vocab_size()), (1_115_394, 65));
        assert_eq!(text.decode(&text.ids()[..14]), "First Citizen:");
        let (train, val) = text.split(0.9);
        assert_eq!((train.len(), val.len()), (1_003_854, 111_540));
    }

    #[test]
    fn bad_input_is_an_error_naming_it() {
        assert!(matches!(CharText::from_text(""), Err(TextError::Empty)));
        let err = CharText::load("/no/such/text.txt").unwrap_err();
        assert!(err.to_string().starts_with("/no/such/text.txt: "), "{err}");
        let short = Windows::new(&[1, 2, 3], 3, 1, 0).unwrap_err();
        assert_eq!(
            short.to_string(),
            "a text of 3 characters is too short for windows of 3 + 1"
        );
    }

    #[test]
    fn windows_are_seeded_shifted_and_cover_every_start() {
        let ids: Vec<u32> = (0..10).collect();
        let mut windows = Windows::new(&ids, 3, 4, 7).unwrap();
        assert_eq!(windows.shape(), [4, 3]);
        let mut seen = [false; 7];
        for _ in 0..50 {
            let (x, y) = windows.next_batch();
            for (row, target) in x.chunks(3).zip(y.chunks(3)) {
                // Consecutive ids: a window of the sequence, its target one further.
                assert_eq!(row, [row[0], row[0] + 1, row[0] + 2]);
                assert_eq!(target, [row[0] + 1, row[0] + 2, row[0] + 3]);
                seen[row[0] as usize] = true;
            }
        }
        assert_eq!(seen, [true; 7]);
        let again = Windows::new(&ids, 3, 4, 7).unwrap().next_batch();
        assert_eq!(Windows::new(&ids, 3, 4, 7).unwrap().next_batch(), again);
        assert_ne!(Windows::new(&ids, 3, 4, 8).unwrap().next_batch(), again);
    }
}
