//! Export and import: the memory as one versioned JSON text, whole or in
//! parts.

use crate::base::error::{Error, Result};
use crate::base::host::{Clock, Model, Store};
use crate::memory::handle::Memory;
use crate::store;

impl<S: Store, M: Model, C: Clock> Memory<S, M, C> {
    /// The whole memory as JSON (every log entry), for backup or moving.
    pub async fn export(&mut self) -> Result<String> {
        self.sync().await?;
        if let Some(log) = self.salvage.as_ref().and_then(|s| s.log.as_ref()) {
            return Ok(store::export::export_entries(log.clone()));
        }
        store::export::export(&self.store, &self.pos).await
    }

    /// One part of the export, for memories whose export is too large to
    /// hold as one text (a JavaScript string stops at about 512 MiB; a
    /// wasm guest's memory at 4 GiB): start with no cursor, then pass each
    /// part's `next` until it is none. Each part holds whole log entries,
    /// up to about `max_bytes` of text (at least one entry; `max_bytes` at
    /// least [`store::export::EXPORT_PART_MIN`]). Joined in order, the parts are
    /// byte for byte what [`Memory::export`] returned when the export
    /// began: entries committed meanwhile are left for a later export. A
    /// cursor that does not fit this memory's log, or one from before an
    /// erasure of this memory or before its namespace was destroyed and
    /// written anew, is `InvalidInput`: start the export again.
    pub async fn export_part(
        &mut self,
        cursor: Option<store::export::ExportCursor>,
        max_bytes: usize,
    ) -> Result<store::export::ExportPart> {
        self.sync().await?;
        if let Some(log) = self.salvage.as_ref().and_then(|s| s.log.as_ref()) {
            return store::export::export_part_of(log, cursor, max_bytes);
        }
        store::export::export_part(&self.store, &self.pos, cursor, max_bytes).await
    }

    /// Adds `text` to an export being loaded in pieces (for exports too
    /// large to pass as one text): the pieces, joined in order, are the
    /// export, cut anywhere; [`Memory::import_finish`] loads them. Nothing
    /// is parsed or written before that.
    pub fn import_piece(&mut self, text: &str) -> Result<()> {
        self.writable()?;
        self.import_pieces.push_str(text);
        Ok(())
    }

    /// Loads the pieces given to [`Memory::import_piece`] as one export
    /// ([`Memory::import`]), and forgets them whether or not it succeeds
    /// ([`Memory::import_discard`] forgets them without loading).
    pub async fn import_finish(&mut self) -> Result<()> {
        let json = std::mem::take(&mut self.import_pieces);
        self.import_whole(&json).await
    }

    /// Forgets the pieces given to [`Memory::import_piece`] (a source that
    /// failed half-way); how many bytes were forgotten.
    pub fn import_discard(&mut self) -> usize {
        std::mem::take(&mut self.import_pieces).len()
    }

    /// Loads an export into this memory, which must be empty. The export is
    /// checked fully before anything is written. Refused while an import in
    /// pieces is under way ([`Memory::import_finish`] or
    /// [`Memory::import_discard`] ends one).
    pub async fn import(&mut self, json: &str) -> Result<()> {
        if !self.import_pieces.is_empty() {
            return Err(Error::invalid(format!(
                "an import in pieces is under way ({} bytes given): finish it (import_finish) or drop it (import_discard) first",
                self.import_pieces.len()
            )));
        }
        self.import_whole(json).await
    }

    async fn import_whole(&mut self, json: &str) -> Result<()> {
        self.writable()?;
        // A file's byte-order mark, as a JS TextDecoder drops it.
        let json = json.strip_prefix('\u{feff}').unwrap_or(json);
        let (state, log) = store::export::parse_export(json)?;
        store::export::check_import(
            &state,
            |t| self.model.count_tokens(t),
            self.config.ceiling_tokens,
        )?;
        self.sync().await?;
        let mut pos = self.pos.clone();
        store::export::import(&self.store, &mut pos, log, self.config.snapshot_every).await?;
        self.state = state;
        self.pos = pos;
        self.save_graphs().await;
        Ok(())
    }
}
