//! The generator of the records' TypeScript declarations
//! (`js/types/records.d.ts`), from the Rust types through ts-rs (feature
//! `ts`; docs/DECISIONS.md). Run it with `scripts/check-types --write`;
//! `scripts/check-types` (a step of scripts/test) regenerates into a
//! temporary folder and fails with a diff when the committed file differs.
//!
//! `ENGRAM_TYPES_OUT` names the file to write (the committed one when unset).
#![cfg(feature = "ts")]

use std::path::PathBuf;

use ts_rs::{Config, TS};

use engram::base::health::{Degraded, Health, LastError};
use engram::base::host::Task;
use engram::memory::outcomes::{
    Added, Batch, EpisodeInfo, Maintained, NoteOutcome, Pending, Stats,
};
use engram::memory::threads::ThreadInfo;
use engram::types::entity::{Alias, Entity, Resolution};
use engram::types::episode::{Episode, EpisodeState, NoteFailure, StateChange};
use engram::types::erase::Erased;
use engram::types::fact::{
    Fact, FactHistory, FactKind, HistoryEntry, Remembered, Restatement, Retirement,
};
use engram::types::fade::{Fade, FadeReason};
use engram::types::message::{Message, Role, ToolCall};
use engram::types::page::Page;
use engram::types::recall::{
    Distillation, Hit, Item, Judgment, List, Passage, RecallBlock, Recalled, SearchHit,
};
use engram::types::trace::{Trace, TraceCause};
use engram::view::explain::{
    EpisodeExplanation, FactExplanation, MessageExplanation, Move, RecallExplanation,
    RecalledItemExplanation,
};
use engram::view::{ItemKind, View, ViewItem};

const HEADER: &str = r#"// GENERATED from the Rust record types (ts-rs, feature `ts`): do not edit.
// Regenerate with `scripts/check-types --write`; scripts/test fails when
// this file differs from what the Rust types generate.

/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };
/** A task name, or "embed" for embeddings (as the model's health counts them). */
export type ModelRequestName = TaskName | "embed";
"#;

/// One declaration: `export type Name = ...;`, with its doc comment.
fn decl<T: TS>(cfg: &Config) -> String {
    let mut out = String::new();
    if let Some(docs) = T::docs() {
        out.push_str(&docs);
    }
    out.push_str("export ");
    out.push_str(&T::decl(cfg));
    out.push('\n');
    layout(&out)
}

/// ts-rs writes one field a line, unindented, with a trailing space, and an
/// optional field (`skip_serializing_if` with `default`) as `?: T | null`:
/// indent by brace depth, drop trailing spaces and the `| null` of an
/// optional field (the JSON leaves the field out; it is never null), and
/// turn rustdoc links into plain code.
fn layout(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for line in text.lines() {
        let line = line.trim();
        let comment = line.starts_with("/**") || line.starts_with('*');
        let mut line = line.to_string();
        if comment {
            // rustdoc's links read as plain code in TypeScript.
            line = line.replace("[`", "`").replace("`]", "`");
        } else {
            if let Some((name, ty)) = line.split_once("?: ") {
                for end in [",", ", };"] {
                    if let Some(ty) = ty.strip_suffix(&format!(" | null{end}")) {
                        line = format!("{name}?: {ty}{end}");
                        break;
                    }
                }
            }
        }
        let opens = if comment {
            0
        } else {
            line.matches('{').count()
        };
        let closes = if comment {
            0
        } else {
            line.matches('}').count()
        };
        let starts_closing = !comment && line.starts_with('}');
        let indent = if starts_closing {
            depth.saturating_sub(1)
        } else {
            depth
        };
        let pad = if comment && line.starts_with('*') {
            " "
        } else {
            ""
        };
        out.push_str(&"  ".repeat(indent));
        out.push_str(pad);
        out.push_str(&line);
        out.push('\n');
        depth = (depth + opens).saturating_sub(closes);
    }
    out
}

#[test]
fn records_declarations_are_generated() {
    let cfg = Config::new().with_large_int("number");
    // In the order a reader meets them: messages, the view, episodes,
    // facts and entities, traces and fades, recall, calls' outcomes.
    let decls = [
        decl::<Role>(&cfg),
        decl::<ToolCall>(&cfg),
        decl::<Message>(&cfg),
        decl::<ItemKind>(&cfg),
        decl::<ViewItem>(&cfg),
        decl::<View>(&cfg),
        decl::<EpisodeState>(&cfg),
        decl::<StateChange>(&cfg),
        decl::<NoteFailure>(&cfg),
        decl::<Episode>(&cfg),
        decl::<EpisodeInfo>(&cfg),
        decl::<FactKind>(&cfg),
        decl::<Restatement>(&cfg),
        decl::<Retirement>(&cfg),
        decl::<Fact>(&cfg),
        decl::<Remembered>(&cfg),
        decl::<HistoryEntry>(&cfg),
        decl::<FactHistory>(&cfg),
        decl::<Page<()>>(&cfg),
        decl::<Resolution>(&cfg),
        decl::<Alias>(&cfg),
        decl::<Entity>(&cfg),
        decl::<Erased>(&cfg),
        decl::<TraceCause>(&cfg),
        decl::<Trace>(&cfg),
        decl::<FadeReason>(&cfg),
        decl::<Fade>(&cfg),
        decl::<Item>(&cfg),
        decl::<List>(&cfg),
        decl::<Hit>(&cfg),
        decl::<Judgment>(&cfg),
        decl::<Recalled>(&cfg),
        decl::<Distillation>(&cfg),
        decl::<RecallBlock>(&cfg),
        decl::<Passage>(&cfg),
        decl::<SearchHit>(&cfg),
        decl::<Task>(&cfg),
        decl::<Degraded>(&cfg),
        decl::<LastError>(&cfg),
        decl::<Health>(&cfg),
        decl::<Added>(&cfg),
        decl::<Maintained>(&cfg),
        decl::<Pending>(&cfg),
        decl::<NoteOutcome>(&cfg),
        decl::<Batch>(&cfg),
        decl::<ThreadInfo>(&cfg),
        decl::<Stats>(&cfg),
        decl::<Move>(&cfg),
        decl::<EpisodeExplanation>(&cfg),
        decl::<FactExplanation>(&cfg),
        decl::<MessageExplanation>(&cfg),
        decl::<RecalledItemExplanation>(&cfg),
        decl::<RecallExplanation>(&cfg),
    ];
    let mut text = String::from(HEADER);
    for d in decls {
        text.push('\n');
        text.push_str(&d);
    }
    let out = std::env::var_os("ENGRAM_TYPES_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("js/types/records.d.ts"));
    std::fs::write(&out, text).unwrap();
}
