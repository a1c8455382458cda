//! What the quality benches (`locomo.rs`, `longmemeval.rs`) share, by path:
//! the served sentence embedder and the plain baselines' rankings.

use std::collections::BTreeMap;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A quality bench's command line: `[--minilm CMD] [--only SOURCE] [PATH...]`
/// (`--minilm`: the sentence embedder's command, [`Served`]; `--only`
/// where the bench takes it).
#[derive(Debug, Default)]
#[allow(dead_code)] // Each bench reads the fields it takes.
pub struct Args {
    pub minilm: Option<String>,
    pub only: Option<String>,
    pub paths: Vec<String>,
}

#[allow(dead_code)] // Not every bench (nor tests/quality_loaders.rs) parses.
impl Args {
    /// The process's arguments; `--only` is refused unless `with_only`.
    pub fn parse(with_only: bool) -> Args {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut out = Args::default();
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--minilm" => {
                    out.minilm = args.get(i + 1).cloned();
                    i += 1;
                }
                "--only" if with_only => {
                    out.only = args.get(i + 1).cloned();
                    i += 1;
                }
                flag if flag.starts_with("--") => panic!("unknown flag {flag}"),
                p => out.paths.push(p.to_string()),
            }
            i += 1;
        }
        out
    }

    /// Path `n`, or `default`.
    pub fn path(&self, n: usize, default: &str) -> String {
        self.paths
            .get(n)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }
}

/// A sentence embedder in a child process: one JSON list of texts per line
/// in, one JSON list of vectors per line out.
pub struct Served {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Served {
    pub fn start(cmd: &str) -> Served {
        let mut words = cmd.split_whitespace();
        let mut child = Command::new(words.next().expect("embedder command"))
            .args(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the embedder");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Served {
            _child: child,
            input,
            output,
        }
    }

    pub fn embed(&mut self, texts: &[String]) -> Vec<Vec<f32>> {
        writeln!(self.input, "{}", serde_json::to_string(texts).unwrap()).unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("embedder answer")
    }
}

/// The plain baselines' rankings of documents `0..vectors.len()` for one
/// query: `words` (BM25's, as given), by meaning (cosine of the query's
/// vector `qv` with each document's), and the two fused by reciprocal rank
/// (k = 60). Ties go to the lower index.
pub fn baseline_rankings(words: Vec<usize>, vectors: &[Vec<f32>], qv: &[f32]) -> [Vec<usize>; 3] {
    let mut cos: Vec<(usize, f64)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i, v.iter().zip(qv).map(|(a, b)| (a * b) as f64).sum()))
        .collect();
    cos.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let meaning: Vec<usize> = cos.into_iter().map(|(i, _)| i).collect();
    let mut fused: BTreeMap<usize, f64> = BTreeMap::new();
    for list in [&words, &meaning] {
        for (r, &i) in list.iter().enumerate() {
            *fused.entry(i).or_default() += 1.0 / (60.0 + r as f64 + 1.0);
        }
    }
    let mut fused: Vec<(usize, f64)> = fused.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let fused: Vec<usize> = fused.into_iter().map(|(i, _)| i).collect();
    [words, meaning, fused]
}

/// The turns each passage of an export covers: its messages `first..=last`
/// mapped to turn indexes by `dia` (message id -> turn).
pub fn passage_turns(export: &Value, dia: &BTreeMap<u64, usize>) -> BTreeMap<u64, Vec<usize>> {
    let mut out = BTreeMap::new();
    for entry in export["log"].as_array().unwrap() {
        for e in entry["events"].as_array().unwrap() {
            if e["type"] == "passages_indexed" {
                for p in e["passages"].as_array().unwrap() {
                    let (f, l) = (p["first"].as_u64().unwrap(), p["last"].as_u64().unwrap());
                    out.insert(
                        p["id"].as_u64().unwrap(),
                        (f..=l).filter_map(|m| dia.get(&m).copied()).collect(),
                    );
                }
            }
        }
    }
    out
}
