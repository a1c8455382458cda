//! The scale bench's model and data, shared by the native bench
//! (`examples/scale.rs`) and the wasm one (`hosts/rust/examples/scale.rs`),
//! which include this file by path: both sides answer every task the same
//! way and embed every text to the same vector, so their figures compare the
//! engine and nothing else.
//!
//! The model answers in microseconds and harmlessly: no boundary, no facts
//! from a note, no trace judged yes, no entity the same as another, no
//! reconcile judgment, the whole message as the only split part, every
//! recalled item relevant and kept. Embeddings are pseudo-random unit
//! vectors of [`DIMENSION`] numbers seeded by the text (so query vectors are
//! random, and the same text gives the same vector on both sides).

#![allow(dead_code)]

/// Vector dimension (a small sentence embedder's).
pub const DIMENSION: usize = 384;

/// FNV-1a 64.
pub fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A small deterministic generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Zipf-like rank in 0..n (rank r drawn with weight about 1 / (r + 1)).
    pub fn zipf(&mut self, n: usize) -> usize {
        let x = ((n as f64 + 1.0).ln() * self.unit()).exp() - 1.0;
        (x as usize).min(n - 1)
    }
}

/// A pseudo-random unit vector seeded by `seed` (sum of uniforms, close
/// enough to Gaussian for cosine statistics).
pub fn vector(seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v: Vec<f32> = (0..DIMENSION)
        .map(|_| (rng.unit() + rng.unit() + rng.unit() - 1.5) as f32)
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The embedding of a text.
pub fn embed(text: &str) -> Vec<f32> {
    vector(hash(text))
}

/// Lines of `content` that start a numbered item (`3. ...`).
fn numbered_items(content: &str) -> usize {
    content
        .lines()
        .filter(|l| {
            let d: String = l.chars().take_while(|c| c.is_ascii_digit()).collect();
            !d.is_empty() && l[d.len()..].starts_with(". ")
        })
        .count()
}

/// The answer to a task (by its name, `segment`, `note`, ...).
pub fn answer(task: &str, content: &str) -> String {
    match task {
        "segment" => r#"{"boundary": 0.1}"#.into(),
        "note" | "trace" => r#"{"facts": []}"#.into(),
        "resolve" => r#"{"same_as": null}"#.into(),
        "reconcile" => r#"{"judgments": []}"#.into(),
        "split" => {
            let msg = content.lines().last().unwrap_or("").trim();
            let part = if msg.is_empty() { "message" } else { msg };
            format!(r#"{{"parts": [{}]}}"#, quote(part))
        }
        "relevance" | "distill" => {
            let n = numbered_items(content);
            let list: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
            let key = if task == "relevance" {
                "relevant"
            } else {
                "kept"
            };
            format!(r#"{{"{key}": [{}]}}"#, list.join(","))
        }
        _ => "{}".into(),
    }
}

/// A JSON string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A vocabulary of `n` pseudo-words (two to four syllables), so fact
/// sentences and queries share a long-tailed vocabulary as real ones do.
pub fn vocabulary(n: usize) -> Vec<String> {
    const ONSETS: [&str; 16] = [
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st",
    ];
    const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "ai"];
    let mut rng = Rng(7);
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let syllables = 2 + rng.below(3);
        let w: String = (0..syllables)
            .map(|_| format!("{}{}", ONSETS[rng.below(16)], VOWELS[rng.below(6)]))
            .collect();
        if seen.insert(w.clone()) {
            out.push(w);
        }
    }
    out
}

/// Words of the vocabulary, Zipf-distributed.
pub fn words(rng: &mut Rng, vocab: &[String], n: usize) -> Vec<String> {
    (0..n)
        .map(|_| vocab[rng.zipf(vocab.len())].clone())
        .collect()
}

/// The `i`-th of a few hundred search queries: a question of varied words
/// (random query vectors come from embedding it).
pub fn query(i: usize, vocab: &[String]) -> String {
    let mut rng = Rng(1_000_003 + i as u64);
    let n = 3 + rng.below(4);
    let w = words(&mut rng, vocab, n);
    let open = [
        "what about",
        "when did we discuss",
        "who knows",
        "tell me about",
    ][i % 4];
    format!("{open} {}?", w.join(" "))
}

/// The `i`-th user message of the add run.
pub fn user_message(i: usize, vocab: &[String]) -> String {
    let mut rng = Rng(2_000_003 + i as u64);
    let w = words(&mut rng, vocab, 14);
    format!(
        "Question {i}: what do we know about {} and {}? I also wanted to check {}.",
        w[..4].join(" "),
        w[4..8].join(" "),
        w[8..].join(" ")
    )
}

/// The `i`-th assistant reply of the add run.
pub fn assistant_message(i: usize, vocab: &[String]) -> String {
    let mut rng = Rng(3_000_003 + i as u64);
    let w = words(&mut rng, vocab, 14);
    format!(
        "Answer {i}: from what you said earlier, {} relates to {}, and {} is still open.",
        w[..5].join(" "),
        w[5..9].join(" "),
        w[9..].join(" ")
    )
}

pub fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// The name of entity `i` (two capitalised words).
pub fn entity_name(i: usize, vocab: &[String]) -> String {
    let mut rng = Rng(4_000_003 + i as u64);
    format!(
        "{} {}",
        capitalised(&vocab[rng.below(vocab.len())]),
        capitalised(&vocab[rng.below(vocab.len())])
    )
}

pub const PREDICATES: [&str; 16] = [
    "works with",
    "owns",
    "lives near",
    "prefers",
    "manages",
    "visited",
    "is building",
    "recommended",
    "borrowed",
    "depends on",
    "wrote about",
    "met",
    "is planning",
    "sold",
    "teaches",
    "reviewed",
];

/// The 40 facts of the `call`-th note: half about known entities, half new.
pub fn note_facts(
    call: usize,
    entities: usize,
    vocab: &[String],
) -> Vec<(String, String, String, String)> {
    let mut rng = Rng(5_000_003 + call as u64);
    (0..40)
        .map(|j| {
            let subject = if j % 2 == 0 {
                entity_name(1 + rng.below(entities), vocab)
            } else {
                format!(
                    "{} {}",
                    capitalised(&vocab[rng.below(vocab.len())]),
                    capitalised(&vocab[rng.below(vocab.len())])
                )
            };
            let object = entity_name(1 + rng.below(entities), vocab);
            let predicate = PREDICATES[rng.below(PREDICATES.len())].to_string();
            let w = words(&mut rng, vocab, 8);
            let sentence = format!(
                "{subject} {predicate} {object} {} (note {call}).",
                w.join(" ")
            );
            (subject, predicate, object, sentence)
        })
        .collect()
}

/// Percentile `p` (0..1) of `v` (nearest rank).
pub fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// The process's peak resident set (VmHWM) in bytes, 0 if unknown.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The next record's key and value length in a store dump (`None` at its
/// end), leaving `f` at the value.
fn next_key(f: &mut impl std::io::Read) -> std::io::Result<Option<(String, u64)>> {
    let mut kl = [0u8; 4];
    match f.read_exact(&mut kl) {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        r => r?,
    }
    let mut k = vec![0u8; u32::from_le_bytes(kl) as usize];
    f.read_exact(&mut k)?;
    let mut vl = [0u8; 8];
    f.read_exact(&mut vl)?;
    let k = String::from_utf8(k)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad store dump"))?;
    Ok(Some((k, u64::from_le_bytes(vl))))
}

/// Reads a store dump (records of u32 key length, key, u64 value length,
/// value, little-endian), streaming, handing each pair to `each`.
pub fn read_kv(
    path: &std::path::Path,
    mut each: impl FnMut(String, Vec<u8>),
) -> std::io::Result<()> {
    use std::io::Read;
    let mut f = std::io::BufReader::new(std::fs::File::open(path)?);
    while let Some((k, len)) = next_key(&mut f)? {
        let mut v = vec![0u8; len as usize];
        f.read_exact(&mut v)?;
        each(k, v);
    }
    Ok(())
}

/// Indexes a store dump (see [`read_kv`]) without reading its values:
/// hands each key to `each` with where its value starts and its length.
pub fn index_kv(
    path: &std::path::Path,
    mut each: impl FnMut(String, u64, usize),
) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::io::BufReader::new(std::fs::File::open(path)?);
    while let Some((k, len)) = next_key(&mut f)? {
        let at = f.stream_position()?;
        each(k, at, len as usize);
        f.seek(SeekFrom::Current(len as i64))?;
    }
    Ok(())
}

/// Writes a store dump (see [`read_kv`]).
pub fn write_kv<'a>(
    path: &std::path::Path,
    kv: impl Iterator<Item = (&'a String, &'a Vec<u8>)>,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for (k, v) in kv {
        f.write_all(&(k.len() as u32).to_le_bytes())?;
        f.write_all(k.as_bytes())?;
        f.write_all(&(v.len() as u64).to_le_bytes())?;
        f.write_all(v)?;
    }
    f.flush()
}
