//! The writing half: whole lines only, whatever is cancelled.
//!
//! A line is queued whole under the writer's lock and drained from there,
//! so a write given up part way through is finished by the next one before
//! that one adds its own: no two lines ever interleave on the wire, and
//! none is written twice.

use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The sink and the bytes queued for it.
pub(super) struct Writer<W> {
    sink: W,
    queued: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    pub(super) fn new(sink: W) -> Self {
        Self {
            sink,
            queued: Vec::new(),
        }
    }

    /// Writes `line` (which ends in a newline) whole: what a cancelled
    /// write left goes out first, then `line` is queued (and `queued`
    /// told so) and written out. Cancelled before `queued` runs, nothing of
    /// `line` was taken; after, the next write or the close finishes it.
    pub(super) async fn write_line(
        &mut self,
        line: &[u8],
        queued: impl FnOnce(),
    ) -> std::io::Result<()> {
        self.drain().await?;
        self.queued.extend_from_slice(line);
        queued();
        self.drain().await
    }

    /// Writes out what is queued and flushes. Cancel-safe: bytes leave the
    /// queue only once written.
    pub(super) async fn drain(&mut self) -> std::io::Result<()> {
        while !self.queued.is_empty() {
            let written = self.sink.write(&self.queued).await?;
            if written == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.queued.drain(..written);
        }
        self.sink.flush().await
    }

    /// Ends the stream once what is queued is out.
    pub(super) async fn shut(&mut self) -> std::io::Result<()> {
        self.drain().await?;
        self.sink.shutdown().await
    }
}
